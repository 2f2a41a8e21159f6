/**
 * The change feed's promise (INTERFACE §10.1) under concurrency: two `connectors serve`
 * nodes commit the events of 8 installs of 2 tenants at once (group commit on both, shards
 * split between them), every ingest transaction held for a random while both before and
 * after it numbered its changes (test triggers), and a follower per tenant reads
 * `next_cursor` after `next_cursor` through either node's edge while they commit. Where a
 * sequence-numbered log would let a follower step over a change that committed late, this
 * one must show every follower the whole feed: every number from 1 to the head, once, in
 * order, the same rows Postgres holds in the end, hence the last change of every node. Again
 * with one node killed with SIGKILL in the middle and another started.
 */
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FeedChange } from '../../src/graph/change-read.js';
import { IngestPublisher } from '../../src/ingest/publish.js';
import { ensureIngestStream } from '../../src/ingest/stream.js';
import { names as makeNames } from '../../src/runtime/names.js';
import { createSeal } from '../../src/runtime/seal.js';
import { createPool } from '../../src/store/db.js';
import { createInstall, setBackfill } from '../../src/store/installs.js';
import { pgBlobPort } from '../../src/store/runtime-ports.js';
import { createTenant } from '../../src/store/tenants.js';
import { TEST_MASTER_KEY, freshNamespace, testDatabaseUrl, testNatsUrl } from '../support/env.js';
import { assertBuilt, kill9, killAll, startServeReady, type ServeProcess } from '../support/failover-cluster.js';
import { chatMessage, type LoadInstall } from '../support/failover-load.js';
import { cleanNamespace } from '../support/node.js';
import { until } from '../support/until.js';

const EVENTS_PER_INSTALL = 250;
const INSTALLS_PER_TENANT = 4;

let pool: ReturnType<typeof createPool>;
let nc: NatsConnection;
const namespaces: string[] = [];

beforeAll(async () => {
  assertBuilt();
  pool = createPool(testDatabaseUrl(), { max: 4 });
  nc = await connect({ servers: testNatsUrl(), name: 'feed-gapless-test' });
  // Random commit delays: before the feed is numbered (each event insert) and after (each change-log insert).
  await pool.query(`
    CREATE OR REPLACE FUNCTION feed_test_delay() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN PERFORM pg_sleep(random() * 0.015); RETURN NULL; END $$;
    CREATE OR REPLACE TRIGGER feed_test_delay_events AFTER INSERT ON events
      FOR EACH STATEMENT EXECUTE FUNCTION feed_test_delay();
    CREATE OR REPLACE TRIGGER feed_test_delay_changes AFTER INSERT ON graph_changes
      FOR EACH STATEMENT EXECUTE FUNCTION feed_test_delay();`);
});

afterAll(async () => {
  await killAll();
  await pool?.query('DROP TRIGGER IF EXISTS feed_test_delay_events ON events').catch(() => undefined);
  await pool?.query('DROP TRIGGER IF EXISTS feed_test_delay_changes ON graph_changes').catch(() => undefined);
  await nc?.close();
  await pool?.end();
  for (const ns of namespaces) await cleanNamespace(ns);
});

interface Tenant {
  tenantId: string;
  auth: { authorization: string };
  installs: LoadInstall[];
}

async function tenantWithInstalls(label: string): Promise<Tenant> {
  const t = await createTenant(pool, TEST_MASTER_KEY, label);
  const installs: LoadInstall[] = [];
  for (let i = 0; i < INSTALLS_PER_TENANT; i++) {
    const teamId = `TFG${label.slice(-6)}${i}${Math.random().toString(36).slice(2, 8)}`.toUpperCase();
    const row = await createInstall(pool, { tenantId: t.tenant_id, connectorId: 'chatapp', externalId: teamId });
    await setBackfill(pool, row.install_id, 'complete');
    installs.push({ installId: row.install_id, tenantId: t.tenant_id, teamId });
  }
  return { tenantId: t.tenant_id, auth: { authorization: `Bearer ${t.api_key}` }, installs };
}

interface Page {
  changes: FeedChange[];
  next_cursor: string;
}

/** Follows the tenant's feed through whichever node answers, until told to stop at the head. */
function follow(t: Tenant, urls: () => string[], done: () => boolean) {
  const seen: FeedChange[] = [];
  let cursor = '0';
  let turn = 0;
  const run = (async () => {
    for (;;) {
      const live = urls();
      const url = live[turn++ % live.length]!;
      const limit = 1 + Math.floor(Math.random() * 300);
      let page: Page | null = null;
      try {
        const res = await fetch(`${url}/api/v1/graph/changes?cursor=${cursor}&limit=${limit}&wait=1`, {
          headers: t.auth,
          signal: AbortSignal.timeout(10_000),
        });
        if (res.status === 200) page = (await res.json()) as Page;
        else if (res.status !== 503) throw new Error(`feed answered ${res.status}: ${await res.text()}`);
      } catch (err) {
        if (err instanceof Error && err.message.startsWith('feed answered')) throw err;
        // A node going down (killed): ask the other one.
      }
      if (page) {
        seen.push(...page.changes);
        cursor = page.next_cursor;
        if (page.changes.length === 0 && done()) return;
      } else await sleep(50);
    }
  })();
  return { seen, run };
}

async function publishAll(publisher: IngestPublisher, installs: LoadInstall[]): Promise<void> {
  await Promise.all(
    installs.map(async (inst) => {
      for (let n = 0; n < EVENTS_PER_INSTALL; n++) {
        await publisher.publish(chatMessage(inst, n));
        if (Math.random() < 0.05) await sleep(Math.random() * 20);
      }
    }),
  );
}

async function run(label: string, killOne: boolean): Promise<void> {
  const namespace = freshNamespace(label);
  namespaces.push(namespace);
  const names = makeNames(namespace);
  await ensureIngestStream(await jetstreamManager(nc), names);
  const publisher = new IngestPublisher({
    seal: createSeal([TEST_MASTER_KEY]),
    js: jetstream(nc),
    names,
    shards: 4,
    blobs: pgBlobPort(pool),
    maxPayload: nc.info!.max_payload,
  });
  const tenants = [await tenantWithInstalls(`${label}-a`), await tenantWithInstalls(`${label}-b`)];
  const installs = tenants.flatMap((t) => t.installs);
  const env = {
    DATABASE_URL: testDatabaseUrl(),
    NATS_URL: testNatsUrl(),
    SERVICE_NAMESPACE: namespace,
    SERVICE_MASTER_KEY: TEST_MASTER_KEY,
    SERVICE_SHARDS: '4',
    SERVICE_LEASE_TTL_S: '3',
    SERVICE_TENANT_RATE_PER_S: '100000',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'info',
  };
  const nodes: ServeProcess[] = [
    await startServeReady(`${label}-1`, env, 20_000),
    await startServeReady(`${label}-2`, env, 20_000),
  ];
  const dead = new Set<ServeProcess>();
  const urls = () => nodes.filter((n) => !dead.has(n)).map((n) => n.url);
  const stored = async () =>
    Number(
      (
        await pool.query<{ n: string }>('SELECT count(*) AS n FROM events WHERE install_id = ANY($1)', [
          installs.map((i) => i.installId),
        ])
      ).rows[0]!.n,
    );
  const total = installs.length * EVENTS_PER_INSTALL;
  let allStored = false;
  const followers = tenants.map((t) => follow(t, urls, () => allStored));

  const publishing = publishAll(publisher, installs);
  if (killOne) {
    await until('a third of the events committed', async () => (await stored()) >= total / 3, {
      timeoutMs: 60_000,
    });
    await kill9(nodes[0]!);
    dead.add(nodes[0]!);
    nodes.push(await startServeReady(`${label}-3`, env, 20_000));
  }
  await publishing;
  await until('every event committed', async () => (await stored()) === total, { timeoutMs: 120_000 });
  allStored = true;
  await Promise.all(followers.map((f) => f.run));

  for (const [i, t] of tenants.entries()) {
    const seen = followers[i]!.seen;
    const rows = await pool.query<{ seq: string; node_id: string; op: string }>(
      'SELECT seq, node_id, op FROM graph_changes WHERE tenant_id = $1 ORDER BY seq',
      [t.tenantId],
    );
    // Every number from 1 to the head, once and in order: nothing stepped over, nothing reordered.
    expect(seen.map((c) => Number(c.cursor))).toEqual(rows.rows.map((_, k) => k + 1));
    expect(seen.map((c) => [c.cursor, c.node_id, c.op])).toEqual(rows.rows.map((r) => [r.seq, r.node_id, r.op]));
    // Every node of the tenant's graph was seen, last as it is now.
    const nodesNow = await pool.query<{ node_id: string }>('SELECT node_id FROM graph_nodes WHERE tenant_id = $1', [
      t.tenantId,
    ]);
    expect(new Set(seen.map((c) => c.node_id))).toEqual(new Set(nodesNow.rows.map((r) => r.node_id)));
    expect(seen.every((c) => t.installs.some((inst) => inst.installId === c.install_id))).toBe(true);
  }
}

describe('integration: the change feed has no gaps under concurrent commits', () => {
  it('two nodes, 8 installs of 2 tenants, random commit delays', { timeout: 240_000 }, async () => {
    await run('fgap', false);
  });

  it('the same with one node killed (SIGKILL) in the middle', { timeout: 240_000 }, async () => {
    await run('fgkill', true);
  });
});
