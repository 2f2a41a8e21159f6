/**
 * Request ids (INTERFACE §9.3): every response carries X-Request-Id (the caller's when
 * well-formed), error bodies carry it as `error.request_id`, and every log line made for
 * the request carries `request_id`, including lines of loggers that are not `req.log`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.js';
import { Internal } from '../../src/errors.js';
import { LogCapture } from '../support/log-capture.js';
import { edgeFixture } from '../support/edge.js';

const logs = new LogCapture();
const root = createLogger({ level: 'debug', node: 'test' }, logs.stream);
let f: Awaited<ReturnType<typeof edgeFixture>>;
beforeAll(async () => {
  f = await edgeFixture(
    ({ key, msg }) => {
      // A port deep below the route logs through the root logger, not req.log.
      root.info({ kind: msg.kind }, 'emit reached the actor port');
      if ((msg.body as { text?: string }).text === 'fail') throw new Internal('boom');
      return { provider_id: '1', kind: msg.kind, install_id: key.id[0], emitted_at: new Date().toISOString() };
    },
    undefined,
    {},
    root,
  );
});
afterAll(() => f.close());

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe('X-Request-Id', () => {
  it('echoes a well-formed id and replaces a malformed or missing one', async () => {
    const ok = await f.app.inject({ url: '/healthz', headers: { 'x-request-id': 'abc.DEF_1:2-3' } });
    expect(ok.headers['x-request-id']).toBe('abc.DEF_1:2-3');
    const long = 'a'.repeat(128);
    expect((await f.app.inject({ url: '/healthz', headers: { 'x-request-id': long } })).headers['x-request-id']).toBe(
      long,
    );
    for (const bad of ['a'.repeat(129), 'has space', 'semi;colon', '']) {
      const res = await f.app.inject({ url: '/healthz', headers: { 'x-request-id': bad } });
      expect(res.headers['x-request-id']).toMatch(UUID);
    }
    const a = await f.app.inject({ url: '/healthz' });
    const b = await f.app.inject({ url: '/healthz' });
    expect(a.headers['x-request-id']).toMatch(UUID);
    expect(a.headers['x-request-id']).not.toBe(b.headers['x-request-id']);
  });

  it('is in every error body, on 401, 404 and 400 alike', async () => {
    const t = await f.tenant();
    const cases = [
      { url: '/api/v1/connectors/installs', headers: {} },
      { url: '/no/such/route', headers: {} },
      { url: '/api/v1/graph/nodes?limit=x', headers: t.auth },
    ];
    for (const c of cases) {
      const res = await f.app.inject({ url: c.url, headers: { ...c.headers, 'x-request-id': 'err-check-1' } });
      expect(res.statusCode).toBeGreaterThanOrEqual(400);
      expect(res.json().error.request_id).toBe('err-check-1');
      const gen = await f.app.inject({ url: c.url, headers: c.headers });
      expect(gen.json().error.request_id).toBe(gen.headers['x-request-id']);
    }
  });

  it('tags the request’s log lines: a port’s line, the 5xx line and the debug access log', async () => {
    const t = await f.tenant();
    const install = await f.install(t.tenant_id);
    const url = `/api/v1/connectors/installs/${install.install_id}/emit`;
    const ok = await f.app.inject({
      method: 'POST',
      url,
      headers: { ...t.auth, 'x-request-id': 'req-ok-1' },
      payload: { kind: 'chatapp.message', body: { channel_id: 'C1', text: 'hi' } },
    });
    expect(ok.statusCode).toBe(200);
    const fail = await f.app.inject({
      method: 'POST',
      url,
      headers: { ...t.auth, 'x-request-id': 'req-fail-1' },
      payload: { kind: 'chatapp.message', body: { channel_id: 'C1', text: 'fail' } },
    });
    expect(fail.statusCode).toBe(500);
    expect(fail.json().error.request_id).toBe('req-fail-1');

    const of = (id: string) => logs.lines.filter((l) => l.request_id === id).map((l) => l.msg);
    expect(of('req-ok-1')).toEqual(['emit reached the actor port', 'request served']);
    expect(of('req-fail-1')).toEqual(['emit reached the actor port', 'request failed', 'request served']);
    const access = logs.lines.find((l) => l.request_id === 'req-ok-1' && l.msg === 'request served')!;
    expect(access).toMatchObject({ level: 20, method: 'POST', status: 200, route: expect.stringContaining('/emit') });
    // Lines made outside any request carry no id.
    root.info('outside');
    expect(logs.lines.at(-1)).not.toHaveProperty('request_id');
  });
});
