/**
 * Every answer, Fastify's and Node's own refusals included, has the §2 error body and
 * `X-Request-Id` (INTERFACE §2, §9.3; issue 32 item 7, issue 33 item 5): an over-long path
 * parameter, a path that does not decode, a bare CR, LF or NUL in a header; on the edge
 * and on the ops listeners a node opens beside it (actors-only ops routes, metrics port).
 */
import { connect } from 'node:net';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serveOps } from '../../src/edge/routes/ops.js';
import { edgeFixture } from '../support/edge.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Writes `raw` bytes on a fresh connection and reads the answer until the server closes. */
function rawRequest(url: string, raw: string): Promise<RawAnswer> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.write(raw));
    const chunks: Buffer[] = [];
    // A bound on a server that never answers, not a wait: every answer here closes the connection.
    socket.setTimeout(5_000, () => socket.destroy(new Error('no answer within 5 s')));
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', reject);
    socket.on('end', () => {
      socket.end();
      const text = Buffer.concat(chunks).toString('latin1');
      const [head, ...rest] = text.split('\r\n\r\n');
      const [statusLine, ...lines] = head!.split('\r\n');
      const headers = Object.fromEntries(
        lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]),
      );
      resolve({ status: Number(statusLine!.split(' ')[1]), headers, body: rest.join('\r\n\r\n') });
    });
  });
}

function expectContractError(a: { status: number; headers: Record<string, unknown>; body: string }, status: number) {
  expect(a.status).toBe(status);
  const id = a.headers['x-request-id'];
  expect(id).toMatch(/^[A-Za-z0-9._:-]{1,128}$/);
  const body = JSON.parse(a.body) as { error: { code: string; message: string; request_id: string } };
  expect(body.error).toEqual({ code: expect.stringMatching(/^[a-z_]+$/), message: expect.any(String), request_id: id });
  return body.error.code;
}

const BAD_HEADERS = [
  ['a bare CR', 'X-Note: a\rb'],
  ['a bare LF', 'X-Note: a\nb'],
  ['a NUL', 'X-Note: a\u0000b'],
] as const;

describe('the edge', () => {
  let f: Awaited<ReturnType<typeof edgeFixture>>;
  let url: string;
  beforeAll(async () => {
    f = await edgeFixture();
    url = await f.app.listen({ host: '127.0.0.1', port: 0 });
  });
  afterAll(() => f.close());

  it('answers a path parameter over 100 characters with 414 uri_too_long in the §2 shape', async () => {
    const res = await f.app.inject({
      url: `/api/v1/graph/nodes/${'a'.repeat(101)}`,
      headers: { 'x-request-id': 'p1' },
    });
    expect(expectContractError({ status: res.statusCode, headers: res.headers, body: res.body }, 414)).toBe(
      'uri_too_long',
    );
    expect(res.headers['x-request-id']).toBe('p1');
  });

  it('answers a path that does not decode (%ff%fe) with 400 bad_request in the §2 shape', async () => {
    const res = await f.app.inject({ url: '/api/v1/graph/nodes/%ff%fe' });
    expect(expectContractError({ status: res.statusCode, headers: res.headers, body: res.body }, 400)).toBe(
      'bad_request',
    );
    expect(res.headers['x-request-id']).toMatch(UUID);
  });

  it.each(BAD_HEADERS)("answers %s in a header with Node's parser's 400 in the §2 shape", async (_name, header) => {
    const a = await rawRequest(url, `GET /healthz HTTP/1.1\r\nHost: edge\r\n${header}\r\n\r\n`);
    expect(expectContractError(a, 400)).toBe('bad_request');
  });
});

describe('the ops listeners beside the edge', () => {
  const listeners: Array<{ url: string; close(): Promise<void> }> = [];
  beforeAll(async () => {
    const registry = new Registry();
    const ready = async () => ({ ready: true, checks: {} });
    // An actors-only node's ops routes, and SERVICE_METRICS_PORT's /metrics-only listener.
    listeners.push(await serveOps(registry, { host: '127.0.0.1', port: 0, ready, metrics: true }));
    listeners.push(await serveOps(registry, { host: '127.0.0.1', port: 0, ready: null, metrics: true }));
  });
  afterAll(async () => {
    for (const l of listeners) await l.close();
  });

  it('answer 404, bad URLs and bad headers in the §2 shape with X-Request-Id', async () => {
    for (const l of listeners) {
      const ok = await fetch(`${l.url}/metrics`, { headers: { 'x-request-id': 'ops-1' } });
      expect(ok.status).toBe(200);
      expect(ok.headers.get('x-request-id')).toBe('ops-1');
      const missing = await fetch(`${l.url}/nope`);
      const a = { status: missing.status, headers: Object.fromEntries(missing.headers), body: await missing.text() };
      expect(expectContractError(a, 404)).toBe('not_found');
      const badUrl = await rawRequest(l.url, 'GET /metrics%ff%fe HTTP/1.1\r\nHost: ops\r\nConnection: close\r\n\r\n');
      expect([400, 404]).toContain(badUrl.status);
      expectContractError(badUrl, badUrl.status);
      for (const [, header] of BAD_HEADERS) {
        const bad = await rawRequest(l.url, `GET /metrics HTTP/1.1\r\nHost: ops\r\n${header}\r\n\r\n`);
        expect(expectContractError(bad, 400)).toBe('bad_request');
      }
    }
  });
});
