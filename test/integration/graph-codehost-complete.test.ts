/**
 * INTERFACE §9.5 on the code-host side, projected into a real Postgres: a backfilled PR
 * carries the listing's title, state, body, head_sha, merged, draft and an `authored_by`
 * edge, and merges with GitHub's recorded webhooks (@octokit/webhooks-examples) per prop,
 * newer `updated_at` winning in either arrival order while the diff stays; and
 * `issues.transferred` moves the issue node to its new repository with its edges.
 */
import { createRequire } from 'node:module';
import type { Pool } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backfillDiffEvent, backfillPullEvent } from '../../src/connectors/codehost/backfill/backfill-event.js';
import type { ListedPull } from '../../src/connectors/codehost/backfill/codehost-api.js';
import { createPool } from '../../src/store/db.js';
import type { Install } from '../../src/store/installs.js';
import { testDatabaseUrl } from '../support/env.js';
import { graphDb, type RawEvent } from '../support/graph-db.js';

const webhooks = createRequire(import.meta.url)('@octokit/webhooks-examples') as Array<{
  name: string;
  examples: Array<Record<string, any>>;
}>;
const example = (name: string, action: string) =>
  structuredClone(webhooks.find((w) => w.name === name)!.examples.find((e) => e.action === action)!);

let pool: Pool;
let g: ReturnType<typeof graphDb>;
beforeAll(() => {
  pool = createPool(testDatabaseUrl(), { max: 4 });
  g = graphDb(pool);
});
afterAll(() => pool.end());

// The recorded deliveries: PR Codertocat/Hello-World#2 opened at 15:20:33, closed at 15:21:18.
const opened = example('pull_request', 'opened');
const closed = example('pull_request', 'closed');
const REPO = { id: opened.repository.id as number, full_name: opened.repository.full_name as string };
const EXT = `${REPO.full_name}#2`;

const webhook = (id: string, payload: Record<string, any>): RawEvent => ({
  id,
  kind: `pull_request.${payload.action}`,
  payload,
});

function listed(updatedAt: string, over: Partial<ListedPull> = {}): ListedPull {
  return {
    number: 2,
    title: 'Title as the listing saw it',
    state: 'open',
    body: 'Body from the pulls listing',
    head_sha: 'c'.repeat(40),
    head_ref: 'changes',
    base_ref: 'master',
    draft: false,
    merged: false,
    updated_at: updatedAt,
    html_url: 'https://github.com/Codertocat/Hello-World/pull/2',
    labels: ['backfilled'],
    user: { login: 'listing-author', id: 77, type: 'User', html_url: 'https://github.com/listing-author' },
    ...over,
  };
}

const asRaw = (e: { id: string; kind: string; payload: unknown }): RawEvent => ({
  id: e.id,
  kind: e.kind,
  payload: e.payload,
});

async function graphOf(inst: Install, events: RawEvent[]) {
  await g.projectAll(inst, events);
  return g.snapshot(inst.tenant_id);
}

describe('graph: backfilled pull requests (INTERFACE §9.5)', () => {
  it('a backfilled PR carries the listing fields and an authored_by edge to its author', async () => {
    const inst = await g.freshInstall('codehost', String(9_000_001));
    const pull = listed('2019-05-15T15:21:00Z', { state: 'closed', merged: true, draft: false });
    await g.projectAll(inst, [
      asRaw(backfillPullEvent(inst, REPO, pull)),
      asRaw(backfillDiffEvent(inst, { repoId: REPO.id, repoFullName: REPO.full_name, prNumber: 2, diff: '+x\n' })),
    ]);
    const pr = (await g.nodeOf(inst.tenant_id, 'codehost.pull_request', EXT))!;
    expect(pr.props).toMatchObject({
      title: 'Title as the listing saw it',
      state: 'closed',
      body: 'Body from the pulls listing',
      head_sha: 'c'.repeat(40),
      merged: true,
      draft: false,
      labels: ['backfilled'],
      diff: '+x\n',
      oversized: false,
    });
    expect(pr.edges).toContainEqual(
      expect.objectContaining({ type: 'authored_by', from: pr.id, toName: 'codehost.user listing-author' }),
    );
    expect(pr.edges).toContainEqual(
      expect.objectContaining({ type: 'in_repo', toName: `codehost.repository ${REPO.id}` }),
    );
    const author = (await g.nodeOf(inst.tenant_id, 'codehost.user', 'listing-author'))!;
    expect(author.props).toMatchObject({ login: 'listing-author', user_id: 77, type: 'User' });
  });

  it('webhook newer than the listing: the webhook wins per prop in both orders, the diff stays', async () => {
    // The listing was read at 15:21:00, between the recorded `opened` (15:20:33) and `closed` (15:21:18).
    const [a, b] = [await g.freshInstall('codehost', '9000002'), await g.freshInstall('codehost', '9000003')];
    const events = (inst: Install): RawEvent[] => [
      asRaw(backfillDiffEvent(inst, { repoId: REPO.id, repoFullName: REPO.full_name, prNumber: 2, diff: '+d\n' })),
      asRaw(backfillPullEvent(inst, REPO, listed('2019-05-15T15:21:00Z'))),
      webhook('delivery-opened', opened),
      webhook('delivery-closed', closed),
    ];
    const backfillFirst = await graphOf(a, events(a));
    const webhooksFirst = await graphOf(b, [...events(b)].reverse());
    expect(webhooksFirst).toEqual(backfillFirst);

    const pr = (await g.nodeOf(a.tenant_id, 'codehost.pull_request', EXT))!;
    expect(pr.props).toMatchObject({
      title: closed.pull_request.title,
      state: 'closed',
      body: closed.pull_request.body,
      head_sha: closed.pull_request.head.sha,
      merged: false,
      diff: '+d\n',
      oversized: false,
    });
    // Both authors are users of the graph; the PR points at each one that wrote it.
    expect(pr.edges.filter((e) => e.type === 'authored_by').map((e) => e.toName)).toEqual(
      expect.arrayContaining(['codehost.user Codertocat']),
    );
  });

  it('listing newer than the webhook: the listing wins in both orders', async () => {
    const [a, b] = [await g.freshInstall('codehost', '9000004'), await g.freshInstall('codehost', '9000005')];
    const events = (inst: Install): RawEvent[] => [
      webhook('delivery-opened', opened),
      asRaw(backfillPullEvent(inst, REPO, listed('2019-05-16T09:00:00Z', { title: 'Renamed later' }))),
    ];
    const webhookFirst = await graphOf(a, events(a));
    const listingFirst = await graphOf(b, [...events(b)].reverse());
    expect(listingFirst).toEqual(webhookFirst);
    const pr = (await g.nodeOf(b.tenant_id, 'codehost.pull_request', EXT))!;
    expect(pr.props).toMatchObject({ title: 'Renamed later', body: 'Body from the pulls listing', state: 'open' });
    // A prop only the webhook knows is kept.
    expect(pr.props.html_url).toBe('https://github.com/Codertocat/Hello-World/pull/2');
  });

  it('a listing whose payload does not fit is kept out of the graph, not an error', async () => {
    const inst = await g.freshInstall('codehost', '9000006');
    const e = asRaw(backfillPullEvent(inst, REPO, listed('2019-05-15T15:21:00Z')));
    (e.payload as Record<string, unknown>).pr_number = 3;
    await g.project(inst, e);
    expect(await g.nodeOf(inst.tenant_id, 'codehost.pull_request', EXT)).toBeNull();
  });
});

describe('graph: issues.transferred (INTERFACE §9.5)', () => {
  // The recorded delivery: octo-org/octo-repo#1 moved to Codertocat/Hello-World#1.
  const transferred = example('issues', 'transferred');
  const OLD = `${transferred.repository.full_name}#1`;
  const NEW = `${transferred.changes.new_repository.full_name}#1`;
  /** The recorded issue_comment, as if made on the issue before it moved. */
  const commentBefore = () => {
    const c = example('issue_comment', 'created');
    c.repository = transferred.repository;
    c.issue = transferred.issue;
    return { id: 'delivery-comment', kind: 'issue_comment.created', payload: c };
  };
  const repoOf = (n: { edges: Array<{ type: string; toName: string }> }) =>
    n.edges.filter((e) => e.type === 'in_repo').map((e) => e.toName);

  it('moves the node to the new repository with its id and edges; a replay changes nothing', async () => {
    const inst = await g.freshInstall('codehost', '9000010');
    await g.project(inst, commentBefore());
    const before = (await g.nodeOf(inst.tenant_id, 'codehost.issue', OLD))!;
    const move = { id: 'delivery-transferred', kind: 'issues.transferred', payload: transferred };
    await g.project(inst, move);
    expect(await g.nodeOf(inst.tenant_id, 'codehost.issue', OLD)).toBeNull();
    const after = (await g.nodeOf(inst.tenant_id, 'codehost.issue', NEW))!;
    expect(after.id).toBe(before.id);
    expect(after.props).toMatchObject({ repo_full_name: transferred.changes.new_repository.full_name, number: 1 });
    expect(repoOf(after)).toEqual([`codehost.repository ${transferred.changes.new_repository.id}`]);
    expect(after.edges).toContainEqual(expect.objectContaining({ type: 'comment_on', to: after.id }));
    expect(after.edges).toContainEqual(expect.objectContaining({ type: 'authored_by', from: after.id }));
    const tables = await g.rawTables(inst.tenant_id);
    await g.project(inst, move);
    expect(await g.rawTables(inst.tenant_id)).toEqual(tables);
  });

  it("when the new repository's issue is already a node, the old one's edges join it and the old node goes", async () => {
    const inst = await g.freshInstall('codehost', '9000011');
    const opened = example('issues', 'opened');
    expect(`${opened.repository.full_name}#${opened.issue.number}`).toBe(NEW);
    await g.project(inst, { id: 'delivery-opened', kind: 'issues.opened', payload: opened });
    const existing = (await g.nodeOf(inst.tenant_id, 'codehost.issue', NEW))!;
    await g.project(inst, commentBefore());
    await g.project(inst, { id: 'delivery-transferred', kind: 'issues.transferred', payload: transferred });
    expect(await g.nodeOf(inst.tenant_id, 'codehost.issue', OLD)).toBeNull();
    const merged = (await g.nodeOf(inst.tenant_id, 'codehost.issue', NEW))!;
    expect(merged.id).toBe(existing.id);
    expect(merged.edges).toContainEqual(expect.objectContaining({ type: 'comment_on', to: merged.id }));
    expect(repoOf(merged)).toEqual([`codehost.repository ${opened.repository.id}`]);
  });
});
