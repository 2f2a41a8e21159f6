/**
 * The audit log (INTERFACE §10.5): an entry for each audited action of the tenant (the
 * install, emits that went through and that were refused, a node action, a dead-letter
 * replay, the uninstall), with the request id of the call that made it, newest first and
 * paged; another tenant sees none of them; the service's own login cannot change or delete
 * an entry. Every audited action that is done has exactly one `ok` entry with its request id
 * and key id (webhook changes, export, erase, node actions, emits, API keys made and revoked
 * by the CLI), committed with the action: an entry that cannot be written undoes the action,
 * and a refused one leaves no `ok` entry.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FakeChannel, FakeTeam } from 'connector-service/testing';
import { messageEvent, nextTs } from 'connector-service/testing';
import { runCli } from '../support/cli.js';
import { TEST_MASTER_KEY, testAppDatabaseUrl, testDatabaseUrl } from '../support/env.js';
import { installOk, json, startChatStack, type ChatStack, type Tenant } from '../support/slack-harness.js';
import { scrapeSample } from '../support/metrics.js';
import { until } from '../support/until.js';

let s: ChatStack;
let team: FakeTeam;
let ch: FakeChannel;
let tenant: Tenant;
let other: Tenant;
let installId: string;

beforeAll(async () => {
  // Webhooks to a loopback URL are allowed, as `dev` allows them.
  s = await startChatStack({ SERVICE_WEBHOOKS_ALLOW_HTTP: '1', SERVICE_WEBHOOKS_ALLOW_PRIVATE: '1' });
  team = s.slack.addTeam();
  ch = s.slack.addChannel(team.id, { type: 'channel' });
  tenant = await s.node.tenant('audited');
  other = await s.node.tenant('other');
  installId = (await installOk(s, tenant, team.id)).install_id;
});
afterAll(() => s?.stop());

interface Entry {
  id: string;
  at: string;
  action: string;
  key_id: string | null;
  request_id: string | null;
  target: string | null;
  outcome: string;
}

const call = (method: string, path: string, requestId: string, body?: unknown) =>
  fetch(`${s.node.url}${path}`, {
    method,
    headers: {
      ...tenant.auth,
      'x-request-id': requestId,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });

async function entries(t: Tenant, query = ''): Promise<{ entries: Entry[]; next_cursor: string | null }> {
  const r = await fetch(`${s.node.url}/api/v1/audit${query}`, { headers: t.auth });
  expect(r.status).toBe(200);
  return json(r);
}

describe('GET /api/v1/audit', () => {
  it('records every audited action with its request id and outcome, newest first', async () => {
    const rid = (name: string) => `audit-${name}-${randomUUID().slice(0, 8)}`;
    const ids = { ok: rid('emit'), bad: rid('bad'), act: rid('act'), replay: rid('replay'), gone: rid('uninstall') };
    const emitPath = `/api/v1/connectors/installs/${installId}/emit`;
    const sent = await call('POST', emitPath, ids.ok, {
      kind: 'chatapp.message',
      body: { channel_id: ch.id, text: 'hi' },
    });
    expect(sent.status).toBe(200);
    const refused = await call('POST', emitPath, ids.bad, { kind: 'chatapp.nope', body: {} });
    expect(refused.status).toBe(400);
    const node = randomUUID();
    expect(
      (await call('POST', `/api/v1/graph/nodes/${node}/actions`, ids.act, { action: 'react', name: 'x' })).status,
    ).toBe(404);
    expect((await call('POST', '/api/v1/dead-letters/999999999/replay', ids.replay)).status).toBe(404);
    expect((await call('DELETE', `/api/v1/connectors/installs/${installId}`, ids.gone)).status).toBe(200);

    const { entries: got } = await entries(tenant);
    const byRequest = new Map(got.map((e) => [e.request_id, e]));
    expect(byRequest.get(ids.ok)).toMatchObject({
      action: 'emit',
      target: `install/${installId} chatapp.message`,
      outcome: 'ok',
    });
    expect(byRequest.get(ids.bad)).toMatchObject({ action: 'emit', outcome: 'bad_config' });
    expect(byRequest.get(ids.act)).toMatchObject({
      action: 'node_action',
      target: `node/${node}`,
      outcome: 'not_found',
    });
    expect(byRequest.get(ids.replay)).toMatchObject({
      action: 'dead_letter_replay',
      target: 'dead-letter/999999999',
      outcome: 'not_found',
    });
    expect(byRequest.get(ids.gone)).toMatchObject({
      action: 'uninstall',
      target: `install/${installId}`,
      outcome: 'ok',
    });
    // The OAuth install: a browser's callback, no key and no request of the tenant's.
    expect(got.find((e) => e.action === 'install')).toMatchObject({
      target: `install/${installId}`,
      key_id: null,
      outcome: 'ok',
    });
    // Newest first: the uninstall, then the replay ... the install last.
    expect(got.map((e) => e.request_id).slice(0, 5)).toEqual([ids.gone, ids.replay, ids.act, ids.bad, ids.ok]);
    for (const e of got) expect(e.at).toMatch(/^\d{4}-\d\d-\d\dT.*Z$/);

    // Paged by cursor, and the other tenant sees nothing of it.
    const first = await entries(tenant, '?limit=2');
    expect(first.entries.map((e) => e.id)).toEqual(got.slice(0, 2).map((e) => e.id));
    const second = await entries(tenant, `?limit=2&cursor=${first.next_cursor}`);
    expect(second.entries.map((e) => e.id)).toEqual(got.slice(2, 4).map((e) => e.id));
    // Its only entry is its first key's, made with the tenant (an operator's: no key id).
    expect((await entries(other)).entries).toEqual([
      expect.objectContaining({ action: 'api_key_create', key_id: null, outcome: 'ok' }),
    ]);
    expect((await fetch(`${s.node.url}/api/v1/audit?cursor=x`, { headers: tenant.auth })).status).toBe(400);
    expect((await fetch(`${s.node.url}/api/v1/audit`)).status).toBe(401);
  });

  it("is append-only: the service's login may insert and read, never update or delete", async () => {
    const app = new pg.Client({ connectionString: testAppDatabaseUrl() });
    await app.connect();
    try {
      const { rows } = await app.query<{ n: string }>('SELECT count(*) AS n FROM audit_log');
      expect(Number(rows[0]!.n)).toBeGreaterThan(0);
      for (const sql of ["UPDATE audit_log SET outcome = 'forged'", 'DELETE FROM audit_log', 'TRUNCATE audit_log']) {
        await expect(app.query(sql), sql).rejects.toMatchObject({ code: '42501' });
      }
    } finally {
      await app.end();
    }
  });
});

/** The tenant's entries of one request (the API lists at most 200 a page; these tenants have fewer). */
async function entriesOf(t: Tenant, requestId: string): Promise<Entry[]> {
  return (await entries(t, '?limit=200')).entries.filter((e) => e.request_id === requestId);
}

async function keyIdOf(t: Tenant): Promise<string> {
  const { rows } = await s.node.pool.query<{ key_id: string }>(
    'SELECT key_id FROM api_keys WHERE tenant_id = $1 ORDER BY created_at LIMIT 1',
    [t.tenant_id],
  );
  return rows[0]!.key_id;
}

const cliEnv = () => ({ DATABASE_URL: testDatabaseUrl(), SERVICE_MASTER_KEY: TEST_MASTER_KEY });

/**
 * As if the audit log's INSERT failed (a full disk, a constraint), for `t`'s entries only: a
 * trigger on the table, as its owner. Returns what drops it.
 */
async function refuseEntriesOf(t: Tenant): Promise<() => Promise<void>> {
  const owner = new pg.Client({ connectionString: testDatabaseUrl() });
  await owner.connect();
  const name = `audit_refused_${t.tenant_id.replace(/-/g, '')}`;
  await owner.query(
    `CREATE OR REPLACE FUNCTION audit_refused() RETURNS trigger LANGUAGE plpgsql AS $$
     BEGIN RAISE EXCEPTION 'audit entry refused for the test'; END $$`,
  );
  await owner.query(
    `CREATE TRIGGER ${name} BEFORE INSERT ON audit_log FOR EACH ROW
     WHEN (NEW.tenant_id = '${t.tenant_id}'::uuid) EXECUTE FUNCTION audit_refused()`,
  );
  return async () => {
    await owner.query(`DROP TRIGGER IF EXISTS ${name} ON audit_log`);
    await owner.end();
  };
}

describe('audit entries commit with their action', () => {
  it('gives every audited action that is done one ok entry with its request id and key id', async () => {
    const t = await s.node.tenant('every-action');
    const keyId = await keyIdOf(t);
    const as = (method: string, path: string, requestId: string, body?: unknown) =>
      fetch(`${s.node.url}${path}`, {
        method,
        headers: {
          ...t.auth,
          'x-request-id': requestId,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    const team2 = s.slack.addTeam();
    const ch2 = s.slack.addChannel(team2.id, { type: 'channel' });
    // The emit goes to a channel of its own: the node action's channel allows one write a second.
    const ch3 = s.slack.addChannel(team2.id, { type: 'channel' });
    const install = (await installOk(s, t, team2.id)).install_id;
    const msg = { ts: nextTs(), user: 'U0AUDIT', text: 'audited message' };
    ch2.messages.push(msg); // in Slack's history too, so a reply in its thread is accepted
    expect((await s.slack.deliver(team2.id, messageEvent(team2, ch2, msg))).status).toBe(200);
    const node = await until(
      'the message node',
      async () => {
        const r = await as('GET', `/api/v1/graph/nodes?kind=chat.message&install_id=${install}`, 'audit-read');
        const nodes = ((await json(r)) as { nodes: Array<{ id: string }> }).nodes;
        return nodes[0]?.id ?? null;
      },
      { timeoutMs: 10_000 },
    );

    const rid = (name: string) => `audit-${name}-${randomUUID().slice(0, 8)}`;
    const done: Array<{ requestId: string; action: string; target: string }> = [];
    const expectOk = async (res: Response, status: number, requestId: string, action: string, target: string) => {
      expect(res.status, `${action} ${await res.clone().text()}`).toBe(status);
      done.push({ requestId, action, target });
      return res;
    };

    let id = rid('hook-create');
    const created = await json(
      await expectOk(
        await as('POST', '/api/v1/webhooks', id, { url: 'http://127.0.0.1:9/hook' }),
        201,
        id,
        'webhook_change',
        '',
      ),
    );
    done[done.length - 1]!.target = `webhook/${created.id}`;
    const hook = `/api/v1/webhooks/${created.id}`;
    id = rid('hook-patch');
    await expectOk(
      await as('PATCH', hook, id, { description: 'audited' }),
      200,
      id,
      'webhook_change',
      `webhook/${created.id}`,
    );
    id = rid('hook-rotate');
    await expectOk(await as('POST', `${hook}/rotate-secret`, id), 200, id, 'webhook_change', `webhook/${created.id}`);
    id = rid('hook-delete');
    await expectOk(await as('DELETE', hook, id), 204, id, 'webhook_change', `webhook/${created.id}`);
    id = rid('emit');
    await expectOk(
      await as('POST', `/api/v1/connectors/installs/${install}/emit`, id, {
        kind: 'chatapp.message',
        body: { channel_id: ch3.id, text: 'hello' },
      }),
      200,
      id,
      'emit',
      `install/${install} chatapp.message`,
    );
    id = rid('act');
    await expectOk(
      await as('POST', `/api/v1/graph/nodes/${node}/actions`, id, { action: 'reply', text: 'seen' }),
      200,
      id,
      'node_action',
      `node/${node}`,
    );
    id = rid('export');
    const exported = await expectOk(await as('GET', '/api/v1/export', id), 200, id, 'export', 'graph');
    await exported.text();
    id = rid('erase');
    await expectOk(
      await as('POST', '/api/v1/graph/erase', id, { install_id: install, user_external_id: `${team2.id}:U0AUDIT` }),
      200,
      id,
      'erase',
      `install/${install} user/${team2.id}:U0AUDIT`,
    );
    id = rid('uninstall');
    await expectOk(
      await as('DELETE', `/api/v1/connectors/installs/${install}`, id),
      200,
      id,
      'uninstall',
      `install/${install}`,
    );

    for (const d of done) {
      expect(await entriesOf(t, d.requestId), d.requestId).toEqual([
        expect.objectContaining({ action: d.action, target: d.target, key_id: keyId, outcome: 'ok' }),
      ]);
    }
    // Newest first by id as a number (10 after 9, not before).
    const ids = (await entries(t, '?limit=200')).entries.map((e) => Number(e.id));
    expect(ids.length).toBeGreaterThan(10);
    expect(ids).toEqual([...ids].sort((x, y) => y - x));
    // An uninstall of what is uninstalled does nothing: no second entry.
    id = rid('uninstall-again');
    expect((await as('DELETE', `/api/v1/connectors/installs/${install}`, id)).status).toBe(200);
    expect(await entriesOf(t, id)).toEqual([]);
  });

  it('audits API keys made and revoked by the CLI, in the transaction that does it', async () => {
    const t = await s.node.tenant('cli-keys');
    const made = await runCli(['api-keys', 'create', '--tenant', t.tenant_id, '--label', 'audited'], cliEnv());
    expect(made.code, made.stderr).toBe(0);
    const { key_id } = JSON.parse(made.stdout) as { key_id: string };
    const gone = await runCli(['api-keys', 'revoke', '--tenant', t.tenant_id, '--key-id', key_id], cliEnv());
    expect(gone.code, gone.stderr).toBe(0);
    const got = (await entries(t)).entries;
    const ofKey = got.filter((e) => e.target === `api-key/${key_id}`);
    expect(ofKey.map((e) => [e.action, e.key_id, e.outcome])).toEqual([
      ['api_key_revoke', null, 'ok'],
      ['api_key_create', null, 'ok'],
    ]);
    for (const e of ofKey) expect(e.request_id).toMatch(/^cli-[0-9a-f-]{36}$/);
    expect(ofKey[0]!.request_id).not.toBe(ofKey[1]!.request_id);
  });

  it('an entry that cannot be written undoes its action; a committed action always has its entry', async () => {
    const t = await s.node.tenant('atomic');
    const hooks = async () =>
      (await json(await fetch(`${s.node.url}/api/v1/webhooks`, { headers: t.auth }))).webhooks as unknown[];
    const keys = async () =>
      Number(
        (
          await s.node.pool.query<{ n: string }>('SELECT count(*) AS n FROM api_keys WHERE tenant_id = $1', [
            t.tenant_id,
          ])
        ).rows[0]!.n,
      );
    const create = (requestId: string) =>
      fetch(`${s.node.url}/api/v1/webhooks`, {
        method: 'POST',
        headers: { ...t.auth, 'x-request-id': requestId, 'content-type': 'application/json' },
        body: JSON.stringify({ url: 'http://127.0.0.1:9/atomic' }),
      });
    const allow = await refuseEntriesOf(t);
    try {
      const failed = await create('atomic-refused');
      expect(failed.status).toBeGreaterThanOrEqual(500);
      expect(await hooks()).toEqual([]);
      const keysBefore = await keys();
      const cli = await runCli(['api-keys', 'create', '--tenant', t.tenant_id], cliEnv());
      expect(cli.code).not.toBe(0);
      expect(await keys()).toBe(keysBefore);
    } finally {
      await allow();
    }
    expect(await entriesOf(t, 'atomic-refused')).toEqual([]);

    const ok = await create('atomic-ok');
    expect(ok.status).toBe(201);
    const made = await json(ok);
    expect(await hooks()).toHaveLength(1);
    expect(await entriesOf(t, 'atomic-ok')).toEqual([
      expect.objectContaining({ action: 'webhook_change', target: `webhook/${made.id}`, outcome: 'ok' }),
    ]);
  });

  it('an emit whose entry cannot be written stands, and the lost entry is counted', async () => {
    const t = await s.node.tenant('lost-entry');
    const team3 = s.slack.addTeam();
    const ch4 = s.slack.addChannel(team3.id, { type: 'channel' });
    const install = (await installOk(s, t, team3.id)).install_id;
    const lost = () => scrapeSample(s.node.url, 'connector_service_audit_entries_lost_total', { action: 'emit' });
    const before = await lost();
    // The receipt's transaction fails on its entry, and so does the entry written alone after it.
    const allow = await refuseEntriesOf(t);
    try {
      const res = await fetch(`${s.node.url}/api/v1/connectors/installs/${install}/emit`, {
        method: 'POST',
        headers: { ...t.auth, 'x-request-id': 'lost-emit', 'content-type': 'application/json' },
        body: JSON.stringify({ kind: 'chatapp.message', body: { channel_id: ch4.id, text: 'posted all the same' } }),
      });
      expect(res.status, await res.clone().text()).toBe(200);
      expect(s.slack.posted.filter((p) => p.channel === ch4.id)).toEqual([
        expect.objectContaining({ text: 'posted all the same', ts: (await json(res)).provider_id }),
      ]);
      expect((await lost()) - before).toBe(1);
    } finally {
      await allow();
    }
    expect(await entriesOf(t, 'lost-emit')).toEqual([]);
  });
});
