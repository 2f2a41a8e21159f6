/**
 * Projection of every event kind into a real Postgres graph (INTERFACE §5): chat events as
 * INTERFACE §4 shapes them, code-host events as GitHub's recorded webhook payloads
 * (@octokit/webhooks-examples). Idempotence and order independence are checked on the
 * whole log: replayed on top, and replayed in shuffled orders into fresh tenants.
 */
import { createRequire } from 'node:module';
import type { Pool } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GraphChange } from '../../src/graph/change.js';
import { projectEvent } from '../../src/graph/project.js';
import { getNode, listEdges } from '../../src/graph/queries.js';
import type { IngestEvent } from '../../src/runtime/ports.js';
import { createPool, withTx } from '../../src/store/db.js';
import {
  createInstall,
  setBackfill,
  setInstallStatus,
  type ConnectorId,
  type Install,
} from '../../src/store/installs.js';
import { createTenant } from '../../src/store/tenants.js';
import { TEST_MASTER_KEY, testDatabaseUrl } from '../support/env.js';

/** GitHub's recorded webhook deliveries, per event name (a JSON package, loaded as such). */
const webhooks = createRequire(import.meta.url)('@octokit/webhooks-examples') as Array<{
  name: string;
  examples: unknown[];
}>;

let pool: Pool;
beforeAll(() => {
  pool = createPool(testDatabaseUrl(), { max: 4 });
});
afterAll(() => pool.end());

const TEAM = 'T0GRAPH';

async function freshInstall(connectorId: ConnectorId, externalId: string, tenantId?: string): Promise<Install> {
  const tid = tenantId ?? (await createTenant(pool, TEST_MASTER_KEY, 'graph')).tenant_id;
  const inst = await createInstall(pool, { tenantId: tid, connectorId, externalId });
  // Nothing to backfill: keeps connector nodes of other test files from walking these installs.
  await setBackfill(pool, inst.install_id, 'complete');
  return inst;
}

type RawEvent = Pick<IngestEvent, 'id' | 'kind' | 'payload'>;

function toIngest(inst: Install, e: RawEvent): IngestEvent {
  return {
    ...e,
    installId: inst.install_id,
    tenantId: inst.tenant_id,
    connectorId: inst.connector_id,
    occurredAt: null,
  };
}

async function project(inst: Install, e: RawEvent): Promise<GraphChange[]> {
  return withTx(pool, (tx) => projectEvent(tx, inst, toIngest(inst, e)));
}

async function projectAll(inst: Install, events: RawEvent[]): Promise<GraphChange[][]> {
  const out: GraphChange[][] = [];
  for (const e of events) out.push(await project(inst, e));
  return out;
}

/** The graph of a tenant by natural keys (node ids are random per tenant). */
async function snapshot(tenantId: string) {
  const nodes = await pool.query(
    `SELECT kind, external_id, connector_id, props, prop_versions, search_text FROM graph_nodes
     WHERE tenant_id = $1 ORDER BY kind, external_id`,
    [tenantId],
  );
  const edges = await pool.query(
    `SELECT e.type, f.kind AS from_kind, f.external_id AS from_ext, t.kind AS to_kind, t.external_id AS to_ext, e.key, e.props, e.version, e.removed
     FROM graph_edges e JOIN graph_nodes f ON f.node_id = e.from_node JOIN graph_nodes t ON t.node_id = e.to_node
     WHERE e.tenant_id = $1 ORDER BY 1, 2, 3, 4, 5, 6`,
    [tenantId],
  );
  return { nodes: nodes.rows, edges: edges.rows };
}

/** Every column, ids and timestamps included: what a replay on top must leave untouched. */
async function rawTables(tenantId: string) {
  const nodes = await pool.query('SELECT * FROM graph_nodes WHERE tenant_id = $1 ORDER BY node_id', [tenantId]);
  const edges = await pool.query('SELECT * FROM graph_edges WHERE tenant_id = $1 ORDER BY edge_id', [tenantId]);
  return { nodes: nodes.rows, edges: edges.rows };
}

async function nodeOf(tenantId: string, kind: string, externalId: string) {
  const { rows } = await pool.query<{ node_id: string }>(
    'SELECT node_id FROM graph_nodes WHERE tenant_id = $1 AND kind = $2 AND external_id = $3',
    [tenantId, kind, externalId],
  );
  if (!rows[0]) return null;
  const node = (await getNode(pool, tenantId, rows[0].node_id))!;
  const { edges } = await listEdges(pool, tenantId, node.id);
  return { ...node, edges };
}

/** Deterministic shuffles (mulberry32), so a failing order can be replayed. */
function shuffled<T>(items: T[], seed: number): T[] {
  let a = seed >>> 0;
  const rand = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

const file = {
  file_id: 'F1',
  name: 'plan.pdf',
  mimetype: 'application/pdf',
  size: 1234,
  permalink: 'https://files.example/F1',
};

/** A chat log as the chatapp connector ingests it (INTERFACE §4, §8.2 ids). */
const CHAT_LOG: RawEvent[] = [
  {
    id: 'message:C1:1700000100.000100',
    kind: 'message',
    payload: {
      channel_id: 'C1',
      channel_type: 'channel',
      ts: '1700000100.000100',
      user: 'U1',
      text: 'Deploy the café release',
      files: [file],
    },
  },
  {
    id: 'message:C1:1700000100.000200',
    kind: 'message',
    payload: {
      channel_id: 'C1',
      channel_type: 'channel',
      ts: '1700000100.000200',
      thread_ts: '1700000100.000100',
      user: 'U2',
      text: 'on it',
    },
  },
  {
    id: 'message_changed:C1:1700000100.000100:1700000100.000500',
    kind: 'message_changed',
    payload: {
      channel_id: 'C1',
      channel_type: 'channel',
      ts: '1700000100.000100',
      event_ts: '1700000100.000500',
      text: 'Deploy the café release tonight',
      user: 'U1',
      files: [file],
    },
  },
  {
    id: 'reaction_added:C1:1700000100.000100:U2:eyes:1700000100.000300',
    kind: 'reaction_added',
    payload: {
      channel_id: 'C1',
      item_ts: '1700000100.000100',
      user: 'U2',
      name: 'eyes',
      event_ts: '1700000100.000300',
      item_user: 'U1',
    },
  },
  {
    id: 'reaction_added:C1:1700000100.000100:U2:tada:1700000100.000400',
    kind: 'reaction_added',
    payload: {
      channel_id: 'C1',
      item_ts: '1700000100.000100',
      user: 'U2',
      name: 'tada',
      event_ts: '1700000100.000400',
    },
  },
  {
    id: 'reaction_removed:C1:1700000100.000100:U2:eyes:1700000100.000600',
    kind: 'reaction_removed',
    payload: {
      channel_id: 'C1',
      item_ts: '1700000100.000100',
      user: 'U2',
      name: 'eyes',
      event_ts: '1700000100.000600',
    },
  },
  {
    id: 'message:C1:1700000100.000300',
    kind: 'message',
    payload: {
      channel_id: 'C1',
      channel_type: 'channel',
      ts: '1700000100.000300',
      user: 'U1',
      text: 'oops wrong channel',
    },
  },
  {
    id: 'message_deleted:C1:1700000100.000300:1700000100.000700',
    kind: 'message_deleted',
    payload: { channel_id: 'C1', channel_type: 'channel', ts: '1700000100.000300', event_ts: '1700000100.000700' },
  },
  {
    id: 'message:D1:1700000100.000900',
    kind: 'message',
    payload: {
      channel_id: 'D1',
      channel_type: 'im',
      ts: '1700000100.000900',
      bot_id: 'B1',
      subtype: 'bot_message',
      text: 'bot says hi',
    },
  },
  {
    id: 'reaction_added:C1:1600000000.000000:U3:+1:1700000100.000800',
    kind: 'reaction_added',
    payload: {
      channel_id: 'C1',
      item_ts: '1600000000.000000',
      user: 'U3',
      name: '+1',
      event_ts: '1700000100.000800',
      item_user: 'U4',
    },
  },
  {
    id: 'message:G1:1700000101.000000',
    kind: 'message',
    payload: {
      channel_id: 'G1',
      channel_type: 'mpim',
      ts: '1700000101.000000',
      user: 'U1',
      text: 'nul\u0000 and half \ud83d pair',
    },
  },
];

const WEBHOOK_EVENTS = [
  'pull_request',
  'issues',
  'issue_comment',
  'pull_request_review',
  'pull_request_review_comment',
  'push',
];

/** Every recorded example of the webhook events the codehost connector ingests, as it names them. */
const CODEHOST_LOG: RawEvent[] = [
  ...webhooks
    .filter((d) => WEBHOOK_EVENTS.includes(d.name))
    .flatMap((d) =>
      d.examples.map((payload, i) => {
        const action = (payload as { action?: string }).action;
        return { id: `delivery-${d.name}-${i}`, kind: action ? `${d.name}.${action}` : d.name, payload };
      }),
    ),
  {
    id: 'backfill:pr-diff:186853002:2',
    kind: 'pull_request.backfill_diff',
    payload: {
      repo_id: 186853002,
      repo_full_name: 'Codertocat/Hello-World',
      pr_number: 2,
      oversized: false,
      diff: 'diff --git a/README.md b/README.md\n+hello\n',
    },
  },
  {
    id: 'backfill:pr-diff:186853002:9',
    kind: 'pull_request.backfill_diff',
    payload: { repo_id: 186853002, repo_full_name: 'Codertocat/Hello-World', pr_number: 9, oversized: true },
  },
];

describe('graph projection: chat', () => {
  it('projects channels, users, messages, edits, deletes, threads, reactions and files', async () => {
    const inst = await freshInstall('chatapp', TEAM);
    const changes = await projectAll(inst, CHAT_LOG);
    const t = inst.tenant_id;
    const id = (kind: string, ext: string) => nodeOf(t, kind, ext).then((n) => n!.id);

    const root = (await nodeOf(t, 'chat.message', `${TEAM}:C1:1700000100.000100`))!;
    expect(root).toMatchObject({ connector_id: 'chatapp', install_id: inst.install_id, source_status: 'active' });
    expect(root.props).toMatchObject({
      channel_id: 'C1',
      ts: '1700000100.000100',
      text: 'Deploy the café release tonight',
      user: 'U1',
      thread_ts: null,
      channel_type: 'channel',
      files: [file],
      edited_ts: '1700000100.000500',
    });
    const channel = await id('chat.channel', `${TEAM}:C1`);
    const u1 = await id('chat.user', `${TEAM}:U1`);
    const u2 = await id('chat.user', `${TEAM}:U2`);
    const reply = await id('chat.message', `${TEAM}:C1:1700000100.000200`);
    const edges = root.edges.map((e) => ({ type: e.type, from: e.from, to: e.to, props: e.props }));
    expect(edges).toEqual(
      expect.arrayContaining([
        { type: 'in_channel', from: root.id, to: channel, props: {} },
        { type: 'authored_by', from: root.id, to: u1, props: {} },
        { type: 'reply_to', from: reply, to: root.id, props: {} },
        { type: 'reacted', from: u2, to: root.id, props: { name: 'tada' } },
      ]),
    );
    // The removed reaction is gone; only the four edges above touch the root.
    expect(edges).toHaveLength(4);

    const deleted = (await nodeOf(t, 'chat.message', `${TEAM}:C1:1700000100.000300`))!;
    expect(deleted.props).toMatchObject({ deleted: true, text: null, files: null });

    const bot = (await nodeOf(t, 'chat.message', `${TEAM}:D1:1700000100.000900`))!;
    expect(bot.props).toMatchObject({ user: null, bot_id: 'B1', subtype: 'bot_message', channel_type: 'im' });
    expect(bot.edges.map((e) => e.type)).toEqual(['in_channel']);

    // A reaction on a message never ingested: a node with its coordinates, author and channel.
    const unseen = (await nodeOf(t, 'chat.message', `${TEAM}:C1:1600000000.000000`))!;
    expect(unseen.props).toEqual({ channel_id: 'C1', ts: '1600000000.000000' });
    expect(unseen.edges.map((e) => e.type).sort()).toEqual(['authored_by', 'in_channel', 'reacted']);

    const odd = (await nodeOf(t, 'chat.message', `${TEAM}:G1:1700000101.000000`))!;
    expect(odd.props.text).toBe('nul and half \ufffd pair');
    expect((await nodeOf(t, 'chat.channel', `${TEAM}:G1`))!.props).toEqual({ channel_id: 'G1', channel_type: 'mpim' });

    // Change notices: the first message touches message, channel and author, once each.
    expect(changes[0]!.map((c) => [c.kind, c.op])).toEqual([
      ['chat.channel', 'upserted'],
      ['chat.message', 'upserted'],
      ['chat.user', 'upserted'],
    ]);
    expect(changes[7]).toContainEqual({ node_id: deleted.id, kind: 'chat.message', op: 'deleted' });
    // The removal changed the reacted edge: both its ends moved.
    expect(changes[5]!.map((c) => c.node_id).sort()).toEqual([root.id, u2].sort());
  });

  it('keeps the newest fact whatever the order: an edit before its message, a removal before its add', async () => {
    const inst = await freshInstall('chatapp', TEAM);
    const [message, , edit, addEyes, , removeEyes] = CHAT_LOG;
    await projectAll(inst, [edit!, removeEyes!, message!, addEyes!]);
    const root = (await nodeOf(inst.tenant_id, 'chat.message', `${TEAM}:C1:1700000100.000100`))!;
    expect(root.props.text).toBe('Deploy the café release tonight');
    expect(root.edges.filter((e) => e.type === 'reacted')).toEqual([]);
    // A newer add after the removal brings the reaction back.
    await project(inst, {
      id: 'reaction_added:C1:1700000100.000100:U2:eyes:1700000100.000999',
      kind: 'reaction_added',
      payload: {
        channel_id: 'C1',
        item_ts: '1700000100.000100',
        user: 'U2',
        name: 'eyes',
        event_ts: '1700000100.000999',
      },
    });
    const again = (await nodeOf(inst.tenant_id, 'chat.message', `${TEAM}:C1:1700000100.000100`))!;
    expect(again.edges.filter((e) => e.type === 'reacted').map((e) => e.props)).toEqual([{ name: 'eyes' }]);
  });

  it('stores a newer version of an equal prop alone (row otherwise as it was), and an older differing fact still loses', async () => {
    const inst = await freshInstall('chatapp', TEAM);
    const msg = (ts: string, channelType: string): RawEvent => ({
      id: `message:C7:${ts}`,
      kind: 'message',
      payload: { channel_id: 'C7', channel_type: channelType, ts, user: 'U1', text: `at ${ts}` },
    });
    await project(inst, msg('1700000300.000100', 'channel'));
    const channelRow = () =>
      pool
        .query(`SELECT * FROM graph_nodes WHERE tenant_id = $1 AND kind = 'chat.channel'`, [inst.tenant_id])
        .then((r) => r.rows[0] as Record<string, unknown>);
    const before = await channelRow();
    // The channel is named again, same type, later: only its channel_type version moves.
    await project(inst, msg('1700000300.000300', 'channel'));
    const after = await channelRow();
    expect((after.prop_versions as Record<string, string>).channel_type).not.toBe(
      (before.prop_versions as Record<string, string>).channel_type,
    );
    expect({ ...after, prop_versions: null }).toEqual({ ...before, prop_versions: null });
    // A fact older than the stored version (a message between the two, another type) loses.
    await project(inst, msg('1700000300.000200', 'group'));
    expect((await channelRow()).props).toEqual(before.props);
    // A newer differing fact wins.
    await project(inst, msg('1700000300.000400', 'group'));
    const moved = await channelRow();
    expect((moved.props as Record<string, unknown>).channel_type).toBe('group');
    expect(moved.search).toEqual(before.search);
  });

  it('skips a payload that does not fit its kind, and an unknown kind, without failing the ingest', async () => {
    const inst = await freshInstall('chatapp', TEAM);
    expect(
      await project(inst, { id: 'm1', kind: 'message', payload: { channel_id: 'C1', ts: 'yesterday', text: 'x' } }),
    ).toEqual([]);
    expect(await project(inst, { id: 'm2', kind: 'channel_created', payload: { channel: { id: 'C9' } } })).toEqual([]);
    expect((await snapshot(inst.tenant_id)).nodes).toEqual([]);
  });
});

describe('graph projection: code host (recorded GitHub payloads)', () => {
  it('projects repositories, PRs, issues, comments, reviews, commits, users and backfilled diffs', async () => {
    const inst = await freshInstall('codehost', '1001');
    await projectAll(inst, CODEHOST_LOG);
    const t = inst.tenant_id;
    const repo = (await nodeOf(t, 'codehost.repository', '186853002'))!;
    expect(repo.props).toMatchObject({ repo_id: 186853002, full_name: 'Codertocat/Hello-World' });

    const pr = (await nodeOf(t, 'codehost.pull_request', 'Codertocat/Hello-World#2'))!;
    expect(pr.props).toMatchObject({
      repo_full_name: 'Codertocat/Hello-World',
      number: 2,
      title: 'Update the README with new information.',
      head_sha: expect.stringMatching(/^[0-9a-f]{40}$/),
      state: expect.any(String),
      oversized: false,
      diff: 'diff --git a/README.md b/README.md\n+hello\n',
      diff_bytes: 42,
    });
    const user = (await nodeOf(t, 'codehost.user', 'Codertocat'))!;
    expect(pr.edges).toEqual(
      expect.arrayContaining([
        { type: 'in_repo', from: pr.id, to: repo.id, props: {} },
        { type: 'authored_by', from: pr.id, to: user.id, props: {} },
      ]),
    );
    expect((await nodeOf(t, 'codehost.pull_request', 'Codertocat/Hello-World#9'))!.props).toMatchObject({
      oversized: true,
      diff: null,
      diff_bytes: null,
    });

    // Recorded `issues.deleted` shares its second with `issues.reopened`: the delete outranks it.
    const issue = (await nodeOf(t, 'codehost.issue', 'Codertocat/Hello-World#1'))!;
    expect(issue.props).toMatchObject({ deleted: true, title: null, number: 1 });
    // Recorded `issues.transferred` moved octo-org/octo-repo#1 into that same node (INTERFACE §9.5).
    expect(await nodeOf(t, 'codehost.issue', 'octo-org/octo-repo#1')).toBeNull();

    const issueComment = (await nodeOf(t, 'codehost.comment', '492700400'))!;
    expect(issueComment.props).toMatchObject({ comment_type: 'issue_comment', deleted: true, body: null });
    expect(issueComment.edges).toContainEqual({ type: 'comment_on', from: issueComment.id, to: issue.id, props: {} });

    const reviewComment = (await nodeOf(t, 'codehost.comment', '284312630'))!;
    expect(reviewComment.props).toMatchObject({ comment_type: 'review_comment', path: 'README.md', deleted: true });
    expect(reviewComment.edges).toContainEqual({ type: 'comment_on', from: reviewComment.id, to: pr.id, props: {} });

    const review = (await nodeOf(t, 'codehost.review', '237895671'))!;
    expect(review.props.state).toBe('dismissed');
    expect(review.edges).toEqual(
      expect.arrayContaining([
        { type: 'review_of', from: review.id, to: pr.id, props: {} },
        { type: 'authored_by', from: review.id, to: user.id, props: {} },
      ]),
    );

    // The recorded pushes name one sha with two messages; the later commit timestamp wins.
    const commit = (await nodeOf(t, 'codehost.commit', '6113728f27ae82c7b1a177c8d03f9e96e0adf246'))!;
    expect(commit.props).toMatchObject({
      message: 'Adding a .gitignore file',
      timestamp: '2019-05-15T15:20:41Z',
      author_name: 'Codertocat',
    });
    expect(commit.edges).toEqual(
      expect.arrayContaining([
        { type: 'pushed_to', from: commit.id, to: repo.id, props: {} },
        { type: 'authored_by', from: commit.id, to: user.id, props: {} },
      ]),
    );

    const kinds = (await snapshot(t)).nodes.map((n) => n.kind as string);
    expect(new Set(kinds)).toEqual(
      new Set([
        'codehost.repository',
        'codehost.pull_request',
        'codehost.issue',
        'codehost.comment',
        'codehost.review',
        'codehost.commit',
        'codehost.user',
      ]),
    );
  });

  it('makes the last writing install the node install; uninstalling keeps nodes, marked', async () => {
    const tenant = (await createTenant(pool, TEST_MASTER_KEY, 'two installs')).tenant_id;
    const a = await freshInstall('codehost', '2001', tenant);
    const b = await freshInstall('codehost', '2002', tenant);
    const opened = CODEHOST_LOG.find((e) => e.kind === 'pull_request.opened')!;
    await project(a, opened);
    await project(b, { ...opened, id: 'other-delivery' });
    const user = (await nodeOf(tenant, 'codehost.user', 'Codertocat'))!;
    expect(user.install_id).toBe(b.install_id);
    await setInstallStatus(pool, b.install_id, 'uninstalled');
    const after = (await nodeOf(tenant, 'codehost.user', 'Codertocat'))!;
    expect(after).toMatchObject({
      id: user.id,
      install_id: b.install_id,
      source_status: 'uninstalled',
      props: user.props,
    });
  });
});

describe('graph projection: idempotent and order-independent', () => {
  for (const [label, connector, external, log] of [
    ['chat', 'chatapp', TEAM, CHAT_LOG],
    ['code host', 'codehost', '3001', CODEHOST_LOG],
  ] as const) {
    it(`${label}: replaying the whole log twice leaves identical tables, and any order gives the same graph`, async () => {
      const inst = await freshInstall(connector, external);
      await projectAll(inst, log);
      const first = await rawTables(inst.tenant_id);
      const replay = await projectAll(inst, log);
      expect(replay.flat()).toEqual([]);
      expect(await rawTables(inst.tenant_id)).toEqual(first);

      const reference = await snapshot(inst.tenant_id);
      for (const seed of [1, 2, 3]) {
        const other = await freshInstall(connector, external);
        await projectAll(other, shuffled(log, seed));
        await projectAll(other, shuffled(log, seed + 100));
        expect(await snapshot(other.tenant_id), `shuffle seed ${seed}`).toEqual(reference);
      }
    });
  }
});
