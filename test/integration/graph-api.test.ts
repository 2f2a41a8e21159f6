/**
 * Graph routes (INTERFACE §3) through `buildEdge()` + `inject()` on the run's Postgres,
 * with an in-memory actor port that records what the edge asks: listing, filters, cursor
 * pagination, full-text search with hostile input, one node with its edges, tenant
 * isolation, and node actions mapped to emits.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Conflict } from '../../src/errors.js';
import { projectEvent } from '../../src/graph/project.js';
import { listEdges } from '../../src/graph/queries.js';
import { withTx } from '../../src/store/db.js';
import { setBackfill, setInstallStatus, type Install } from '../../src/store/installs.js';
import { edgeFixture } from '../support/edge.js';

type Fixture = Awaited<ReturnType<typeof edgeFixture>>;
type Tenant = Awaited<ReturnType<Fixture['tenant']>>;
interface ApiNode {
  id: string;
  kind: string;
  external_id: string;
  install_id: string;
  props: Record<string, unknown>;
  source_status: string;
}

/** INTERFACE §10.5: an action's entry travels to the install actor, which commits it with the receipt. */
const ACTION_AUDIT = expect.objectContaining({ action: 'node_action', requestId: expect.any(String) });

let f: Fixture;
let a: Tenant;
let b: Tenant;
let chat: Install;
let code: Install;
let other: Install;
let refuse = false;

const TEAM = 'T0API';
const msg = (channel: string, ts: string, text: string, extra: Record<string, unknown> = {}) => ({
  id: `message:${channel}:${ts}`,
  kind: 'message',
  payload: { channel_id: channel, channel_type: 'channel', ts, user: 'U1', text, ...extra },
});
const TEXTS = [
  'Deploying the café release tonight',
  'Ünïcode ÜBER alles',
  '日本語 テキスト',
  '50% off with code foo_bar',
  'the alpha build is green',
  'rocket 🚀 launch',
];

async function project(inst: Install, e: { id: string; kind: string; payload: unknown }) {
  await withTx(f.pool, (tx) =>
    projectEvent(tx, inst, {
      ...e,
      installId: inst.install_id,
      tenantId: inst.tenant_id,
      connectorId: inst.connector_id,
      occurredAt: null,
    }),
  );
}

beforeAll(async () => {
  f = await edgeFixture(({ key, msg: m }) => {
    if (refuse) throw new Conflict('install is not active', { code: 'install_not_active' });
    return { provider_id: 'p-1', kind: m.kind, install_id: key.id[0], emitted_at: new Date(0).toISOString() };
  });
  a = await f.tenant('a');
  b = await f.tenant('b');
  chat = await f.install(a.tenant_id, 'chatapp', TEAM);
  code = await f.install(a.tenant_id, 'codehost', '4242');
  other = await f.install(b.tenant_id, 'chatapp', 'T0OTHER');
  // Nothing to backfill: keeps connector nodes of other test files from walking these installs.
  for (const i of [chat, code, other]) await setBackfill(f.pool, i.install_id, 'complete');
  for (const [i, text] of TEXTS.entries()) await project(chat, msg('C1', `1700000200.00000${i}`, text));
  await project(chat, msg('C1', '1700000200.000010', 'a reply in the thread', { thread_ts: '1700000200.000000' }));
  await project(code, {
    id: 'delivery-1',
    kind: 'pull_request.opened',
    payload: {
      action: 'opened',
      number: 7,
      pull_request: {
        number: 7,
        title: 'Add login throttling',
        state: 'open',
        body: 'Closes #3',
        updated_at: '2024-01-01T00:00:00Z',
        head: { sha: 'a'.repeat(40) },
        user: { login: 'octocat' },
      },
      repository: { id: 99, full_name: 'acme/api' },
    },
  });
  await project(code, {
    id: 'backfill:pr-diff:99:7',
    kind: 'pull_request.backfill_diff',
    payload: { repo_id: 99, repo_full_name: 'acme/api', pr_number: 7, oversized: false, diff: '+x\n' },
  });
  await project(other, msg('C9', '1700000300.000000', 'Deploying the café release tonight'));
});
afterAll(() => f.close());

const get = (t: Tenant, url: string) => f.app.inject({ url, headers: t.auth });
const act = (t: Tenant, id: string, payload: unknown) =>
  f.app.inject({
    method: 'POST',
    url: `/api/v1/graph/nodes/${encodeURIComponent(id)}/actions`,
    headers: t.auth,
    payload: payload as object,
  });

async function find(t: Tenant, kind: string, externalId: string): Promise<ApiNode> {
  const res = await get(t, `/api/v1/graph/nodes?kind=${kind}&limit=500`);
  const node = (res.json().nodes as ApiNode[]).find((n) => n.external_id === externalId);
  if (!node) throw new Error(`no ${kind} ${externalId}`);
  return node;
}

async function search(t: Tenant, q: string): Promise<string[]> {
  const res = await get(t, `/api/v1/graph/nodes?q=${encodeURIComponent(q)}`);
  expect(res.statusCode, q).toBe(200);
  return (res.json().nodes as ApiNode[]).map((n) => String(n.props.text ?? n.props.title ?? n.external_id));
}

describe('GET /api/v1/graph/nodes', () => {
  it('requires a tenant key on every graph route', async () => {
    for (const [method, url] of [
      ['GET', '/api/v1/graph/nodes'],
      ['GET', '/api/v1/graph/nodes/00000000-0000-4000-8000-000000000000'],
      ['POST', '/api/v1/graph/nodes/00000000-0000-4000-8000-000000000000/actions'],
    ] as const) {
      const res = await f.app.inject({ method, url, payload: method === 'POST' ? {} : undefined });
      expect(res.statusCode).toBe(401);
      expect(res.json().error.code).toBe('unauthorized');
    }
  });

  it("lists only the caller's nodes, newest first, filtered by kind and install", async () => {
    const all = (await get(a, '/api/v1/graph/nodes?limit=500')).json();
    const nodes = all.nodes as ApiNode[];
    expect(all.next_cursor).toBeNull();
    expect(nodes.every((n) => [chat.install_id, code.install_id].includes(n.install_id))).toBe(true);
    expect(nodes[0]).toMatchObject({
      kind: expect.any(String),
      connector_id: expect.any(String),
      created_at: expect.any(String),
      updated_at: expect.any(String),
      source_status: 'active',
    });

    const messages = (await get(a, '/api/v1/graph/nodes?kind=chat.message')).json().nodes as ApiNode[];
    expect(messages.map((n) => n.props.text)).toEqual(['a reply in the thread', ...[...TEXTS].reverse()]);

    const mine = (await get(a, `/api/v1/graph/nodes?install_id=${code.install_id}`)).json().nodes as ApiNode[];
    expect(new Set(mine.map((n) => n.kind))).toEqual(
      new Set(['codehost.pull_request', 'codehost.repository', 'codehost.user']),
    );
    // A listing leaves the diff out (up to 1 MB each); the node's own route has it.
    expect(mine.find((n) => n.kind === 'codehost.pull_request')!.props).toMatchObject({ diff_bytes: 3 });
    expect(mine.find((n) => n.kind === 'codehost.pull_request')!.props).not.toHaveProperty('diff');

    for (const id of [other.install_id, '00000000-0000-4000-8000-000000000000', 'nope']) {
      const res = await get(a, `/api/v1/graph/nodes?install_id=${id}`);
      expect(res.statusCode).toBe(404);
      expect(res.json().error.code).toBe('not_found');
    }
  });

  it('pages with a cursor that skips nothing and repeats nothing', async () => {
    const every = ((await get(a, '/api/v1/graph/nodes?limit=500')).json().nodes as ApiNode[]).map((n) => n.id);
    const seen: string[] = [];
    let cursor: string | null = null;
    for (let page = 0; page < 50; page++) {
      const res = await get(a, `/api/v1/graph/nodes?limit=3${cursor ? `&cursor=${cursor}` : ''}`);
      const body = res.json();
      seen.push(...(body.nodes as ApiNode[]).map((n) => n.id));
      cursor = body.next_cursor;
      if (!cursor) break;
    }
    expect(seen).toEqual(every);
  });

  it('refuses bad query values with bad_request', async () => {
    for (const qs of ['kind=chat.file', 'limit=0', 'limit=501', 'limit=x', 'cursor=zzz', 'q=%20%20', 'colour=red']) {
      const res = await get(a, `/api/v1/graph/nodes?${qs}`);
      expect(res.statusCode, qs).toBe(400);
      expect(res.json().error.code).toBe('bad_request');
    }
  });
});

describe('full-text search (q)', () => {
  it('matches words, stems, phrases and unicode, case-insensitively', async () => {
    expect(await search(a, 'deploy')).toEqual(['Deploying the café release tonight']);
    expect(await search(a, 'CAFÉ')).toEqual(['Deploying the café release tonight']);
    expect(await search(a, 'über')).toEqual(['Ünïcode ÜBER alles']);
    expect(await search(a, '日本語')).toEqual(['日本語 テキスト']);
    expect(await search(a, '"release tonight"')).toEqual(['Deploying the café release tonight']);
    expect(await search(a, 'tonight -café')).toEqual([]);
    expect(await search(a, 'throttling')).toEqual(['Add login throttling']);
    // A stop word is still a word (the vector keeps it, migration 018), so it finds text, never everything.
    expect(await search(a, 'the')).toEqual([
      'a reply in the thread',
      'the alpha build is green',
      'Deploying the café release tonight',
    ]);
    // Stop words the text lacks do not narrow a search of words it has.
    expect(await search(a, 'an alpha build')).toEqual(['the alpha build is green']);
    expect(await search(a, '"alpha build was green"')).toEqual(['the alpha build is green']);
    // A negated word excludes its other forms too.
    expect(await search(a, 'tonight -deploy')).toEqual([]);
  });

  it('never treats LIKE or tsquery syntax in the input as a wildcard', async () => {
    for (const q of [
      '%',
      '_',
      '%%',
      '*',
      'x%',
      '%e%',
      'alph_',
      'alp%',
      'alp:*',
      'al*',
      '\\',
      "'",
      '!',
      '&|!()',
      ':*',
      '🚀',
    ]) {
      expect(await search(a, q), q).toEqual([]);
    }
    // The literal characters still find text that contains the words around them.
    expect(await search(a, '50%')).toEqual(['50% off with code foo_bar']);
    expect(await search(a, 'foo_bar')).toEqual(['50% off with code foo_bar']);
  });

  it("never finds another tenant's text", async () => {
    expect(await search(b, 'deploy')).toHaveLength(1);
    const theirs = (await get(b, '/api/v1/graph/nodes?q=deploy')).json().nodes as ApiNode[];
    expect(theirs[0]!.install_id).toBe(other.install_id);
  });
});

describe('GET /api/v1/graph/nodes/{id}', () => {
  it('answers one node with the edges touching it', async () => {
    const root = await find(a, 'chat.message', `${TEAM}:C1:1700000200.000000`);
    const reply = await find(a, 'chat.message', `${TEAM}:C1:1700000200.000010`);
    const channel = await find(a, 'chat.channel', `${TEAM}:C1`);
    const res = await get(a, `/api/v1/graph/nodes/${root.id}`);
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body).toMatchObject({
      id: root.id,
      kind: 'chat.message',
      external_id: `${TEAM}:C1:1700000200.000000`,
      connector_id: 'chatapp',
      install_id: chat.install_id,
      edges_truncated: false,
    });
    expect(body.edges).toEqual(
      expect.arrayContaining([
        { type: 'in_channel', from: root.id, to: channel.id, props: {} },
        { type: 'reply_to', from: reply.id, to: root.id, props: {} },
      ]),
    );
    const pr = await find(a, 'codehost.pull_request', 'acme/api#7');
    expect((await get(a, `/api/v1/graph/nodes/${pr.id}`)).json().props.diff).toBe('+x\n');
  });

  it('caps the edges of a busy node, newest first, and says so', async () => {
    const channel = await find(a, 'chat.channel', `${TEAM}:C1`);
    const all = await listEdges(f.pool, a.tenant_id, channel.id);
    expect(all.truncated).toBe(false);
    expect(all.edges).toHaveLength(TEXTS.length + 1);
    const capped = await listEdges(f.pool, a.tenant_id, channel.id, 3);
    expect(capped).toEqual({ edges: all.edges.slice(0, 3), truncated: true });
    const newest = await find(a, 'chat.message', `${TEAM}:C1:1700000200.000010`);
    expect(capped.edges[0]).toEqual({ type: 'in_channel', from: newest.id, to: channel.id, props: {} });
  });

  it('answers 404 for a node of another tenant exactly as for one that does not exist', async () => {
    const theirs = await find(b, 'chat.message', 'T0OTHER:C9:1700000300.000000');
    for (const id of [
      theirs.id,
      theirs.id.toUpperCase(),
      '00000000-0000-4000-8000-000000000000',
      'not-a-uuid',
      "1' or '1'='1",
    ]) {
      for (const res of [
        await get(a, `/api/v1/graph/nodes/${encodeURIComponent(id)}`),
        await act(a, id, { action: 'reply', text: 'hi' }),
      ]) {
        expect(res.statusCode, id).toBe(404);
        expect(res.json()).toEqual({
          error: { code: 'not_found', message: expect.any(String), request_id: expect.any(String) },
        });
      }
    }
    expect(f.asked).toEqual([]);
  });

  it('marks nodes of an uninstalled install, and keeps them', async () => {
    const t = await f.tenant('gone');
    const inst = await f.install(t.tenant_id, 'chatapp', 'T0GONE');
    await setBackfill(f.pool, inst.install_id, 'complete');
    await project(inst, msg('C1', '1700000400.000000', 'still here'));
    await setInstallStatus(f.pool, inst.install_id, 'uninstalled');
    const nodes = (await get(t, '/api/v1/graph/nodes')).json().nodes as ApiNode[];
    expect(nodes.length).toBe(3);
    expect(nodes.every((n) => n.source_status === 'uninstalled')).toBe(true);
  });
});

describe('POST /api/v1/graph/nodes/{id}/actions', () => {
  it('turns reply and react on a chat message into the emit of its install, in its thread', async () => {
    const reply = await find(a, 'chat.message', `${TEAM}:C1:1700000200.000010`);
    f.asked.length = 0;
    const res = await act(a, reply.id, { action: 'reply', text: 'on it' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      provider_id: 'p-1',
      kind: 'chatapp.message',
      install_id: chat.install_id,
      emitted_at: new Date(0).toISOString(),
    });
    const react = await act(a, reply.id, { action: 'react', name: 'eyes' });
    expect(react.statusCode).toBe(200);
    expect(f.asked).toEqual([
      {
        key: { kind: 'install-writes', id: [chat.install_id] },
        msg: {
          type: 'emit',
          tenantId: a.tenant_id,
          kind: 'chatapp.message',
          body: { channel_id: 'C1', text: 'on it', thread_ts: '1700000200.000000' },
          audit: ACTION_AUDIT,
        },
      },
      {
        key: { kind: 'install-writes', id: [chat.install_id] },
        msg: {
          type: 'emit',
          tenantId: a.tenant_id,
          kind: 'chatapp.reaction',
          body: { channel_id: 'C1', timestamp: '1700000200.000010', name: 'eyes' },
          audit: ACTION_AUDIT,
        },
      },
    ]);
  });

  it('turns reply and label on a pull request into an issue comment and labels', async () => {
    const pr = await find(a, 'codehost.pull_request', 'acme/api#7');
    f.asked.length = 0;
    expect((await act(a, pr.id, { action: 'reply', text: 'LGTM' })).statusCode).toBe(200);
    expect((await act(a, pr.id, { action: 'label', labels: ['security'] })).statusCode).toBe(200);
    expect(f.asked.map((x) => x.msg)).toEqual([
      {
        type: 'emit',
        tenantId: a.tenant_id,
        kind: 'codehost.issue_comment',
        body: { repo_full_name: 'acme/api', issue_number: 7, body: 'LGTM' },
        audit: ACTION_AUDIT,
      },
      {
        type: 'emit',
        tenantId: a.tenant_id,
        kind: 'codehost.label',
        body: { repo_full_name: 'acme/api', issue_number: 7, labels: ['security'] },
        audit: ACTION_AUDIT,
      },
    ]);
    expect(f.asked.every((x) => x.key.id[0] === code.install_id)).toBe(true);
  });

  it('refuses a misfit action or a malformed body with bad_request, before any emit', async () => {
    const pr = await find(a, 'codehost.pull_request', 'acme/api#7');
    const channel = await find(a, 'chat.channel', `${TEAM}:C1`);
    f.asked.length = 0;
    for (const [id, body] of [
      [pr.id, { action: 'react', name: 'eyes' }],
      [channel.id, { action: 'reply', text: 'hi' }],
      [pr.id, { action: 'reply' }],
      [pr.id, { action: 'label', labels: [] }],
      [pr.id, { action: 'merge' }],
      [pr.id, 'reply'],
    ] as const) {
      const res = await act(a, id, body);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(res.json().error.code).toBe('bad_request');
    }
    expect(f.asked).toEqual([]);
  });

  it("answers with the emit route's errors", async () => {
    const pr = await find(a, 'codehost.pull_request', 'acme/api#7');
    refuse = true;
    try {
      const res = await act(a, pr.id, { action: 'reply', text: 'x' });
      expect(res.statusCode).toBe(409);
      expect(res.json().error.code).toBe('install_not_active');
    } finally {
      refuse = false;
    }
  });
});
