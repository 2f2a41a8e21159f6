/**
 * Integration: slash commands end to end (spec §4.4, §6.3; INTERFACE §6, §8.7, §8.8) on a
 * real node: a signed `issue_comment.created` webhook (GitHub's recorded payload) goes
 * through the ingest stream to the install actor, whose afterCommit asks the repo's
 * indexer session, which calls the fake daemon at the URL made from the template; the
 * reply is posted on the fake GitHub under the sentinel. Also: help without the daemon,
 * daemon errors and timeouts as plain replies, truncation of multi-byte text, our own
 * reply never retriggering, redeliveries answered once, one reply per installation.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  examplePayload,
  forInstallation,
  startCodehostHarness,
  type CodehostHarness,
} from '../support/github-harness.js';
import type { FakeComment } from 'connector-service/testing';
import { FakeIndexerDaemon } from 'connector-service/testing';
import { until } from '../support/until.js';

const SENTINEL = '<!-- service:slash-reply -->';
const REPO = 'Codertocat/Hello-World';
const REPO_ID = 186853002;
let h: CodehostHarness;
let daemon: FakeIndexerDaemon;
let tenant: Awaited<ReturnType<CodehostHarness['tenant']>>;
let installId: string;
let nextComment = 900_000_000 + Math.floor(Math.random() * 1_000_000);
let nextIssue = 1000;
const P = 8_200_000 + Math.floor(Math.random() * 100_000);

beforeAll(async () => {
  daemon = await FakeIndexerDaemon.start();
  h = await startCodehostHarness({ SERVICE_INDEXER_DAEMON_URL_TEMPLATE: daemon.template });
  tenant = await h.tenant('slash');
  installId = await h.install(tenant, P);
});
afterAll(async () => {
  await h?.stop();
  await daemon?.close();
});
beforeEach(() => daemon.reset());

function commentEvent(
  body: string,
  opts: { installation?: number; issue?: number; id?: number; userType?: string } = {},
) {
  const p = forInstallation(examplePayload('issue_comment', 'created'), opts.installation ?? P) as Record<string, any>;
  const type = opts.userType ?? 'User';
  return {
    ...p,
    issue: { ...p.issue, number: opts.issue ?? nextIssue++ },
    comment: {
      ...p.comment,
      id: opts.id ?? nextComment++,
      body,
      user: { ...p.comment.user, type },
      created_at: new Date(Date.now() - 1000).toISOString(),
    },
    sender: { ...p.sender, type },
  };
}

const repliesOn = (issue: number): FakeComment[] =>
  [...h.gh.repos.comments.values()].filter(
    (c) => c.repo === REPO && c.issue_number === issue && c.body.includes(SENTINEL),
  );

async function ask(
  body: string,
  opts: Parameters<typeof commentEvent>[1] = {},
): Promise<{ reply: FakeComment; issue: number; event: ReturnType<typeof commentEvent> }> {
  const event = commentEvent(body, opts);
  const issue = event.issue.number as number;
  expect((await h.deliver('issue_comment', event)).status).toBe(202);
  const [reply] = await until(
    `a reply on #${issue}`,
    async () => {
      const r = repliesOn(issue);
      return r.length > 0 ? r : null;
    },
    { timeoutMs: 15_000 },
  );
  return { reply: reply!, issue, event };
}

const codePoints = (s: string) => [...s].length;

describe('codehost slash commands', () => {
  for (const [verb, argument, tool, key] of [
    ['explain', 'Foo.bar', 'service_explain', 'symbol'],
    ['impact', 'parseArgs', 'service_impact', 'symbol'],
    ['slice', 'src/app/main.ts', 'service_slice', 'path'],
    ['query', 'where are retries\nconfigured?', 'service_query', 'query'],
  ] as const) {
    it(`/service ${verb} calls ${tool} on the repo's daemon and replies under the sentinel`, async () => {
      daemon.set({ toolText: (name, args) => `answer from ${name}: ${JSON.stringify(args)}` });
      const { reply } = await ask(`/service ${verb} ${argument}`);
      expect(reply.body.startsWith(`${SENTINEL}\n`)).toBe(true);
      expect(reply.body).toContain(`answer from ${tool}: ${JSON.stringify({ [key]: argument })}`);
      expect(reply.user.type).toBe('Bot');
      // INTERFACE §6: the URL is the template with the install id and the numeric repo id.
      const calls = daemon.callsOf('tools/call');
      expect(calls).toEqual([
        {
          path: daemon.pathOf(installId, REPO_ID),
          method: 'tools/call',
          params: { name: tool, arguments: { [key]: argument } },
          at: expect.any(Number),
        },
      ]);
    });
  }

  it('/service help renders inline without the daemon', async () => {
    const { reply } = await ask('/service help');
    for (const v of ['explain', 'impact', 'slice', 'query']) expect(reply.body).toContain(`/service ${v}`);
    expect(daemon.callsOf('tools/call')).toHaveLength(0);
  });

  it('a JSON-RPC error and an HTTP error from the daemon become plain replies saying what failed', async () => {
    daemon.set({ rpcError: { methods: ['tools/call'], code: -32000, message: 'index not built yet' } });
    const { reply } = await ask('/service explain Foo');
    expect(reply.body).toContain('could not be answered');
    expect(reply.body).toContain('index not built yet');
    daemon.set({ rpcError: null, httpStatus: 502 });
    const second = await ask('/service impact Foo');
    expect(second.reply.body).toContain('could not be answered: the indexer daemon answered HTTP 502');
  });

  it('truncates a long multi-byte answer to 60 000 code points with a visible note, never splitting a pair', async () => {
    // Three-byte characters, then emoji (surrogate pairs) where the cut lands. The fake GitHub
    // refuses bodies over 65 536 UTF-16 units, so the all-emoji case is a unit test.
    daemon.set({ toolText: () => '漢'.repeat(59_700) + '😀'.repeat(400) });
    const { reply } = await ask('/service query everything');
    expect(codePoints(reply.body)).toBeLessThanOrEqual(60_000);
    expect(codePoints(reply.body)).toBeGreaterThan(59_800);
    expect(reply.body).toMatch(/truncated/);
    expect(reply.body.startsWith(SENTINEL)).toBe(true);
    expect(reply.body).toContain('漢😀');
    expect(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(reply.body)).toBe(false);
  });

  it('our own reply does not retrigger: sentinel, bot sender, or its id re-attributed to a user', async () => {
    const { reply, issue } = await ask('/service help');
    const before = h.gh.repos.comments.size;
    // The reply's own webhook, as GitHub sends it (bot sender, body with the sentinel).
    const echo = commentEvent(reply.body, { issue, id: reply.id, userType: 'Bot' });
    expect((await h.deliver('issue_comment', echo)).status).toBe(202);
    // A mirror tool that stripped the sentinel and re-attributed it to a user (Tier 2 by comment id).
    const mirrored = commentEvent('/service help', { issue, id: reply.id, userType: 'User' });
    expect((await h.deliver('issue_comment', mirrored)).status).toBe(202);
    // A person quoting a reply with its sentinel.
    expect((await h.deliver('issue_comment', commentEvent(`${SENTINEL}\n/service help`, { issue }))).status).toBe(202);
    // A marker event after them, to know the three were processed.
    const last = await ask('/service help', { issue: issue + 100_000 });
    expect(last.reply).toBeDefined();
    expect(repliesOn(issue)).toHaveLength(1);
    expect(h.gh.repos.comments.size).toBe(before + 1);
  });

  it('a redelivered command (same delivery, or the same comment in another delivery) is answered once', async () => {
    const event = commentEvent('/service help');
    const issue = event.issue.number as number;
    await h.deliver('issue_comment', event, { delivery: `dup-${issue}` });
    await until('first reply', async () => repliesOn(issue).length === 1);
    await h.deliver('issue_comment', event, { delivery: `dup-${issue}` });
    await h.deliver('issue_comment', event, { delivery: `other-${issue}` });
    await ask('/service help', { issue: issue + 100_000 });
    expect(repliesOn(issue)).toHaveLength(1);
    const recorded = await h.node.pool.query(
      `SELECT provider_id FROM emitted_events WHERE install_id = $1 AND kind = 'codehost.slash_reply'
       AND issue_or_pr_number = $2`,
      [installId, issue],
    );
    expect(recorded.rows).toEqual([{ provider_id: `slash-reply-to:${event.comment.id}` }]);
  });

  it('answers once per installation: only its oldest active install replies (INTERFACE §8.7)', async () => {
    const Q = P + 1;
    const first = await h.tenant('first');
    const second = await h.tenant('second');
    const firstInstall = await h.install(first, Q);
    await h.install(second, Q);
    const { reply, issue } = await ask('/service explain Shared', { installation: Q });
    expect(reply.body).toContain('service_explain');
    expect(daemon.callsOf('tools/call').map((c) => c.path)).toEqual([daemon.pathOf(firstInstall, REPO_ID)]);
    await ask('/service help', { installation: Q, issue: issue + 100_000 });
    expect(repliesOn(issue)).toHaveLength(1);
  });
});
