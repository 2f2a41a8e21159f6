/**
 * integration: group commit under kill -9 (ARCHITECTURE "Inbound" 2). One busy install's
 * backlog is committed in batches by a real `connectors serve` node; the node is killed
 * with SIGKILL while batches are committing, a second node takes the shard over, and
 * afterwards every published event is in Postgres exactly once, in publish order, with its
 * graph projection: one message node per event and one `in_channel` edge each. Batches
 * larger than one really happened (the batch-size histogram of the survivor says so).
 */
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureIngestStream } from '../../src/ingest/stream.js';
import { IngestPublisher } from '../../src/ingest/publish.js';
import { names as makeNames, type Names } from '../../src/runtime/names.js';
import { createSeal } from '../../src/runtime/seal.js';
import { createPool } from '../../src/store/db.js';
import { createInstall, setBackfill } from '../../src/store/installs.js';
import { pgBlobPort } from '../../src/store/runtime-ports.js';
import { createTenant } from '../../src/store/tenants.js';
import { TEST_MASTER_KEY, freshNamespace, testDatabaseUrl, testNatsUrl } from '../support/env.js';
import { cleanNamespace } from '../support/node.js';
import { until } from '../support/until.js';
import { assertBuilt, kill9, killAll, startServeReady, type ServeProcess } from '../support/failover-cluster.js';
import { chatMessage, type LoadInstall } from '../support/failover-load.js';

const TOTAL = 3_000;

describe('integration: group commit across kill -9', () => {
  let namespace: string;
  let names: Names;
  let pool: ReturnType<typeof createPool>;
  let nc: NatsConnection;
  const nodes: ServeProcess[] = [];

  beforeAll(async () => {
    assertBuilt();
    namespace = freshNamespace('gck');
    names = makeNames(namespace);
    pool = createPool(testDatabaseUrl(), { max: 4 });
    nc = await connect({ servers: testNatsUrl(), name: 'group-commit-kill-test' });
  });

  afterAll(async () => {
    await killAll();
    await nc?.close();
    await pool?.end();
    if (namespace) await cleanNamespace(namespace);
  });

  it('a node killed mid-batch loses and duplicates nothing, and the order holds', { timeout: 90_000 }, async (ctx) => {
    const tenant = await createTenant(pool, TEST_MASTER_KEY, 'group-commit');
    const teamId = `TGC${namespace.slice(-8)}`;
    const row = await createInstall(pool, { tenantId: tenant.tenant_id, connectorId: 'chatapp', externalId: teamId });
    await setBackfill(pool, row.install_id, 'complete');
    const inst: LoadInstall = { installId: row.install_id, tenantId: tenant.tenant_id, teamId };

    // The whole backlog is in the stream before any node runs: batches are as large as they get.
    await ensureIngestStream(await jetstreamManager(nc), names);
    const seal = createSeal([TEST_MASTER_KEY]);
    const publisher = new IngestPublisher({
      seal,
      js: jetstream(nc),
      names,
      shards: 2,
      blobs: pgBlobPort(pool),
      maxPayload: nc.info!.max_payload,
    });
    const ids: string[] = [];
    for (let n = 0; n < TOTAL; n++) {
      const ev = chatMessage(inst, n);
      ids.push(ev.id);
      await publisher.publish(ev);
    }

    const env = {
      DATABASE_URL: testDatabaseUrl(),
      NATS_URL: testNatsUrl(),
      SERVICE_NAMESPACE: namespace,
      SERVICE_MASTER_KEY: TEST_MASTER_KEY,
      SERVICE_SHARDS: '2',
      SERVICE_LEASE_TTL_S: '3',
      LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'info',
    };
    const stored = async () =>
      Number(
        (await pool.query<{ n: string }>('SELECT count(*) AS n FROM events WHERE install_id = $1', [inst.installId]))
          .rows[0]!.n,
      );
    const first = await startServeReady('gck-a', env, 20_000);
    nodes.push(first);
    ctx.onTestFailed(() => {
      for (const n of nodes) process.stderr.write(`--- ${n.nodeId} ---\n${n.logTail()}\n`);
    });
    const atKill = await until('some batches committed', async () => ((await stored()) >= 200 ? stored() : null), {
      timeoutMs: 30_000,
      everyMs: 5,
    });
    await kill9(first);
    const killedWith = await stored();
    const second = await startServeReady('gck-b', env, 20_000);
    nodes.push(second);
    await until('every event committed', async () => (await stored()) === TOTAL, { timeoutMs: 60_000 });

    // Exactly once, in publish order.
    const rows = await pool.query<{ id: string }>('SELECT id FROM events WHERE install_id = $1 ORDER BY seq', [
      inst.installId,
    ]);
    expect(rows.rows.map((r) => r.id)).toEqual(ids);
    // The projection of each event exactly once: a message node and its in_channel edge.
    const graph = await pool.query<{ nodes: string; edges: string }>(
      `SELECT (SELECT count(*) FROM graph_nodes WHERE tenant_id = $1 AND kind = 'chat.message') AS nodes,
              (SELECT count(*) FROM graph_edges WHERE tenant_id = $1 AND type = 'in_channel') AS edges`,
      [tenant.tenant_id],
    );
    expect(graph.rows[0]).toEqual({ nodes: String(TOTAL), edges: String(TOTAL) });
    // The survivor committed in batches (histogram buckets of the batch size).
    const metrics = await (await fetch(`${second.url}/metrics`)).text();
    const sum = Number(/connector_service_ingest_batch_events_sum (\d+)/.exec(metrics)?.[1] ?? 0);
    const count = Number(/connector_service_ingest_batch_events_count (\d+)/.exec(metrics)?.[1] ?? 0);
    expect(count).toBeGreaterThan(0);
    expect(sum / count).toBeGreaterThan(1);
    process.stdout.write(
      `figures: ${TOTAL} events, killed at ${atKill}-${killedWith} committed; survivor: ${count} transactions, ` +
        `${(sum / count).toFixed(1)} events each on average\n`,
    );
  });
});
