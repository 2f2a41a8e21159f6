import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertEvent } from '../../src/store/events.js';
import { setInstallStatus } from '../../src/store/installs.js';
import { edgeFixture } from '../support/edge.js';

type Fixture = Awaited<ReturnType<typeof edgeFixture>>;
let f: Fixture;
beforeAll(async () => {
  // Answers shaped as the actors' own (the edge sends them through the route's schema).
  f = await edgeFixture(({ key, msg }) => {
    const install_id = key.id[0];
    if (msg.type === 'uninstall') return { install_id, status: 'uninstalled' };
    if (msg.type === 'health')
      return { install_id, connector_id: 'chatapp', status: 'healthy', team_id: 'T1', team: null, bot_user_id: null };
    return { provider_id: '1', kind: msg.kind, install_id, emitted_at: new Date().toISOString() };
  });
});
afterAll(() => f.close());

const TENANT_ROUTES: Array<[string, string]> = [
  ['GET', '/api/v1/connectors'],
  ['GET', '/api/v1/connectors/installs'],
  ['GET', '/api/v1/connectors/installs/00000000-0000-4000-8000-000000000000'],
  ['DELETE', '/api/v1/connectors/installs/00000000-0000-4000-8000-000000000000'],
  ['POST', '/api/v1/connectors/installs/00000000-0000-4000-8000-000000000000/emit'],
  ['GET', '/api/v1/connectors/installs/00000000-0000-4000-8000-000000000000/health'],
  ['GET', '/api/v1/connectors/installs/00000000-0000-4000-8000-000000000000/events'],
];

describe('tenant auth', () => {
  it.each(TENANT_ROUTES)('%s %s: missing, malformed and unknown keys get 401', async (method, url) => {
    for (const headers of [
      {},
      { authorization: 'Basic abc' },
      { authorization: 'Bearer' },
      { authorization: 'Bearer csk_unknown_key_123456' },
    ]) {
      const res = await f.app.inject({
        method: method as 'GET',
        url,
        headers,
        payload: method === 'POST' ? {} : undefined,
      });
      expect(res.statusCode).toBe(401);
      expect(res.json()).toEqual({
        error: { code: 'unauthorized', message: expect.any(String), request_id: expect.any(String) },
      });
    }
  });
});

describe('routes', () => {
  it('lists connectors with install_path for codehost', async () => {
    const t = await f.tenant();
    const res = await f.app.inject({ url: '/api/v1/connectors', headers: t.auth });
    expect(res.statusCode).toBe(200);
    const list = res.json().connectors as Array<Record<string, unknown>>;
    expect(list.map((c) => c.connector_id)).toEqual(['chatapp', 'codehost']);
    expect(list[0]).toMatchObject({ auth_mode: 'oauth2', enabled: false, inbound_transport: 'none' });
    expect(list[1]).toMatchObject({
      auth_mode: 'app_install',
      install_path: '/api/v1/connectors/codehost/admin/install',
    });
  });

  it('lists and gets only the caller tenant installs; foreign and malformed ids are 404', async () => {
    const a = await f.tenant('a');
    const b = await f.tenant('b');
    const mine = await f.install(a.tenant_id, 'chatapp');
    const code = await f.install(a.tenant_id, 'codehost', '42');
    const theirs = await f.install(b.tenant_id, 'chatapp');

    const list = await f.app.inject({ url: '/api/v1/connectors/installs', headers: a.auth });
    expect(list.json().installs.map((i: { install_id: string }) => i.install_id)).toEqual([
      code.install_id,
      mine.install_id,
    ]);
    const onlyChat = await f.app.inject({ url: '/api/v1/connectors/installs?connector_id=chatapp', headers: a.auth });
    expect(onlyChat.json().installs).toHaveLength(1);
    const bad = await f.app.inject({ url: '/api/v1/connectors/installs?connector_id=mail', headers: a.auth });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error.code).toBe('bad_request');

    const one = await f.app.inject({ url: `/api/v1/connectors/installs/${mine.install_id}`, headers: a.auth });
    expect(one.statusCode).toBe(200);
    expect(one.json()).toMatchObject({
      install_id: mine.install_id,
      tenant_id: a.tenant_id,
      connector_id: 'chatapp',
      status: 'active',
      backfill: { state: 'pending' },
    });

    for (const id of [theirs.install_id, '00000000-0000-4000-8000-000000000000', 'not-a-uuid', "1' or '1'='1"]) {
      for (const suffix of ['', '/health', '/events']) {
        const res = await f.app.inject({
          url: `/api/v1/connectors/installs/${encodeURIComponent(id)}${suffix}`,
          headers: a.auth,
        });
        expect(res.statusCode).toBe(404);
        expect(res.json().error.code).toBe('not_found');
      }
      const del = await f.app.inject({
        method: 'DELETE',
        url: `/api/v1/connectors/installs/${encodeURIComponent(id)}`,
        headers: a.auth,
      });
      expect(del.statusCode).toBe(404);
      const emit = await f.app.inject({
        method: 'POST',
        url: `/api/v1/connectors/installs/${encodeURIComponent(id)}/emit`,
        headers: a.auth,
        payload: { kind: 'chatapp.message', body: {} },
      });
      expect(emit.statusCode).toBe(404);
    }
  });

  it('sends emit and health to the install-writes actor, delete to the install actor; answers uninstalled installs itself', async () => {
    const t = await f.tenant();
    const inst = await f.install(t.tenant_id);
    const before = f.asked.length;
    const emit = await f.app.inject({
      method: 'POST',
      url: `/api/v1/connectors/installs/${inst.install_id}/emit`,
      headers: t.auth,
      payload: { kind: 'chatapp.message', body: { channel_id: 'C1', text: 'hi' } },
    });
    expect(emit.statusCode).toBe(200);
    const health = await f.app.inject({
      url: `/api/v1/connectors/installs/${inst.install_id}/health`,
      headers: t.auth,
    });
    expect(health.json()).toMatchObject({ install_id: inst.install_id, status: 'healthy' });
    const del = await f.app.inject({
      method: 'DELETE',
      url: `/api/v1/connectors/installs/${inst.install_id}`,
      headers: t.auth,
    });
    expect(del.statusCode).toBe(200);
    expect(f.asked.slice(before).map((a) => [a.key.kind, a.key.id[0], a.msg.type])).toEqual([
      ['install-writes', inst.install_id, 'emit'],
      ['install-writes', inst.install_id, 'health'],
      ['install', inst.install_id, 'uninstall'],
    ]);

    await setInstallStatus(f.pool, inst.install_id, 'uninstalled');
    const n = f.asked.length;
    const again = await f.app.inject({
      method: 'DELETE',
      url: `/api/v1/connectors/installs/${inst.install_id}`,
      headers: t.auth,
    });
    expect(again.json()).toEqual({ install_id: inst.install_id, status: 'uninstalled' });
    const h = await f.app.inject({ url: `/api/v1/connectors/installs/${inst.install_id}/health`, headers: t.auth });
    expect(h.json()).toEqual({ install_id: inst.install_id, connector_id: 'chatapp', status: 'uninstalled' });
    expect(f.asked.length).toBe(n);
  });

  it('refuses malformed emit bodies with bad_config, unparseable JSON with bad_request', async () => {
    const t = await f.tenant();
    const inst = await f.install(t.tenant_id);
    const url = `/api/v1/connectors/installs/${inst.install_id}/emit`;
    for (const payload of [
      {},
      { kind: 'chatapp.message' },
      { kind: 1, body: {} },
      { kind: 'x', body: [] },
      { kind: 'x', body: {}, extra: 1 },
    ]) {
      const res = await f.app.inject({ method: 'POST', url, headers: t.auth, payload });
      expect(res.statusCode).toBe(400);
      expect(res.json().error.code).toBe('bad_config');
    }
    const notJson = await f.app.inject({
      method: 'POST',
      url,
      headers: { ...t.auth, 'content-type': 'application/json' },
      payload: '{"kind":',
    });
    expect(notJson.statusCode).toBe(400);
    expect(notJson.json().error.code).toBe('bad_request');
  });

  it('answers 413 past the 1 MiB tenant body limit', async () => {
    const t = await f.tenant();
    const inst = await f.install(t.tenant_id);
    const big = JSON.stringify({ kind: 'chatapp.message', body: { text: 'x'.repeat(1024 * 1024) } });
    const res = await f.app.inject({
      method: 'POST',
      url: `/api/v1/connectors/installs/${inst.install_id}/emit`,
      headers: { ...t.auth, 'content-type': 'application/json' },
      payload: big,
    });
    expect(res.statusCode).toBe(413);
    expect(res.json().error.code).toBe('payload_too_large');
  });

  it('pages the events log newest first with a stable cursor', async () => {
    const t = await f.tenant();
    const inst = await f.install(t.tenant_id);
    const add = (i: number, kind = 'message') =>
      insertEvent(f.pool, {
        id: `message:C1:${i}`,
        kind,
        connector_id: 'chatapp',
        install_id: inst.install_id,
        tenant_id: t.tenant_id,
        payload: { i },
      });
    for (let i = 0; i < 7; i++) await add(i, i % 2 ? 'reaction_added' : 'message');
    const url = `/api/v1/connectors/installs/${inst.install_id}/events`;
    const p1 = (await f.app.inject({ url: `${url}?limit=3`, headers: t.auth })).json();
    expect(p1.events.map((e: { payload: { i: number } }) => e.payload.i)).toEqual([6, 5, 4]);
    expect(p1.events[0]).toMatchObject({
      id: 'message:C1:6',
      kind: 'message',
      connector_id: 'chatapp',
      install_id: inst.install_id,
    });
    await add(100); // arrives between pages: must not shift the next page
    const p2 = (await f.app.inject({ url: `${url}?limit=3&cursor=${p1.next_cursor}`, headers: t.auth })).json();
    expect(p2.events.map((e: { payload: { i: number } }) => e.payload.i)).toEqual([3, 2, 1]);
    const p3 = (await f.app.inject({ url: `${url}?limit=3&cursor=${p2.next_cursor}`, headers: t.auth })).json();
    expect(p3.events.map((e: { payload: { i: number } }) => e.payload.i)).toEqual([0]);
    expect(p3.next_cursor).toBeNull();
    const kinds = (await f.app.inject({ url: `${url}?kind=reaction_added`, headers: t.auth })).json();
    expect(kinds.events).toHaveLength(3);
    for (const q of ['limit=0', 'limit=501', 'limit=abc', 'cursor=garbage!!', 'unknown=1']) {
      const res = await f.app.inject({ url: `${url}?${q}`, headers: t.auth });
      expect(res.statusCode, q).toBe(400);
      expect(res.json().error.code).toBe('bad_request');
    }
  });

  it('answers unmatched paths with not_found and serves ops routes without auth', async () => {
    const res = await f.app.inject({ url: '/nope' });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({
      error: { code: 'not_found', message: expect.any(String), request_id: expect.any(String) },
    });
    expect((await f.app.inject({ url: '/healthz' })).json()).toEqual({ ok: true });
    expect((await f.app.inject({ url: '/readyz' })).statusCode).toBe(200);
    f.setReady(false);
    expect((await f.app.inject({ url: '/readyz' })).statusCode).toBe(503);
    f.setReady(true);
    const metrics = await f.app.inject({ url: '/metrics' });
    expect(metrics.statusCode).toBe(200);
    expect(metrics.body).toContain('connector_service_http_requests_total');
    expect(metrics.body).toContain('route="/api/v1/connectors"');
  });
});
