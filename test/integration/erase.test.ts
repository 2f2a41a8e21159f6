/**
 * `POST /api/v1/graph/erase` (INTERFACE §10.5): a platform user's text is gone from the graph,
 * search, the stored events and the dead letters, and stays gone whatever of theirs arrives
 * after the erase: a chat message delivered late, the chat backfill of a reinstall re-reading
 * the channel's history, a code-host comment, edit or review of the erased login, another
 * user's event that carries the login's issue again, the backfill re-reading a repository's
 * pulls. Another user's text stays; the erase is audited; another
 * tenant's install answers 404. One node serves both connectors.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  messageEvent,
  nextTs,
  seedRepos,
  type FakeChannel,
  type FakeMessage,
  type FakeTeam,
} from 'connector-service/testing';
import { fromSlackEvent } from '../../src/connectors/chatapp/normalize-event.js';
import { encodeIngestMessage, ingestMsgId } from '../../src/ingest/message.js';
import type { IngestEvent } from '../../src/runtime/ports.js';
import { installKey, names as makeNames, shardOf } from '../../src/runtime/names.js';
import { recordDeadLetter } from '../../src/store/dead-letters.js';
import { examplePayload, forInstallation, type CodehostHarness } from '../support/github-harness.js';
import {
  allEvents,
  installOk,
  json,
  startBothConnectors,
  type ChatStack,
  type Tenant,
} from '../support/slack-harness.js';
import { columnsHolding } from '../support/text-in-db.js';
import { until } from '../support/until.js';

let h: CodehostHarness;
let s: ChatStack;
let team: FakeTeam;
let ch: FakeChannel;
let tenant: Tenant;
let other: Tenant;
let installId: string;

beforeAll(async () => {
  ({ h, s } = await startBothConnectors());
  team = s.slack.addTeam();
  ch = s.slack.addChannel(team.id, { type: 'channel' });
  tenant = await s.node.tenant('erasing');
  other = await s.node.tenant('other');
  installId = (await installOk(s, tenant, team.id)).install_id;
}, 60_000);
afterAll(() => s?.stop());

/** What the ingest consumer records after the last failed delivery of `event` (dead-letters.test.ts). */
async function deadLetter(event: IngestEvent): Promise<void> {
  const n = makeNames(s.node.namespace);
  await recordDeadLetter(s.node.pool, {
    stream: n.ingestStream,
    streamSeq: 1,
    subject: n.ingestSubject(
      shardOf(installKey(event.installId), s.node.config.shards),
      event.connectorId,
      event.installId,
    ),
    msgId: ingestMsgId(event.installId, event.id),
    installId: event.installId,
    deliveries: 8,
    error: 'relation "graph_nodes" is locked',
    payload: encodeIngestMessage(event),
  });
}

const word = () => `ers${randomBytes(5).toString('hex')}x`;
const post = async (user: string, text: string) => {
  const m: FakeMessage = { ts: nextTs(), user, text };
  expect((await s.slack.deliver(team.id, messageEvent(team, ch, m))).status).toBe(200);
  await until(
    'the message event stored',
    async () => (await allEvents(s.node.url, tenant, installId)).some((e) => e.id === `message:${ch.id}:${m.ts}`),
    { timeoutMs: 10_000 },
  );
  return m;
};
const search = async (q: string, t: Tenant = tenant) => {
  const r = await fetch(`${s.node.url}/api/v1/graph/nodes?q=${encodeURIComponent(q)}`, { headers: t.auth });
  return (await json(r)).nodes as unknown[];
};
const erase = (t: Tenant, body: unknown, requestId = 'erase-req') =>
  fetch(`${s.node.url}/api/v1/graph/erase`, {
    method: 'POST',
    headers: { ...t.auth, 'content-type': 'application/json', 'x-request-id': requestId },
    body: JSON.stringify(body),
  });

describe('POST /api/v1/graph/erase', () => {
  it("forgets the text of everything the user wrote, before and after, and nobody else's", async () => {
    const [a, b, kept, late] = [word(), word(), word(), word()];
    await post('U0ERASE', `first ${a}`);
    await post('U0ERASE', `second ${b}`);
    await post('U0KEEP', `other ${kept}`);
    expect(await search(a)).toHaveLength(1);
    // A message of theirs that could not be stored at the time: its dead letter holds the text.
    const dead = word();
    const failed: FakeMessage = { ts: nextTs(), user: 'U0ERASE', text: `failed ${dead}` };
    const draft = fromSlackEvent(messageEvent(team, ch, failed))!;
    await deadLetter({ installId, tenantId: tenant.tenant_id, connectorId: 'chatapp', ...draft });
    expect(await columnsHolding(s.node.pool, dead)).toEqual(['dead_letters.payload']);

    const res = await erase(tenant, { install_id: installId, user_external_id: `${team.id}:U0ERASE` });
    expect(res.status).toBe(200);
    const body = await json(res);
    expect(body.erased.events).toBe(2);
    expect(body.erased.nodes).toBeGreaterThanOrEqual(2);
    for (const w of [a, b, dead]) {
      expect(await search(w)).toEqual([]);
      expect(await columnsHolding(s.node.pool, w)).toEqual([]);
    }
    expect(await search(kept)).toHaveLength(1);

    // A message of theirs that arrives later (a backfill, a late delivery) is stored without text.
    const m = await post('U0ERASE', `late ${late}`);
    const stored = (await allEvents(s.node.url, tenant, installId)).find((e) => e.id === `message:${ch.id}:${m.ts}`);
    expect(stored?.payload).toMatchObject({ user: 'U0ERASE', ts: m.ts });
    expect(stored?.payload).not.toHaveProperty('text');
    expect(await columnsHolding(s.node.pool, late)).toEqual([]);

    const audit = await json(await fetch(`${s.node.url}/api/v1/audit`, { headers: tenant.auth }));
    expect(audit.entries.find((e: { request_id: string }) => e.request_id === 'erase-req')).toMatchObject({
      action: 'erase',
      outcome: 'ok',
    });
  });

  it("answers 404 for another tenant's install and 400 for a malformed body", async () => {
    const foreign = await erase(other, { install_id: installId, user_external_id: `${team.id}:U0KEEP` });
    expect(foreign.status).toBe(404);
    expect((await json(foreign)).error.code).toBe('not_found');
    expect((await erase(tenant, { install_id: 'nope', user_external_id: 'x' })).status).toBe(400);
    expect((await erase(tenant, { install_id: installId })).status).toBe(400);
  });

  it("a backfill after a reinstall re-reads the erased user's history without its text", async () => {
    const [old, keptOld] = [word(), word()];
    // In Slack's history only: never delivered live, read by the new install's backfill.
    const mine: FakeMessage = { ts: nextTs(), user: 'U0ERASE', text: `history ${old}` };
    const theirs: FakeMessage = { ts: nextTs(), user: 'U0KEEP', text: `history ${keptOld}` };
    ch.messages.push(mine, theirs);
    const gone = await fetch(`${s.node.url}/api/v1/connectors/installs/${installId}`, {
      method: 'DELETE',
      headers: tenant.auth,
    });
    expect(gone.status).toBe(200);
    const again = (await installOk(s, tenant, team.id)).install_id;
    // The walk publishes what it reads; its events are committed after it: wait for both.
    const [read, other] = await until(
      'both history messages stored by the reinstall',
      async () => {
        const events = await allEvents(s.node.url, tenant, again);
        const found = [mine, theirs].map((m) => events.find((e) => e.id === `message:${ch.id}:${m.ts}`));
        return found.every((e) => e !== undefined) ? found : null;
      },
      { timeoutMs: 20_000 },
    );
    expect(read?.payload).toMatchObject({ user: 'U0ERASE', ts: mine.ts });
    expect(read?.payload).not.toHaveProperty('text');
    expect(other?.payload).toMatchObject({ text: `history ${keptOld}` });
    expect(await columnsHolding(s.node.pool, old)).toEqual([]);
    await until("the other user's message in the graph", async () => (await search(keptOld)).length === 1, {
      timeoutMs: 10_000,
    });
  });
});

describe('POST /api/v1/graph/erase, code host', () => {
  const P = 9_300_000 + Math.floor(Math.random() * 100_000);
  const OWNER = `ers-org-${P}`;
  const LOGIN = `erased-${P}`;
  const KEPT = `kept-${P}`;
  const ISSUE = 7;
  let code: Tenant;
  let codeInstall: string;

  const user = (login: string) => ({ login, id: login === LOGIN ? 1 : 2, type: 'User' });
  /** An `issue_comment` on the login's issue (GitHub sends the issue, its body too, with every comment). */
  const commentPayload = (by: string, commentId: number, body: string, issueBody: string, action = 'created') => {
    const p = forInstallation(examplePayload('issue_comment', action), P) as Record<string, any>;
    return {
      ...p,
      issue: { ...p.issue, number: ISSUE, body: issueBody, user: { ...p.issue.user, ...user(LOGIN) } },
      comment: { ...p.comment, id: commentId, body, user: { ...p.comment.user, ...user(by) } },
    };
  };
  const reviewPayload = (by: string, body: string) => {
    const p = forInstallation(examplePayload('pull_request_review', 'submitted'), P) as Record<string, any>;
    return { ...p, review: { ...p.review, id: P, body, user: { ...p.review.user, ...user(by) } } };
  };
  /** A push of one commit by `by` (author and committer), its message and email naming `w`. */
  const pushPayload = (by: string, w: string) => {
    const p = forInstallation(examplePayload('push'), P) as Record<string, any>;
    const person = { name: `${by} ${w}`, email: `${w}@mail.test`, username: by };
    const commit = { ...p.head_commit, id: randomBytes(20).toString('hex'), message: `commit ${w}` };
    const c = { ...commit, author: person, committer: person };
    return { ...p, ref: 'refs/heads/main', commits: [c], head_commit: c, pusher: { name: by, email: person.email } };
  };
  const commitNode = async (sha: string) => {
    const r = await fetch(`${s.node.url}/api/v1/graph/nodes?kind=codehost.commit&limit=500`, { headers: code.auth });
    const nodes = (await json(r)).nodes as Array<{ external_id: string; props: Record<string, unknown> }>;
    return nodes.find((n) => n.external_id === sha) ?? null;
  };
  const codeEvents = () => allEvents(s.node.url, code, codeInstall);
  const storedCode = (id: string) =>
    until(`event ${id} stored`, async () => (await codeEvents()).find((e) => e.id === id), { timeoutMs: 20_000 });
  const send = async (event: string, payload: unknown) => {
    const delivery = randomUUID();
    expect((await h.deliver(event, payload, { delivery })).status).toBe(202);
    return storedCode(delivery);
  };
  const expectGone = async (w: string) => {
    expect(await search(w, code)).toEqual([]);
    expect(await columnsHolding(s.node.pool, w)).toEqual([]);
  };

  beforeAll(async () => {
    h.gh.addInstallation(P, OWNER);
    seedRepos(h.gh.pulls, P, OWNER, [0], 930_000 + (P % 1000) * 20);
    code = await h.tenant('erasing-code');
    codeInstall = await h.install(code as Tenant & { user_id: string }, P);
  });

  it("forgets the login's text, and its later comments, edits, reviews, commits and backfilled pulls come without it", async () => {
    const [issueText, mine, dead, committed] = [word(), word(), word(), word()];
    await send('issue_comment', commentPayload(LOGIN, P, `mine ${mine}`, `issue ${issueText}`));
    const pushed = pushPayload(LOGIN, committed);
    await send('push', pushed);
    await until('the commit in the graph', () => commitNode(pushed.head_commit.id), { timeoutMs: 10_000 });
    await until('the comment in the graph', async () => (await search(mine, code)).length === 1, {
      timeoutMs: 10_000,
    });
    // A review of theirs that could not be stored at the time: its dead letter holds the text.
    await deadLetter({
      installId: codeInstall,
      tenantId: code.tenant_id,
      connectorId: 'codehost',
      id: randomUUID(),
      kind: 'pull_request_review.submitted',
      occurredAt: null,
      payload: reviewPayload(LOGIN, `failed ${dead}`),
    });
    expect(await columnsHolding(s.node.pool, dead)).toEqual(['dead_letters.payload']);

    const res = await erase(code, { install_id: codeInstall, user_external_id: LOGIN }, 'erase-code');
    expect(res.status).toBe(200);
    expect((await json(res)).erased).toEqual({ nodes: 3, events: 2 });
    for (const w of [issueText, mine, dead, committed]) await expectGone(w);
    expect((await commitNode(pushed.head_commit.id))?.props).toMatchObject({ message: null, author_name: null });

    // Another user's comment carries the login's issue, its body included: the body stays forgotten.
    const theirs = word();
    const reply = await send('issue_comment', commentPayload(KEPT, P + 1, `reply ${theirs}`, `issue ${issueText}`));
    expect(reply.payload).toMatchObject({ issue: { user: { login: LOGIN } }, comment: { body: `reply ${theirs}` } });
    expect(reply.payload.issue).not.toHaveProperty('body');
    expect(await search(theirs, code)).toHaveLength(1);

    // The login edits its comment (the text before the edit comes along) and reviews a pull request.
    const [edited, before, review] = [word(), word(), word()];
    const edit = await send('issue_comment', {
      ...commentPayload(LOGIN, P, `edited ${edited}`, `issue ${issueText}`, 'edited'),
      changes: { body: { from: `mine ${before}` } },
    });
    expect(edit.payload).toMatchObject({ comment: { id: P, user: { login: LOGIN } }, changes: {} });
    const reviewed = await send('pull_request_review', reviewPayload(LOGIN, `review ${review}`));
    expect(reviewed.payload).toMatchObject({ review: { id: P, user: { login: LOGIN } } });
    // And pushes a commit: its message, name and email stay out.
    const later = word();
    const pushedLater = pushPayload(LOGIN, later);
    const stored = await send('push', pushedLater);
    expect(stored.payload).toMatchObject({ head_commit: { message: '', author: { username: LOGIN } } });
    const node = await until('the later commit in the graph', () => commitNode(pushedLater.head_commit.id), {
      timeoutMs: 10_000,
    });
    expect(node.props).toMatchObject({ message: '' });

    // A repository added later is backfilled: its pulls listing brings the login's pull request.
    const [prText, prKept] = [word(), word()];
    const added = seedRepos(h.gh.pulls, P, `${OWNER}-b`, [0], 930_000 + (P % 1000) * 20 + 5)[0]!;
    const diff = 'diff --git a/f b/f\n+line\n';
    added.pulls.push(
      { number: 1, title: 'Mine', diff, body: `pr ${prText}`, user: { login: LOGIN, id: 1 } },
      { number: 2, title: 'Theirs', diff, body: `pr ${prKept}`, user: { login: KEPT, id: 2 } },
    );
    const p = forInstallation(examplePayload('installation_repositories', 'added'), P) as Record<string, any>;
    const listed = {
      id: added.id,
      node_id: `R_${added.id}`,
      name: 'repo-0',
      full_name: added.full_name,
      private: true,
    };
    expect(
      (await h.deliver('installation_repositories', { ...p, repositories_added: [listed], repositories_removed: [] }))
        .status,
    ).toBe(202);
    const pulled = await storedCode(`backfill:pr:${added.id}:1`);
    expect(pulled.payload).toMatchObject({ pull_request: { number: 1, user: { login: LOGIN } } });
    await storedCode(`backfill:pr:${added.id}:2`);
    await until('the other pull request in the graph', async () => (await search(prKept, code)).length === 1, {
      timeoutMs: 10_000,
    });

    for (const w of [issueText, mine, dead, committed, edited, before, review, later, prText]) await expectGone(w);
  });
});
