/**
 * The audit log (INTERFACE §10.5): an entry for each audited action of the tenant (the
 * install, emits that went through and that were refused, a node action, a dead-letter
 * replay, the uninstall), with the request id of the call that made it, newest first and
 * paged; another tenant sees none of them; the service's own login cannot change or delete
 * an entry.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FakeChannel, FakeTeam } from 'connector-service/testing';
import { testAppDatabaseUrl } from '../support/env.js';
import { installOk, json, startChatStack, type ChatStack, type Tenant } from '../support/slack-harness.js';

let s: ChatStack;
let team: FakeTeam;
let ch: FakeChannel;
let tenant: Tenant;
let other: Tenant;
let installId: string;

beforeAll(async () => {
  s = await startChatStack();
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
    expect((await entries(other)).entries).toEqual([]);
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
