/**
 * Integration: slash commands in PR review comments end to end (spec §4.4, §6.3;
 * INTERFACE §6, §8.7, §8.8) on a real node: a signed `pull_request_review_comment.created`
 * webhook (GitHub's recorded payload) is answered in the same review thread
 * (`POST /repos/{o}/{r}/pulls/{n}/comments/{comment_id}/replies`, at the thread's first
 * comment) under the slash-reply sentinel, with the rules of issue-comment commands: bots
 * and our own replies never trigger one, one reply per installation, truncation at 60 000
 * code points, a redelivery answered once.
 */
import { Octokit } from '@octokit/rest';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { replyExists } from '../../src/connectors/codehost/slash/find-reply.js';
import { replyMarker } from '../../src/connectors/codehost/slash/render-reply.js';
import {
  examplePayload,
  forInstallation,
  startCodehostHarness,
  type CodehostHarness,
} from '../support/github-harness.js';
import { seedReviewComment, type FakeReviewComment } from 'connector-service/testing';
import { FakeIndexerDaemon } from 'connector-service/testing';
import { until } from '../support/until.js';

const SENTINEL = '<!-- service:slash-reply -->';
const REPO = 'Codertocat/Hello-World';
const REPO_ID = 186853002;
let h: CodehostHarness;
let daemon: FakeIndexerDaemon;
let installId: string;
let nextComment = 700_000_000 + Math.floor(Math.random() * 1_000_000);
let nextPr = 3000;
const P = 8_800_000 + Math.floor(Math.random() * 100_000);

beforeAll(async () => {
  daemon = await FakeIndexerDaemon.start();
  h = await startCodehostHarness({ SERVICE_INDEXER_DAEMON_URL_TEMPLATE: daemon.template });
  installId = await h.install(await h.tenant('slash-review'), P);
});
afterAll(async () => {
  await h?.stop();
  await daemon?.close();
});
beforeEach(() => daemon.reset());

/** A person's review comment on a fresh PR (or in a given thread), posted on the fake GitHub, and its webhook. */
function reviewComment(
  body: string,
  opts: { installation?: number; pr?: number; inReplyTo?: number; id?: number; userType?: string } = {},
) {
  const pr = opts.pr ?? nextPr++;
  const id = opts.id ?? nextComment++;
  const type = opts.userType ?? 'User';
  if (!h.gh.repos.reviewComments.has(id))
    seedReviewComment(h.gh.repos, {
      id,
      repo: REPO,
      pull_number: pr,
      body,
      ...(opts.inReplyTo ? { in_reply_to_id: opts.inReplyTo } : {}),
    });
  const p = forInstallation(examplePayload('pull_request_review_comment', 'created'), opts.installation ?? P) as Record<
    string,
    any
  >;
  return {
    ...p,
    pull_request: { ...p.pull_request, number: pr },
    comment: {
      ...p.comment,
      id,
      body,
      ...(opts.inReplyTo ? { in_reply_to_id: opts.inReplyTo } : {}),
      user: { ...p.comment.user, type },
      created_at: new Date(Date.now() - 1000).toISOString(),
    },
    sender: { ...p.sender, type },
  };
}

const repliesOn = (pr: number): FakeReviewComment[] =>
  [...h.gh.repos.reviewComments.values()].filter(
    (c) => c.repo === REPO && c.pull_number === pr && c.body.includes(SENTINEL),
  );

async function ask(body: string, opts: Parameters<typeof reviewComment>[1] = {}) {
  const event = reviewComment(body, opts);
  const pr = event.pull_request.number as number;
  expect((await h.deliver('pull_request_review_comment', event)).status).toBe(202);
  const [reply] = await until(
    `a reply on PR #${pr}`,
    async () => {
      const r = repliesOn(pr);
      return r.length > 0 ? r : null;
    },
    { timeoutMs: 15_000 },
  );
  return { reply: reply!, pr, event };
}

describe('codehost slash commands in PR review comments', () => {
  it('answers in the same review thread through the replies endpoint, calling the daemon', async () => {
    daemon.set({ toolText: (name, args) => `answer from ${name}: ${JSON.stringify(args)}` });
    const { reply, pr, event } = await ask('/service explain Foo.bar');
    expect(reply.body.startsWith(`${SENTINEL}\n`)).toBe(true);
    expect(reply.body).toContain('answer from service_explain: {"symbol":"Foo.bar"}');
    expect(reply).toMatchObject({ in_reply_to_id: event.comment.id, user: { type: 'Bot' } });
    expect(
      h.gh.callsTo('POST', new RegExp(`^/repos/${REPO}/pulls/${pr}/comments/${event.comment.id}/replies$`)),
    ).toHaveLength(1);
    // Not an issue comment.
    expect([...h.gh.repos.comments.values()].filter((c) => c.issue_number === pr)).toHaveLength(0);
    expect(daemon.callsOf('tools/call').map((c) => c.path)).toEqual([daemon.pathOf(installId, REPO_ID)]);
  });

  it('a command that is itself a reply is answered at its thread’s first comment', async () => {
    const root = reviewComment('please look at this line');
    const pr = root.pull_request.number as number;
    const { reply, event } = await ask('/service help', { pr, inReplyTo: root.comment.id });
    expect(reply.in_reply_to_id).toBe(root.comment.id);
    expect(h.gh.callsTo('POST', new RegExp(`/pulls/${pr}/comments/${root.comment.id}/replies$`))).toHaveLength(1);
    expect(h.gh.callsTo('POST', new RegExp(`/pulls/${pr}/comments/${event.comment.id}/replies$`))).toHaveLength(0);
    expect(reply.body).toContain('/service explain');
    expect(daemon.callsOf('tools/call')).toHaveLength(0);
  });

  it('truncates a long multi-byte answer to 60 000 code points with a visible note', async () => {
    daemon.set({ toolText: () => '漢'.repeat(59_700) + '😀'.repeat(400) });
    const { reply } = await ask('/service query everything');
    expect([...reply.body].length).toBeLessThanOrEqual(60_000);
    expect([...reply.body].length).toBeGreaterThan(59_800);
    expect(reply.body).toMatch(/truncated/);
    expect(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(reply.body)).toBe(false);
  });

  it('never answers a bot, our own reply (sentinel, or its id re-attributed to a user), and answers a redelivery once', async () => {
    const { reply, pr, event } = await ask('/service help');
    // The reply's own webhook, as GitHub sends it (bot sender, body with the sentinel).
    await h.deliver(
      'pull_request_review_comment',
      reviewComment(reply.body, { pr, id: reply.id, inReplyTo: event.comment.id, userType: 'Bot' }),
    );
    // A mirror tool that stripped the sentinel and re-attributed it to a user (Tier 2 by comment id).
    await h.deliver(
      'pull_request_review_comment',
      reviewComment('/service help', { pr, id: reply.id, inReplyTo: event.comment.id }),
    );
    // A bot's command.
    await h.deliver('pull_request_review_comment', reviewComment('/service help', { pr, userType: 'Bot' }));
    // The command again in another delivery: its reply record answers it.
    await h.deliver('pull_request_review_comment', event);
    // A marker command after them, to know they were processed.
    await ask('/service help', { pr: pr + 100_000 });
    expect(repliesOn(pr)).toHaveLength(1);
    const recorded = await h.node.pool.query(
      `SELECT kind, provider_id FROM emitted_events WHERE install_id = $1 AND issue_or_pr_number = $2 ORDER BY kind`,
      [installId, pr],
    );
    expect(recorded.rows).toEqual([
      { kind: 'codehost.review_comment', provider_id: String(reply.id) },
      { kind: 'codehost.slash_reply', provider_id: `slash-reply-to:review-comment:${event.comment.id}` },
    ]);
  });

  it('a redelivery whose reply record was lost can find the reply among the PR’s review comments by its marker', async () => {
    // afterCommit's `inserted: false` path (a JetStream redelivery after a crash) asks this; a webhook cannot force it.
    const { reply, pr, event } = await ask('/service help');
    const token = `ghs_find_${P}`;
    h.gh.tokens.set(token, { installationId: P, createdAt: 0, expiresAt: Date.now() + 3_600_000 });
    const octokit = new Octokit({ auth: token, baseUrl: h.gh.url });
    const place = { repo_full_name: REPO, number: pr, in: 'review_comments' as const };
    const signal = new AbortController().signal;
    const since = event.comment.created_at as string;
    expect(await replyExists(octokit, h.appId, place, replyMarker(event.comment.id), since, signal)).toBe(true);
    expect(await replyExists(octokit, h.appId, place, replyMarker(event.comment.id + 1), since, signal)).toBe(false);
    // Only comments updated since the command are looked at.
    expect(
      await replyExists(
        octokit,
        h.appId,
        place,
        replyMarker(event.comment.id),
        new Date(Date.parse(reply.updated_at) + 1000).toISOString(),
        signal,
      ),
    ).toBe(false);
    expect(h.gh.callsTo('GET', new RegExp(`^/repos/${REPO}/pulls/${pr}/comments$`)).length).toBe(3);
  });

  it('answers once per installation: only its oldest active install replies (INTERFACE §8.7)', async () => {
    const Q = P + 1;
    const first = await h.install(await h.tenant('review-first'), Q);
    await h.install(await h.tenant('review-second'), Q);
    const { reply, pr } = await ask('/service impact Shared', { installation: Q });
    expect(reply.body).toContain('service_impact');
    expect(daemon.callsOf('tools/call').map((c) => c.path)).toEqual([daemon.pathOf(first, REPO_ID)]);
    await ask('/service help', { installation: Q, pr: pr + 100_000 });
    expect(repliesOn(pr)).toHaveLength(1);
  });
});
