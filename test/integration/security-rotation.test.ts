/**
 * Master-key rotation K1 → K2 with nodes serving throughout (INTERFACE §9.1, §9.2; the
 * runbook in the README "Security model"): a node on K1; a rolling restart onto K2 with
 * K1 in SERVICE_MASTER_KEY_PREVIOUS, where credentials and API keys made under K1 keep
 * working (a used key is re-hashed on the spot); `keys rotate` while that node serves
 * (idempotent); then K1 removed, and everything still works.
 *
 * A database of its own: `keys rotate` rewrites every credential of the database it is
 * pointed at, which must not touch the other test files' rows.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keyVersionOf } from '../../src/store/credential-cipher.js';
import { createPool } from '../../src/store/db.js';
import { migrate } from '../../src/store/migrate.js';
import { createTenant } from '../../src/store/tenants.js';
import { chatEnv, emit, installOk, json, type Tenant } from '../support/slack-harness.js';
import { until } from '../support/until.js';
import { FakeSlack } from 'connector-service/testing';
import { runCli } from '../support/cli.js';
import { TEST_MASTER_KEY, freshNamespace, testAdminDatabaseUrl } from '../support/env.js';
import { cleanNamespace, startTestNode, type TestNode } from '../support/node.js';
import { createTempDatabase, type TempDatabase } from '../support/migrate-temp-db.js';

const K1 = TEST_MASTER_KEY;
const K2 = 'second-master-key-for-rotation-0123456789abcdef';

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
  for (const n of running) await stopNode(n);
  await cleanNamespace(namespace);
  await slack?.close();
  await pool?.end();
  await db?.drop();
});

async function startNode(keys: Record<string, string>): Promise<TestNode> {
  const node = await startTestNode({ ...chatEnv(slack), DATABASE_URL: db.url, SERVICE_NAMESPACE: namespace, ...keys });
  running.push(node);
  return node;
}
/** Stops one node of the cluster without cleaning the shared namespace. */
async function stopNode(n: TestNode): Promise<void> {
  running.splice(running.indexOf(n), 1);
  await n.node.stop();
  await n.pool.end();
}

const withAuth = (t: { tenant_id: string; api_key: string }): Tenant => ({
  ...t,
  auth: { authorization: `Bearer ${t.api_key}` },
});
const status = async (n: TestNode, t: Tenant) =>
  (await fetch(`${n.url}/api/v1/connectors/installs`, { headers: t.auth })).status;
const healthy = (n: TestNode, t: Tenant, installId: string) =>
  until(
    'the install healthy (its bot token decrypted and accepted upstream)',
    async () => {
      const res = await fetch(`${n.url}/api/v1/connectors/installs/${installId}/health`, { headers: t.auth });
      return res.status === 200 && (await json(res)).status === 'healthy';
    },
    { timeoutMs: 20_000 },
  );
const credentialVersion = async (installId: string) =>
  (await pool.query('SELECT key_version FROM credentials WHERE install_id = $1', [installId])).rows[0].key_version;
const keyVersion = async (tenantId: string) =>
  (await pool.query('SELECT key_version FROM api_keys WHERE tenant_id = $1', [tenantId])).rows[0].key_version;

describe('master key rotation', () => {
  it('keeps credentials and API keys working from K1 to K2, through keys rotate, after K1 is removed', async () => {
    // Phase 1: K1 only.
    const a = await startNode({ SERVICE_MASTER_KEY: K1 });
    const busy = withAuth(await createTenant(pool, K1, 'busy'));
    const idle = withAuth(await createTenant(pool, K1, 'idle'));
    const team = slack.addTeam({ name: 'Rotating' });
    const channel = slack.addChannel(team.id, { name: 'general' });
    const { install_id } = await installOk({ slack, node: a, stop: async () => {} }, busy, team.id);
    await healthy(a, busy, install_id);
    expect(await credentialVersion(install_id)).toBe(keyVersionOf(K1));

    // Phase 2: rolling restart onto K2, K1 still accepted.
    const b = await startNode({ SERVICE_MASTER_KEY: K2, SERVICE_MASTER_KEY_PREVIOUS: K1 });
    await stopNode(a);
    expect(await status(b, busy)).toBe(200);
    // Used under K2: re-hashed at once. The idle tenant's key waits for its next use.
    expect(await keyVersion(busy.tenant_id)).toBe(keyVersionOf(K2));
    expect(await keyVersion(idle.tenant_id)).toBe(keyVersionOf(K1));
    await healthy(b, busy, install_id);
    const sent = await emit(b.url, busy, install_id, 'chatapp.message', {
      channel_id: channel.id,
      text: 'during rotation',
    });
    expect(sent.status, await sent.clone().text()).toBe(200);

    // keys rotate while b serves: re-encrypts the one credential, then finds nothing left.
    const rotateEnv = { DATABASE_URL: db.url, SERVICE_MASTER_KEY: K2, SERVICE_MASTER_KEY_PREVIOUS: K1 };
    const first = await runCli(['keys', 'rotate'], rotateEnv);
    expect(first.code, first.stderr).toBe(0);
    expect(JSON.parse(first.stdout)).toEqual({ reencrypted: 1 });
    expect(first.stderr).toContain('1 API key(s)');
    expect(await credentialVersion(install_id)).toBe(keyVersionOf(K2));
    await healthy(b, busy, install_id);
    const again = await runCli(['keys', 'rotate'], rotateEnv);
    expect(JSON.parse(again.stdout)).toEqual({ reencrypted: 0 });
    expect(await status(b, idle)).toBe(200);
    expect(await keyVersion(idle.tenant_id)).toBe(keyVersionOf(K2));
    const done = await runCli(['keys', 'rotate'], rotateEnv);
    expect(JSON.parse(done.stdout)).toEqual({ reencrypted: 0 });
    expect(done.stderr).toBe('');

    // Phase 3: K1 removed everywhere.
    const c = await startNode({ SERVICE_MASTER_KEY: K2 });
    await stopNode(b);
    expect(await status(c, busy)).toBe(200);
    expect(await status(c, idle)).toBe(200);
    await healthy(c, busy, install_id);
    const after = await emit(c.url, busy, install_id, 'chatapp.message', {
      channel_id: channel.id,
      text: 'after rotation',
    });
    expect(after.status, await after.clone().text()).toBe(200);
  }, 240_000);
});
