/**
 * The MCP server (INTERFACE §10.3) through the SDK's own `Client` and
 * `StreamableHTTPClientTransport`, against a real edge listening on a port, on the run's
 * Postgres (the fenced tenant pool) with an in-memory actor port that records what the edge
 * asks: the tools and their schemas, each tool's answer equal to its route's, tenant
 * isolation, bad input, errors as tool results naming the §2 code, and the HTTP refusals
 * before the protocol (401, 405, a body that is not JSON-RPC) in the §2 shape.
 */
import { recordAuditOk, type AuditStamp } from '../../src/store/audit-log.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Conflict } from '../../src/errors.js';
import { recordChanges } from '../../src/graph/change-log.js';
import { projectEvent } from '../../src/graph/project.js';
import { withTx } from '../../src/store/db.js';
import { setBackfill, type Install } from '../../src/store/installs.js';
import { edgeFixture } from '../support/edge.js';

type Fixture = Awaited<ReturnType<typeof edgeFixture>>;
type Tenant = Awaited<ReturnType<Fixture['tenant']>>;
interface ApiNode {
  id: string;
  kind: string;
  external_id: string;
  props: Record<string, unknown>;
}

let f: Fixture;
let url: string;
let a: Tenant;
let b: Tenant;
let chat: Install;
let refuse = false;
const clients: Client[] = [];

const TEAM = 'T0MCPTOOLS';

async function project(inst: Install, id: string, kind: string, payload: Record<string, unknown>) {
  // As the ingest transaction does: the projection, then its changes into the tenant's feed.
  await withTx(f.pool, async (tx) => {
    const ids = { installId: inst.install_id, tenantId: inst.tenant_id, connectorId: inst.connector_id };
    const changes = await projectEvent(tx, inst, { id, kind, payload, ...ids, occurredAt: null });
    await recordChanges(tx, [{ ...ids, changes }]);
  });
}

async function connect(t: { auth: Record<string, string> } | null): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(`${url}/mcp`), {
    requestInit: { headers: t ? t.auth : {} },
  });
  const client = new Client({ name: 'mcp-tools-test', version: '1.0.0' });
  await client.connect(transport);
  clients.push(client);
  return client;
}

const call = async (c: Client, name: string, args: Record<string, unknown> = {}) =>
  (await c.callTool({ name, arguments: args })) as CallToolResult;

/** A failed call's §2 body, from the text of its tool result. */
function failure(r: CallToolResult): { code: string; message: string } {
  expect(r.isError, JSON.stringify(r)).toBe(true);
  const text = (r.content[0] as { type: 'text'; text: string }).text;
  return (JSON.parse(text) as { error: { code: string; message: string } }).error;
}

beforeAll(async () => {
  f = await edgeFixture(async ({ key, msg: m }) => {
    if (refuse) throw new Conflict('install is not active', { code: 'install_not_active' });
    // As the install actor: the caller's audit entry commits with the receipt (INTERFACE §10.5).
    if (m.audit) await recordAuditOk(f.pool, m.tenantId as string, m.audit as AuditStamp);
    return { provider_id: 'p-1', kind: m.kind, install_id: key.id[0], emitted_at: new Date(0).toISOString() };
  });
  url = await f.app.listen({ port: 0, host: '127.0.0.1' });
  a = await f.tenant('mcp-a');
  b = await f.tenant('mcp-b');
  chat = await f.install(a.tenant_id, 'chatapp', TEAM);
  const other = await f.install(b.tenant_id, 'chatapp', 'T0MCPOTHER');
  for (const i of [chat, other]) await setBackfill(f.pool, i.install_id, 'complete');
  const message = (ts: string, text: string, extra: Record<string, unknown> = {}) => ({
    channel_id: 'C1',
    channel_type: 'channel',
    ts,
    user: 'U1',
    text,
    ...extra,
  });
  await project(chat, 'message:C1:1700000400.000001', 'message', message('1700000400.000001', 'ship the mcp release'));
  await project(
    chat,
    'message:C1:1700000400.000002',
    'message',
    message('1700000400.000002', 'agreed', { thread_ts: '1700000400.000001' }),
  );
  await project(other, 'message:C9:1700000400.000003', 'message', {
    ...message('1700000400.000003', 'ship the mcp release elsewhere'),
    channel_id: 'C9',
  });
});
afterAll(async () => {
  for (const c of clients) await c.close();
  await f?.close();
});

async function nodeOf(t: Tenant, text: string): Promise<ApiNode> {
  const res = await f.app.inject({ url: '/api/v1/graph/nodes?kind=chat.message', headers: t.auth });
  const node = (res.json().nodes as ApiNode[]).find((n) => n.props.text === text);
  if (!node) throw new Error(`no message ${text}`);
  return node;
}

describe('MCP tools (INTERFACE §10.3)', () => {
  it('lists the tools of the contract with JSON input and output schemas', async () => {
    const { tools } = await (await connect(a)).listTools();
    expect(tools.map((t) => t.name).sort()).toEqual([
      'act_on_node',
      'get_node',
      'list_changes',
      'list_installs',
      'search_nodes',
    ]);
    const byName = new Map(tools.map((t) => [t.name, t]));
    expect(Object.keys(byName.get('search_nodes')!.inputSchema.properties!).sort()).toEqual([
      'cursor',
      'install_id',
      'kind',
      'limit',
      'q',
    ]);
    expect(Object.keys(byName.get('act_on_node')!.inputSchema.properties!).sort()).toEqual([
      'action',
      'id',
      'idempotency_key',
      'labels',
      'name',
      'text',
    ]);
    expect(byName.get('get_node')!.inputSchema.required).toEqual(['id']);
    expect(Object.keys(byName.get('list_changes')!.inputSchema.properties!).sort()).toEqual(['cursor', 'limit']);
    expect(Object.keys(byName.get('list_installs')!.inputSchema.properties ?? {})).toEqual([]);
    for (const t of tools) expect(t.outputSchema?.type, t.name).toBe('object');
    expect(byName.get('act_on_node')!.description).toContain('graph:write');
  });

  it("answers each read with its route's JSON", async () => {
    const c = await connect(a);
    const found = await call(c, 'search_nodes', { q: 'mcp release', kind: 'chat.message' });
    const viaRoute = await f.app.inject({
      url: '/api/v1/graph/nodes?q=mcp%20release&kind=chat.message',
      headers: a.auth,
    });
    expect(found.isError).toBeFalsy();
    expect(found.structuredContent).toEqual(viaRoute.json());
    expect(JSON.parse((found.content[0] as { text: string }).text)).toEqual(viaRoute.json());

    const root = await nodeOf(a, 'ship the mcp release');
    const got = await call(c, 'get_node', { id: root.id });
    expect(got.structuredContent).toEqual(
      (await f.app.inject({ url: `/api/v1/graph/nodes/${root.id}`, headers: a.auth })).json(),
    );
    expect((got.structuredContent as { edges: unknown[] }).edges.length).toBeGreaterThan(0);

    const installs = await call(c, 'list_installs');
    expect(installs.structuredContent).toEqual(
      (await f.app.inject({ url: '/api/v1/connectors/installs', headers: a.auth })).json(),
    );

    const changes = await call(c, 'list_changes', { limit: 2 });
    const changesRoute = (await f.app.inject({ url: '/api/v1/graph/changes?limit=2', headers: a.auth })).json();
    expect(changes.structuredContent).toEqual(changesRoute);
    expect(changesRoute.changes).toHaveLength(2);
    const next = await call(c, 'list_changes', { cursor: changesRoute.next_cursor });
    const rest = await f.app.inject({
      url: `/api/v1/graph/changes?cursor=${changesRoute.next_cursor}`,
      headers: a.auth,
    });
    expect(next.structuredContent).toEqual(rest.json());
    const head = (await call(c, 'list_changes', { cursor: 'latest' })).structuredContent as { changes: unknown[] };
    expect(head.changes).toEqual([]);
  });

  it("never shows another tenant's nodes or installs", async () => {
    const c = await connect(b);
    const mine = await nodeOf(a, 'ship the mcp release');
    expect(failure(await call(c, 'get_node', { id: mine.id })).code).toBe('not_found');
    expect(failure(await call(c, 'get_node', { id: 'not-a-uuid' })).code).toBe('not_found');
    const found = (await call(c, 'search_nodes', { q: 'mcp release' })).structuredContent as { nodes: ApiNode[] };
    expect(found.nodes.map((n) => n.props.text)).toEqual(['ship the mcp release elsewhere']);
    expect(failure(await call(c, 'search_nodes', { install_id: chat.install_id })).code).toBe('not_found');
    const installs = (await call(c, 'list_installs')).structuredContent as { installs: Array<{ tenant_id: string }> };
    expect(installs.installs.map((i) => i.tenant_id)).toEqual([b.tenant_id]);
    const changes = (await call(c, 'list_changes', {})).structuredContent as { changes: Array<{ node_id: string }> };
    expect(changes.changes.length).toBeGreaterThan(0);
    expect(changes.changes.map((ch) => ch.node_id)).not.toContain(mine.id);
    expect(failure(await call(c, 'act_on_node', { id: mine.id, action: 'react', name: 'eyes' })).code).toBe(
      'not_found',
    );
  });

  it('refuses bad input with a tool error naming bad_request, before anything is asked', async () => {
    const c = await connect(a);
    const reply = await nodeOf(a, 'agreed');
    const before = f.asked.length;
    for (const [name, args] of [
      ['search_nodes', { limit: 0 }],
      ['search_nodes', { q: '   ' }],
      ['search_nodes', { kind: 'chat.file' }],
      ['search_nodes', { colour: 'red' }],
      ['get_node', {}],
      ['list_changes', { cursor: 'yesterday' }],
      ['list_changes', { limit: 1001 }],
      ['list_changes', { wait: 5 }],
      ['list_installs', { connector_id: 'chatapp' }],
      ['act_on_node', { id: reply.id, action: 'reply' }],
      ['act_on_node', { id: reply.id, action: 'shout', text: 'hi' }],
      ['act_on_node', { id: reply.id, action: 'reply', text: 'hi', name: 'eyes' }],
      ['act_on_node', { id: reply.id, action: 'label', labels: ['bug'] }],
      ['act_on_node', { id: reply.id, action: 'react', name: 'eyes', idempotency_key: 'has space' }],
    ] as const) {
      const err = failure(await call(c, name, args));
      expect(err.code, `${name} ${JSON.stringify(args)}`).toBe('bad_request');
      expect(err.message.length).toBeGreaterThan(0);
    }
    expect(f.asked.length).toBe(before);
    await expect(c.callTool({ name: 'drop_tables', arguments: {} })).rejects.toThrow(/drop_tables/);
  });

  it('acts on a node as the emit of its install, once per idempotency_key', async () => {
    const c = await connect(a);
    const reply = await nodeOf(a, 'agreed');
    const start = f.asked.length;
    const done = await call(c, 'act_on_node', { id: reply.id, action: 'reply', text: 'on it', idempotency_key: 'k-1' });
    expect(done.structuredContent).toMatchObject({ provider_id: 'p-1', kind: 'chatapp.message' });
    const again = await call(c, 'act_on_node', {
      id: reply.id,
      action: 'reply',
      text: 'on it',
      idempotency_key: 'k-1',
    });
    expect(again.structuredContent).toEqual(done.structuredContent);
    const emits = f.asked.slice(start).filter((x) => x.msg.type === 'emit');
    expect(emits.map((x) => x.msg)).toEqual([
      {
        type: 'emit',
        tenantId: a.tenant_id,
        kind: 'chatapp.message',
        body: { channel_id: 'C1', text: 'on it', thread_ts: '1700000400.000001' },
        idempotencyKey: 'k-1',
        // INTERFACE §10.5: the entry the install actor commits with the receipt.
        audit: expect.objectContaining({
          action: 'node_action',
          target: `node/${reply.id}`,
          keyId: expect.any(String),
        }),
      },
    ]);
    const reused = await call(c, 'act_on_node', {
      id: reply.id,
      action: 'reply',
      text: 'other',
      idempotency_key: 'k-1',
    });
    expect(failure(reused).code).toBe('idempotency_key_reused');

    // Audited as the node-action route is (INTERFACE §10.5), refusals too (the bad input above was);
    // the replayed answer did nothing, so it adds no entry of its own.
    const audit = await f.app.inject({ url: '/api/v1/audit?limit=500', headers: a.auth });
    const entries = (audit.json().entries as Array<{ action: string; target: string; outcome: string }>).filter(
      (e) => e.target === `node/${reply.id}`,
    );
    expect(entries.map((e) => e.outcome)).toContain('bad_request');
    expect(entries.slice(0, 2).map((e) => [e.action, e.outcome])).toEqual([
      ['node_action', 'idempotency_key_reused'],
      ['node_action', 'ok'],
    ]);
    expect(entries.filter((e) => e.outcome === 'ok')).toHaveLength(1);
  });

  it("answers the emit's errors as tool errors with their code", async () => {
    const c = await connect(a);
    const root = await nodeOf(a, 'ship the mcp release');
    refuse = true;
    try {
      expect(failure(await call(c, 'act_on_node', { id: root.id, action: 'react', name: 'eyes' })).code).toBe(
        'install_not_active',
      );
    } finally {
      refuse = false;
    }
  });
});

describe('scopes (INTERFACE §10.4)', () => {
  it("refuses a tool whose scope the key lacks with forbidden, naming the scope, before the tool's work", async () => {
    const readOnly = await f.key(a.tenant_id, { scopes: ['graph:read'] });
    const c = await connect(readOnly);
    expect((await c.listTools()).tools).toHaveLength(5);
    const root = await nodeOf(a, 'ship the mcp release');
    expect((await call(c, 'search_nodes', { q: 'mcp release' })).isError).toBeFalsy();
    expect((await call(c, 'get_node', { id: root.id })).isError).toBeFalsy();
    expect((await call(c, 'list_changes', {})).isError).toBeFalsy();
    const before = f.asked.length;
    for (const [name, args, scope] of [
      ['act_on_node', { id: root.id, action: 'react', name: 'eyes' }, 'graph:write'],
      // The scope comes first: bad arguments from a key without it are refused the same way.
      ['act_on_node', { id: root.id, action: 'shout' }, 'graph:write'],
      ['list_installs', {}, 'installs:read'],
    ] as const) {
      const r = await call(c, name, args);
      const text = (r.content[0] as { text: string }).text;
      expect(r.isError, name).toBe(true);
      expect(JSON.parse(text)).toMatchObject({ error: { code: 'forbidden', scope } });
    }
    expect(f.asked.length).toBe(before);

    const installsOnly = await connect(await f.key(a.tenant_id, { scopes: ['installs:read'] }));
    expect(failure(await call(installsOnly, 'get_node', { id: root.id })).code).toBe('forbidden');
    expect((await call(installsOnly, 'list_installs', {})).isError).toBeFalsy();
    const writer = await connect(await f.key(a.tenant_id, { scopes: ['graph:write'] }));
    expect((await call(writer, 'act_on_node', { id: root.id, action: 'react', name: 'eyes' })).isError).toBeFalsy();
  });
});

describe('POST /mcp over HTTP', () => {
  const post = (headers: Record<string, string>, body: unknown) =>
    fetch(`${url}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
      body: JSON.stringify(body),
    });
  const list = { jsonrpc: '2.0', id: 1, method: 'tools/list' };

  it('refuses a missing or unknown key with 401 before the protocol', async () => {
    await expect(connect(null)).rejects.toThrow(/unauthorized/);
    for (const headers of [{}, { authorization: 'Bearer not-a-key-of-anyone' }] as Array<Record<string, string>>) {
      const res = await post(headers, list);
      expect(res.status).toBe(401);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('unauthorized');
    }
  });

  it('answers a JSON-RPC request in JSON, a notification 202, and no server stream (405)', async () => {
    const res = await post({ ...a.auth, accept: 'application/json' }, list);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(res.headers.get('mcp-session-id')).toBeNull();
    const body = (await res.json()) as { id: number; result: { tools: unknown[] } };
    expect(body).toMatchObject({ jsonrpc: '2.0', id: 1 });
    expect(body.result.tools).toHaveLength(5);

    const note = await post(a.auth, { jsonrpc: '2.0', method: 'notifications/initialized' });
    expect(note.status).toBe(202);
    expect(await note.text()).toBe('');

    const stream = await fetch(`${url}/mcp`, { headers: { ...a.auth, accept: 'text/event-stream' } });
    expect(stream.status).toBe(405);
    expect(stream.headers.get('allow')).toBe('POST');
    expect(((await stream.json()) as { error: { code: string } }).error.code).toBe('method_not_allowed');
  });

  it('refuses what is not one JSON-RPC message, or an unknown protocol version, with the §2 bad_request', async () => {
    for (const [headers, body] of [
      [{}, [list, list]],
      [{}, { id: 1, method: 'tools/list' }],
      [{ 'mcp-protocol-version': '1999-01-01' }, list],
    ] as const) {
      const res = await post({ ...a.auth, ...headers }, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('bad_request');
    }
  });
});
