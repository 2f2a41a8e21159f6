/**
 * A rolling change of SERVICE_MASTER_KEY K1 → K2 on a two-node cluster (issue 32 item 1; the
 * runbook in docs/security.md): at every step of the roll the two nodes serve side by side on
 * different keys, and every API key works on both, an actor request made by either edge is
 * served by whichever node owns its install (both directions: the installs cover every shard,
 * each node owns some), a Slack event taken by either edge is stored by the other's consumer,
 * and an emit and the install's health work from both. Steps: both on K1; one rolled to K2 with
 * K1 previous; both rolled; `keys rotate`; one with K1 dropped; both. An API key hashed the old
 * way (an HMAC under K1) and never used during the roll still works after K1 is gone.
 *
 * All of it under load (rotation-load.ts): from the first step to the last, signed Slack
 * events and API calls (one of the two keys hashed the old way) go through both edges in
 * turn, a node taken out of the rotation before it is stopped, as a balancer drains it.
 * Every answer is 2xx and every acknowledged event is in the graph exactly once.
 *
 * A database of its own: `keys rotate` rewrites every credential of the database it is
 * pointed at, which must not touch the other test files' rows.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeSlack, messageEvent, nextTs, type FakeChannel, type FakeTeam } from 'connector-service/testing';
import { EVENTS_PATH } from '../../src/edge/routes/chatapp/events.js';
import { installKey, shardOf } from '../../src/runtime/names.js';
import { API_SCOPES } from '../../src/api-scopes.js';
import { apiKeyHashKey, generateApiKey, keyVersionOf, legacyApiKeyHash } from '../../src/store/credential-cipher.js';
import { createPool } from '../../src/store/db.js';
import { migrate } from '../../src/store/migrate.js';
import { createTenant } from '../../src/store/tenants.js';
import { allEvents, chatEnv, emit, installOk, json, type ChatStack, type Tenant } from '../support/slack-harness.js';
import { until } from '../support/until.js';
import { runCli } from '../support/cli.js';
import { TEST_MASTER_KEY, freshNamespace, testAdminDatabaseUrl } from '../support/env.js';
import { cleanNamespace, startTestNode, type TestNode } from '../support/node.js';
import { createTempDatabase, type TempDatabase } from '../support/migrate-temp-db.js';
import { startRotationLoad, type RotationLoad } from '../support/rotation-load.js';

const K1 = TEST_MASTER_KEY;
const K2 = 'second-master-key-for-rotation-0123456789abcdef';
const SHARDS = 4;
const ON_K1 = { SERVICE_MASTER_KEY: K1 };
const ROLLED = { SERVICE_MASTER_KEY: K2, SERVICE_MASTER_KEY_PREVIOUS: K1 };
const ON_K2 = { SERVICE_MASTER_KEY: K2 };
/** Events and API calls a second each, through the edges in turn (a 2-CPU machine runs both nodes too). */
const LOAD_PER_S = 4;

let db: TempDatabase;
let pool: ReturnType<typeof createPool>;
let slack: FakeSlack;
const namespace = freshNamespace('rotate');
const running: TestNode[] = [];

beforeAll(async () => {
  db = await createTempDatabase(testAdminDatabaseUrl(), 'rotate');
  pool = createPool(db.url, { max: 2 });
  await migrate(pool);
  slack = await new FakeSlack().start();
});
afterAll(async () => {
  await load?.stop();
  for (const n of [...running]) await stopNode(n);
  await cleanNamespace(namespace);
  await slack?.close();
  await pool?.end();
  await db?.drop();
});

let started = 0;
async function startNode(keys: Record<string, string>): Promise<TestNode> {
  const env = { ...chatEnv(slack), DATABASE_URL: db.url, SERVICE_NAMESPACE: namespace, SERVICE_SHARDS: String(SHARDS) };
  // Both nodes run in this process: each needs its own id to get its share of the shards.
  const node = await startTestNode({ ...env, ...keys, NODE_ID: `rotate-${++started}` });
  running.push(node);
  return node;
}
async function stopNode(n: TestNode): Promise<void> {
  running.splice(running.indexOf(n), 1);
  await n.node.stop();
  await n.pool.end();
}
let load: RotationLoad | null = null;
/** Replaces `n` by a node on `keys` (the roll of one node), taken out of the load's rotation first. */
async function roll(n: TestNode, keys: Record<string, string>): Promise<TestNode> {
  await load?.drain(n);
  await stopNode(n);
  const next = await startNode(keys);
  load?.serve(next);
  return next;
}

/** A key made before SHA-256: an HMAC under K1, as the previous release stored it. */
async function oldStyleKey(tenantId: string): Promise<Tenant> {
  const apiKey = generateApiKey();
  await pool.query(
    `INSERT INTO api_keys (key_hash, tenant_id, key_prefix, key_version, scopes) VALUES ($1, $2, $3, $4, $5)`,
    [legacyApiKeyHash(apiKeyHashKey(K1), apiKey), tenantId, apiKey.slice(0, 12), keyVersionOf(K1), API_SCOPES],
  );
  return { tenant_id: tenantId, api_key: apiKey, auth: { authorization: `Bearer ${apiKey}` } };
}

interface Workspace {
  team: FakeTeam;
  channel: FakeChannel;
  installId: string;
}

/** Installs workspaces until their install actors cover every shard. */
async function installsOnEveryShard(node: TestNode, tenant: Tenant): Promise<Workspace[]> {
  const out: Workspace[] = [];
  const covered = new Set<number>();
  for (let i = 0; covered.size < SHARDS && i < 60; i++) {
    const team = slack.addTeam({ name: `Rotating ${i}` });
    const channel = slack.addChannel(team.id, { name: 'general' });
    const { install_id } = await installOk({ slack, node } as ChatStack, tenant, team.id);
    const shard = shardOf(installKey(install_id), SHARDS);
    if (covered.has(shard)) continue;
    covered.add(shard);
    out.push({ team, channel, installId: install_id });
  }
  expect(covered.size).toBe(SHARDS);
  return out;
}

/** Both nodes own shards (so requests cross between them in both directions). */
const balanced = (nodes: TestNode[]) =>
  until('both nodes owning shards', () => nodes.every((n) => (n.node.shards?.owned().length ?? 0) > 0), {
    timeoutMs: 30_000,
  });

let sent = 0;
/** Everything a node made under its keys is accepted by the other, whichever way it goes. */
async function servesAcross(nodes: TestNode[], keys: Tenant[], tenant: Tenant, ws: Workspace[], step: string) {
  await balanced(nodes);
  for (const n of nodes) {
    for (const k of keys) {
      const res = await fetch(`${n.url}/api/v1/connectors/installs`, { headers: k.auth });
      expect(res.status, `${step}: a key on ${n.url}`).toBe(200);
    }
    for (const w of ws) {
      await until(`${step}: health of ${w.installId} through ${n.url}`, async () => {
        const res = await fetch(`${n.url}/api/v1/connectors/installs/${w.installId}/health`, { headers: tenant.auth });
        return res.status === 200 && (await json(res)).status === 'healthy';
      });
      // The channel's bucket holds one emit a second (INTERFACE §8.5): a 429 waits its turn.
      await until(`${step}: emit through ${n.url}`, async () => {
        const out = await emit(n.url, tenant, w.installId, 'chatapp.message', { channel_id: w.channel.id, text: step });
        if (out.status === 429) return false;
        expect(out.status, `${step}: emit through ${n.url}: ${await out.clone().text()}`).toBe(200);
        return true;
      });
      slack.eventsUrl = `${n.url}${EVENTS_PATH}`;
      const msg = { ts: nextTs(), user: 'U1', text: `${step} ${++sent}` };
      expect((await slack.deliver(w.team.id, messageEvent(w.team, w.channel, msg))).status).toBe(200);
      await until(`${step}: event ${msg.text} stored`, async () =>
        (await allEvents(n.url, tenant, w.installId)).some((e) => e.id === `message:${w.channel.id}:${msg.ts}`),
      );
    }
  }
}

describe('a rolling master-key rotation on two nodes', () => {
  it('refuses nothing and loses nothing from K1 to K2, through keys rotate, after K1 is dropped', async () => {
    const busy = await createTenant(pool, K1, 'busy');
    const busyTenant: Tenant = { ...busy, auth: { authorization: `Bearer ${busy.api_key}` } };
    const idleTenant = await createTenant(pool, K1, 'idle');
    // Made before the nodes start, as a key of the previous release would be.
    const idle = await oldStyleKey(idleTenant.tenant_id);
    const used = await oldStyleKey(busy.tenant_id);

    let a = await startNode(ON_K1);
    let b = await startNode(ON_K1);
    const ws = await installsOnEveryShard(a, busyTenant);
    // From here to the end, signed events and API calls keep coming through both edges.
    load = startRotationLoad({ slack, targets: ws, keys: [busyTenant.auth, used.auth], perS: LOAD_PER_S });
    load.serve(a);
    load.serve(b);
    await servesAcross([a, b], [busyTenant, used], busyTenant, ws, 'both on K1');

    b = await roll(b, ROLLED);
    await servesAcross([a, b], [busyTenant, used], busyTenant, ws, 'one rolled');
    a = await roll(a, ROLLED);
    await servesAcross([a, b], [busyTenant, used], busyTenant, ws, 'both rolled');

    const rotateEnv = { DATABASE_URL: db.url, ...ROLLED };
    const rotated = await runCli(['keys', 'rotate'], rotateEnv);
    expect(rotated.code, rotated.stderr).toBe(0);
    expect(rotated.stderr).toContain('1 API key(s) are still hashed the old way');
    const again = await runCli(['keys', 'rotate'], rotateEnv);
    expect(JSON.parse(again.stdout)).toEqual({ reencrypted: 0 });
    const wrapped = await pool.query<{ master_version: number }>('SELECT master_version FROM data_keys');
    expect(wrapped.rows.every((r) => r.master_version === keyVersionOf(K2))).toBe(true);

    b = await roll(b, ON_K2);
    await servesAcross([a, b], [busyTenant, used], busyTenant, ws, 'one without K1');
    a = await roll(a, ON_K2);
    await servesAcross([a, b], [busyTenant, used], busyTenant, ws, 'both on K2');

    // Under load: every answer 2xx, every event that was acknowledged in the graph exactly once.
    // The load runs at a fixed rate, so how much it sent depends on how long the steps took: on a fast
    // machine it is given the time to reach its volume (still on both K2 nodes) before it stops.
    const volume = load;
    await until(
      'the load to have sent over 50 events and had over 50 API calls answered',
      () => volume.sent.length > 50 && volume.apiOk() > 50,
      { timeoutMs: 30_000 },
    );
    await load.stop();
    expect(load.failures).toEqual([]);
    expect(load.sent.length).toBeGreaterThan(50);
    expect(load.apiOk()).toBeGreaterThan(50);
    const wanted = load.sent.map((e) => e.externalId);
    const counts = async () =>
      (
        await pool.query<{ external_id: string; n: number }>(
          `SELECT external_id, count(*)::int AS n FROM graph_nodes
            WHERE kind = 'chat.message' AND external_id = ANY($1) GROUP BY external_id`,
          [wanted],
        )
      ).rows;
    await until('every event of the load in the graph', async () => (await counts()).length === wanted.length, {
      timeoutMs: 60_000,
    });
    expect((await counts()).filter((r) => r.n !== 1)).toEqual([]);

    // The key nobody used during the roll: still valid on both nodes, now hashed with SHA-256.
    for (const n of [a, b]) {
      expect((await fetch(`${n.url}/api/v1/connectors/installs`, { headers: idle.auth })).status).toBe(200);
    }
    const versions = await pool.query<{ key_version: number }>('SELECT key_version FROM api_keys');
    expect(versions.rows.every((r) => r.key_version === 0)).toBe(true);
  }, 600_000);
});
