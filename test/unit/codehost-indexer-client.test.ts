/** unit: the JSON-RPC client to the indexer daemon (INTERFACE §6) against the fake daemon over HTTP. */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { callTool, indexStatus, syncIndex } from '../../src/connectors/codehost/indexer/daemon-client.js';
import { FakeIndexerDaemon } from 'connector-service/testing';

const PATH = '/daemons/0f8fad5b-d9cb-469f-a165-70867728950e/42/rpc';

describe('unit: indexer daemon client', () => {
  let daemon: FakeIndexerDaemon;
  let other: FakeIndexerDaemon;
  let url: string;

  beforeAll(async () => {
    daemon = await FakeIndexerDaemon.start();
    other = await FakeIndexerDaemon.start();
    url = `${daemon.url}${PATH}`;
  });
  afterAll(async () => {
    await daemon.close();
    await other.close();
  });
  beforeEach(() => {
    daemon.reset();
    other.reset();
  });

  it('calls a tool in the MCP tools/call shape and returns its text', async () => {
    const r = await callTool(url, 'service_explain', { symbol: 'Foo.bar' }, { timeoutMs: 2000 });
    expect(r).toEqual({ ok: true, text: `service_explain {"symbol":"Foo.bar"} at ${PATH}` });
    expect(daemon.calls).toEqual([
      {
        path: PATH,
        method: 'tools/call',
        params: { name: 'service_explain', arguments: { symbol: 'Foo.bar' } },
        at: expect.any(Number),
      },
    ]);
  });

  it('a JSON-RPC error and an MCP isError result are failures that say what the daemon said', async () => {
    daemon.set({ rpcError: { methods: ['tools/call'], code: -32000, message: 'symbol index is corrupt' } });
    const r = await callTool(url, 'service_impact', { symbol: 'x' }, { timeoutMs: 2000 });
    expect(r).toMatchObject({
      ok: false,
      failure: { kind: 'rpc_error', code: -32000, message: expect.stringContaining('symbol index is corrupt') },
    });
    daemon.set({ rpcError: null, toolError: 'no such symbol' });
    const t = await callTool(url, 'service_impact', { symbol: 'x' }, { timeoutMs: 2000 });
    expect(t).toMatchObject({
      ok: false,
      failure: { kind: 'rpc_error', message: expect.stringContaining('no such symbol') },
    });
  });

  it('times out a daemon that answers too late', async () => {
    // The daemon answers only after 10 s: a client without a working timeout outlives the
    // test's own 5 s limit and fails it; no clock is read here.
    daemon.set({ delayMs: 10_000 });
    const r = await callTool(url, 'service_query', { query: 'q' }, { timeoutMs: 150 });
    expect(r).toMatchObject({ ok: false, failure: { kind: 'timeout' } });
  }, 5_000);

  it('never follows a redirect', async () => {
    daemon.set({ redirectTo: `${other.url}/elsewhere` });
    const r = await callTool(url, 'service_slice', { path: 'src/a.ts' }, { timeoutMs: 2000 });
    expect(r).toMatchObject({ ok: false, failure: { kind: 'redirect', code: 302 } });
    expect(other.calls).toHaveLength(0);
  });

  it('reports an HTTP error status, an unreachable daemon and a reply that is not JSON-RPC', async () => {
    daemon.set({ httpStatus: 503 });
    expect(await callTool(url, 'service_query', { query: 'q' }, { timeoutMs: 2000 })).toMatchObject({
      ok: false,
      failure: { kind: 'http_status', code: 503 },
    });
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    expect(
      await callTool(`http://127.0.0.1:${port}/x`, 'service_query', { query: 'q' }, { timeoutMs: 2000 }),
    ).toMatchObject({ ok: false, failure: { kind: 'unreachable' } });
    const html = createServer((_req, res) =>
      res.writeHead(200, { 'content-type': 'text/html' }).end('<html>proxy</html>'),
    );
    await new Promise<void>((r) => html.listen(0, '127.0.0.1', r));
    const r = await callTool(
      `http://127.0.0.1:${(html.address() as AddressInfo).port}/`,
      'service_query',
      { query: 'q' },
      { timeoutMs: 2000 },
    );
    html.close();
    expect(r).toMatchObject({ ok: false, failure: { kind: 'bad_reply' } });
  });

  it('index/sync then index/status: indexing, then ready at the synced sha', async () => {
    daemon.set({ indexingPolls: 2 });
    const sha = 'a'.repeat(40);
    const s = await syncIndex(
      url,
      { repo_full_name: 'acme/api', clone_url: 'https://example.test/acme/api.git', access_token: 'ghs_x', sha },
      { timeoutMs: 2000 },
    );
    expect(s).toEqual({ ok: true, status: 'indexing', sha });
    expect((await indexStatus(url, { timeoutMs: 2000 })) as unknown).toMatchObject({ ok: true, status: 'indexing' });
    expect((await indexStatus(url, { timeoutMs: 2000 })) as unknown).toMatchObject({ ok: true, status: 'indexing' });
    expect(await indexStatus(url, { timeoutMs: 2000 })).toMatchObject({
      ok: true,
      status: 'ready',
      lastIndexedSha: sha,
    });
  });
});
