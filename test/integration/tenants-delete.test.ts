/**
 * `connectors tenants delete` (INTERFACE §10.5): a tenant with an install, ingested messages,
 * a graph, audit entries and a tombstone is deleted: its bot token is revoked at Slack, its key
 * answers 401, and no table that has a `tenant_id` column (enumerated from the catalog, so a
 * table added later is checked too) holds a row of it; no NATS KV entry names its installs or
 * workspaces any more (backfill cursors, rate buckets, summary markers); another tenant keeps
 * everything, its KV entries too.
 */
import { Kvm } from '@nats-io/kv';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { messageDeletedEvent, messageEvent, nextTs, type FakeMessage } from 'connector-service/testing';
import { runCli } from '../support/cli.js';
import { TEST_MASTER_KEY, testDatabaseUrl, testNatsUrl } from '../support/env.js';
import { allEvents, installOk, startChatStack, type ChatStack, type Tenant } from '../support/slack-harness.js';
import { until } from '../support/until.js';

let s: ChatStack;
let gone: Tenant;
let kept: Tenant;
let goneInstall: string;
let keptInstall: string;
const teams: Record<'gone' | 'kept', string> = { gone: '', kept: '' };
let nc: NatsConnection;

beforeAll(async () => {
  s = await startChatStack();
  gone = await s.node.tenant('leaving');
  kept = await s.node.tenant('staying');
  for (const [t, set] of [
    [gone, (id: string) => (goneInstall = id)],
    [kept, (id: string) => (keptInstall = id)],
  ] as const) {
    const team = s.slack.addTeam();
    teams[t === gone ? 'gone' : 'kept'] = team.id;
    const ch = s.slack.addChannel(team.id, { type: 'channel' });
    const id = (await installOk(s, t, team.id)).install_id;
    set(id);
    const m: FakeMessage = { ts: nextTs(), user: 'U0HUMAN', text: 'hello' };
    expect((await s.slack.deliver(team.id, messageEvent(team, ch, m))).status).toBe(200);
    expect((await s.slack.deliver(team.id, messageDeletedEvent(ch, m, nextTs()))).status).toBe(200);
    await until('both events stored', async () => (await allEvents(s.node.url, t, id)).length >= 2, {
      timeoutMs: 10_000,
    });
  }
  // An audited call of the leaving tenant's key.
  const r = await fetch(`${s.node.url}/api/v1/dead-letters/1/replay`, { method: 'POST', headers: gone.auth });
  expect(r.status).toBe(404);
});
afterAll(async () => {
  await nc?.close();
  await s?.stop();
});

/** The keys of one of the node's KV buckets whose last operation is a put. */
async function kvKeys(bucket: 'cursors' | 'dedup'): Promise<string[]> {
  const kv = await new Kvm(nc).open(`${s.node.namespace}_${bucket}`);
  const keys: string[] = [];
  for await (const k of await kv.keys()) keys.push(k);
  return keys.sort();
}

/** Entries as the node's actors leave them under each tenant's names (src/wiring/forget-tenant-nats.ts). */
async function seedKv(): Promise<void> {
  const v = new TextEncoder().encode('{}');
  const cursors = await new Kvm(nc).create(`${s.node.namespace}_cursors`);
  const dedup = await new Kvm(nc).create(`${s.node.namespace}_dedup`);
  for (const [install, team] of [
    [goneInstall, teams.gone],
    [keptInstall, teams.kept],
  ] as const) {
    await cursors.put(`chat-backfill.${install}`, v);
    await dedup.put(`codehost-summary.${install}.6869`, v);
    await dedup.put(`chat-bucket.${team}.C0SEED`, v);
    await dedup.put(`chat-workspace.${team}`, v);
  }
}

/** Rows of the tenant in every table with a tenant_id column. */
async function rowsOf(tenantId: string): Promise<Record<string, number>> {
  const { rows: tables } = await s.node.pool.query<{ table_name: string }>(
    `SELECT c.table_name FROM information_schema.columns c
       JOIN pg_tables t ON t.schemaname = c.table_schema AND t.tablename = c.table_name
      WHERE c.table_schema = 'public' AND c.column_name = 'tenant_id'`,
  );
  const out: Record<string, number> = {};
  for (const { table_name } of tables) {
    const { rows } = await s.node.pool.query<{ n: string }>(
      `SELECT count(*) AS n FROM "${table_name}" WHERE tenant_id = $1`,
      [tenantId],
    );
    if (Number(rows[0]!.n) > 0) out[table_name] = Number(rows[0]!.n);
  }
  return out;
}

describe('connectors tenants delete', () => {
  it('refuses without --confirm repeating the tenant id', async () => {
    const env = { DATABASE_URL: testDatabaseUrl(), SERVICE_MASTER_KEY: TEST_MASTER_KEY };
    const r = await runCli(['tenants', 'delete', '--tenant', gone.tenant_id, '--confirm', kept.tenant_id], env);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--confirm');
  });

  it('deletes every row of the tenant, revokes its key and its bot token, and leaves the other tenant alone', async () => {
    nc = await connect({ servers: testNatsUrl() });
    await seedKv();
    const named = (keys: string[], ...ids: string[]) => keys.filter((k) => ids.some((id) => k.includes(id)));
    const keptKv = named([...(await kvKeys('cursors')), ...(await kvKeys('dedup'))], keptInstall, teams.kept);
    expect(keptKv.length).toBeGreaterThanOrEqual(4);
    const before = await rowsOf(gone.tenant_id);
    expect(Object.keys(before)).toEqual(
      expect.arrayContaining(['tenants', 'api_keys', 'installs', 'events', 'graph_nodes', 'audit_log', 'forgotten']),
    );
    const keptBefore = await rowsOf(kept.tenant_id);
    const revokesBefore = s.slack.callsOf('auth.revoke').length;

    const r = await runCli(['tenants', 'delete', '--tenant', gone.tenant_id, '--confirm', gone.tenant_id], {
      DATABASE_URL: testDatabaseUrl(),
      NATS_URL: testNatsUrl(),
      SERVICE_NAMESPACE: s.node.namespace,
      SERVICE_MASTER_KEY: TEST_MASTER_KEY,
      CHATAPP_API_URL: s.slack.apiUrl,
    });
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as {
      tenant_id: string;
      deleted: Record<string, number>;
      nats: { removed: Record<string, number>; not_removed: string[] };
    };
    expect(out.tenant_id).toBe(gone.tenant_id);
    expect(out.deleted).toMatchObject(before);
    expect(out.nats.not_removed).toEqual([]);
    expect(out.nats.removed[`${s.node.namespace}_dedup`]).toBeGreaterThanOrEqual(3);
    expect(out.nats.removed[`${s.node.namespace}_cursors`]).toBeGreaterThanOrEqual(1);
    // Nothing in KV names the tenant's install or workspace any more; the other tenant's stay.
    const after = [...(await kvKeys('cursors')), ...(await kvKeys('dedup'))];
    expect(named(after, goneInstall, teams.gone)).toEqual([]);
    expect(named(after, keptInstall, teams.kept)).toEqual(expect.arrayContaining(keptKv));

    expect(await rowsOf(gone.tenant_id)).toEqual({});
    expect(await rowsOf(kept.tenant_id)).toEqual(keptBefore);
    expect(s.slack.callsOf('auth.revoke').length).toBe(revokesBefore + 1);
    await until(
      'the key refused',
      async () => (await fetch(`${s.node.url}/api/v1/connectors/installs`, { headers: gone.auth })).status === 401,
      { timeoutMs: 10_000 },
    );
    const mine = await fetch(`${s.node.url}/api/v1/connectors/installs/${keptInstall}`, { headers: kept.auth });
    expect(mine.status).toBe(200);
    expect(goneInstall).not.toBe(keptInstall);
  });
});
