/**
 * A webhook's delivery actor survives its node (INTERFACE §10.2, ARCHITECTURE "Following the
 * graph"): two `connectors serve` nodes, a tenant with one webhook to a receiver in the test,
 * events committed steadily; the node whose shard lease holds the webhook's actor is killed
 * with SIGKILL mid-stream. The survivor takes the shard over and the deliveries go on: every
 * change of the tenant's feed reaches the receiver, verified with `standardwebhooks`, in feed
 * order, none skipped; a message the dead node had sent but not seen answered may come again,
 * with the same `webhook-id` and the same changes.
 */
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { webhookKey } from '../../src/actors/webhooks/webhook-protocol.js';
import { IngestPublisher } from '../../src/ingest/publish.js';
import { ensureIngestStream } from '../../src/ingest/stream.js';
import { names as makeNames, shardOf } from '../../src/runtime/names.js';
import { createSeal } from '../../src/runtime/seal.js';
import { createPool } from '../../src/store/db.js';
import { createInstall, setBackfill } from '../../src/store/installs.js';
import { pgBlobPort } from '../../src/store/runtime-ports.js';
import { createTenant } from '../../src/store/tenants.js';
import { TEST_MASTER_KEY, freshNamespace, testDatabaseUrl, testNatsUrl } from '../support/env.js';
import { assertBuilt, kill9, killAll, startServeReady, type ServeProcess } from '../support/failover-cluster.js';
import { chatMessage } from '../support/failover-load.js';
import { cleanNamespace } from '../support/node.js';
import { until } from '../support/until.js';
import { startReceiver, type Receiver } from '../support/webhook-receiver.js';

const SHARDS = 4;
const EVENTS = 120;

let pool: ReturnType<typeof createPool>;
let nc: NatsConnection;
let receiver: Receiver;
let namespace: string;

beforeAll(async () => {
  assertBuilt();
  namespace = freshNamespace('whkill');
  pool = createPool(testDatabaseUrl(), { max: 4 });
  nc = await connect({ servers: testNatsUrl(), name: 'webhooks-failover-test' });
  receiver = await startReceiver();
});
afterAll(async () => {
  await killAll();
  await receiver?.close();
  await nc?.close();
  await pool?.end();
  if (namespace) await cleanNamespace(namespace);
});

describe('integration: webhook delivery across kill -9', () => {
  it('moves with its shard and delivers every change once in order', { timeout: 180_000 }, async (ctx) => {
    const names = makeNames(namespace);
    await ensureIngestStream(await jetstreamManager(nc), names);
    const tenant = await createTenant(pool, TEST_MASTER_KEY, 'webhook-failover');
    const teamId = `TWK${namespace.slice(-8)}`.toUpperCase();
    const row = await createInstall(pool, { tenantId: tenant.tenant_id, connectorId: 'chatapp', externalId: teamId });
    await setBackfill(pool, row.install_id, 'complete');
    const inst = { installId: row.install_id, tenantId: tenant.tenant_id, teamId };
    const env = {
      DATABASE_URL: testDatabaseUrl(),
      NATS_URL: testNatsUrl(),
      SERVICE_NAMESPACE: namespace,
      SERVICE_MASTER_KEY: TEST_MASTER_KEY,
      SERVICE_SHARDS: String(SHARDS),
      SERVICE_LEASE_TTL_S: '3',
      SERVICE_WEBHOOKS_ALLOW_HTTP: '1',
      SERVICE_WEBHOOKS_ALLOW_PRIVATE: '1',
      LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'info',
    };
    const nodes: ServeProcess[] = [
      await startServeReady('whk-1', env, 20_000),
      await startServeReady('whk-2', env, 20_000),
    ];
    ctx.onTestFailed(() => {
      for (const n of nodes) process.stderr.write(`--- ${n.nodeId} ---\n${n.logTail()}\n`);
    });
    const made = await fetch(`${nodes[0]!.url}/api/v1/webhooks`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tenant.api_key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url: receiver.url }),
    });
    expect(made.status).toBe(201);
    const { id, secret } = (await made.json()) as { id: string; secret: string };

    const publisher = new IngestPublisher({
      seal: createSeal([TEST_MASTER_KEY]),
      js: jetstream(nc),
      names,
      shards: SHARDS,
      blobs: pgBlobPort(pool),
      maxPayload: nc.info!.max_payload,
    });
    const publishing = (async () => {
      for (let n = 0; n < EVENTS; n++) {
        await publisher.publish(chatMessage(inst, n));
        await sleep(25); // pacing: a steady trickle while the owner changes
      }
    })();
    const delivered = () => receiver.delivered(secret).flatMap((d) => d.changes.map((c) => Number(c.cursor)));
    await until('some changes delivered', () => delivered().length >= 20, { timeoutMs: 60_000 });

    // The node whose lease covers the webhook actor's shard is the one delivering.
    const leases = await new Kvm(jetstream(nc)).open(names.leaseBucket);
    const lease = await leases.get(names.leaseKey(shardOf(webhookKey(id), SHARDS)));
    const ownerId = (JSON.parse(lease!.string()) as { node: string }).node;
    const owner = nodes.find((n) => n.nodeId === ownerId)!;
    expect(owner).toBeDefined();
    await kill9(owner);
    const atKill = delivered().length;
    await publishing;

    const head = async () =>
      Number(
        (
          await pool.query<{ s: string }>('SELECT last_seq AS s FROM tenant_feed WHERE tenant_id = $1', [
            tenant.tenant_id,
          ])
        ).rows[0]?.s ?? 0,
      );
    const stored = async () =>
      Number(
        (await pool.query<{ n: string }>('SELECT count(*) AS n FROM events WHERE install_id = $1', [inst.installId]))
          .rows[0]!.n,
      );
    await until('every event committed', async () => (await stored()) === EVENTS, { timeoutMs: 60_000 });
    const last = await head();
    await until('every change delivered', () => new Set(delivered()).size === last, { timeoutMs: 60_000 });

    // In feed order, nothing skipped: a message repeated after the kill repeats whole, with its id.
    const seen = delivered();
    const firsts = seen.filter((c, i) => seen.indexOf(c) === i);
    expect(firsts).toEqual(Array.from({ length: last }, (_, i) => i + 1));
    const ok = receiver.received.filter((r) => r.status < 300);
    const byId = new Map<string, string>();
    for (const r of ok) {
      const mid = String(r.headers['webhook-id']);
      expect(byId.get(mid) ?? r.body).toBe(r.body);
      byId.set(mid, r.body);
    }
    expect(atKill).toBeLessThan(last);
  });
});
