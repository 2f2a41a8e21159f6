/** Chat write-back and health (spec §4.1; INTERFACE §3 emit, §8.4–§8.6, §8.26). */
import { Kvm } from '@nats-io/kv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHAT_WORKSPACE_KIND } from '../../src/actors/chatapp/chat-workspace-bucket-protocol.js';
import { available, WORKSPACE_BUCKET } from '../../src/connectors/chatapp/rate-buckets.js';
import { kvKey } from '../../src/runtime/kv-port.js';
import { names as makeNames } from '../../src/runtime/names.js';
import { emit, installOk, json, startChatStack, type ChatStack, type Tenant } from '../support/slack-harness.js';
import { nextTs, type FakeChannel, type FakeTeam } from 'connector-service/testing';
import { until } from '../support/until.js';

let s: ChatStack;
let team: FakeTeam;
let tenant: Tenant;
let installId: string;
const channels: FakeChannel[] = [];
/** No emit of this file is sent before this time. */
let firstEmitAt: number;

beforeAll(async () => {
  s = await startChatStack();
  team = s.slack.addTeam();
  tenant = await s.node.tenant();
  installId = (await installOk(s, tenant, team.id)).install_id;
  await until(
    'backfill complete',
    async () => {
      const r = await fetch(`${s.node.url}/api/v1/connectors/installs/${installId}`, { headers: tenant.auth });
      return (await json(r)).backfill.state === 'complete';
    },
    { timeoutMs: 10_000 },
  );
  // Created after the (empty) workspace's backfill ended, so the walk stays out of the counts below.
  for (let i = 0; i < 150; i++) channels.push(s.slack.addChannel(team.id, { name: `c${i}` }));
  firstEmitAt = Date.now();
});
afterAll(() => s?.stop());

const post = (channel: FakeChannel, text = 'hi', extra: Record<string, unknown> = {}) =>
  emit(s.node.url, tenant, installId, 'chatapp.message', { channel_id: channel.id, text, ...extra });
const ch = (i: number) => channels[i]!;
/** A channel no emit has written to yet, so its own bucket has its token. */
const freshChannel = () => s.slack.addChannel(team.id);
/**
 * A bound on the writes spent draining the workspace bucket: its 100 tokens plus one per 600 ms
 * for the two minutes the test may take. Past it the bucket is not running out.
 */
const MAX_WRITES = 100 + 120_000 / WORKSPACE_BUCKET.intervalMs;
/** Writes that reached Slack: each took one workspace token (spec §8). */
const writes = () => s.slack.callsOf('chat.postMessage').length + s.slack.callsOf('reactions.add').length;

/** The workspace bucket's GCRA `tat` as its actor keeps it in KV (chat-workspace-bucket.ts); 0 before any write. */
async function workspaceTat(): Promise<number> {
  const kv = await new Kvm(s.node.node.nc).open(makeNames(s.node.namespace).dedupBucket);
  const e = await kv.get(kvKey([CHAT_WORKSPACE_KIND, team.id]));
  return e !== null && e.operation === 'PUT' ? e.json<{ tat: number }>().tat : 0;
}

describe('chatapp emit', () => {
  it('posts a message (receipt = posted ts), replies in a thread, and writes emitted records', async () => {
    const res = await post(ch(0), 'hello from the graph');
    expect(res.status).toBe(200);
    const receipt = await json(res);
    expect(receipt).toEqual({
      provider_id: expect.stringMatching(/^\d+\.\d+$/),
      kind: 'chatapp.message',
      install_id: installId,
      emitted_at: expect.any(String),
    });
    expect(s.slack.posted.at(-1)).toMatchObject({
      channel: ch(0).id,
      ts: receipt.provider_id,
      text: 'hello from the graph',
    });
    const reply = await post(ch(1), 'in thread', { thread_ts: receipt.provider_id });
    expect(reply.status).toBe(502); // the parent is in another channel: Slack refuses, we say so
    expect((await json(reply)).error).toMatchObject({ code: 'upstream_error', upstream_error: 'thread_not_found' });
    await new Promise((r) => setTimeout(r, 1_000)); // the channel's bucket (1 post/s) has a token again
    const threaded = await post(ch(0), 'in thread', { thread_ts: receipt.provider_id });
    expect(threaded.status).toBe(200);
    expect(s.slack.posted.at(-1)).toMatchObject({ thread_ts: receipt.provider_id });
    const { rows } = await s.node.pool.query(
      `SELECT kind, repo_full_name, provider_id FROM emitted_events WHERE install_id = $1 ORDER BY emitted_at`,
      [installId],
    );
    expect(rows.slice(0, 2)).toEqual([
      { kind: 'chatapp.message', repo_full_name: ch(0).id, provider_id: receipt.provider_id },
      { kind: 'chatapp.message', repo_full_name: ch(0).id, provider_id: (await json(threaded)).provider_id },
    ]);
  });

  it('Idempotency-Key: the write is recorded with its key, so a retry after the receipt was lost replays it', async () => {
    const send = () =>
      fetch(`${s.node.url}/api/v1/connectors/installs/${installId}/emit`, {
        method: 'POST',
        headers: { ...tenant.auth, 'content-type': 'application/json', 'idempotency-key': 'k-node-death' },
        body: JSON.stringify({ kind: 'chatapp.message', body: { channel_id: ch(149).id, text: 'once only' } }),
      });
    const first = await send();
    expect(first.status).toBe(200);
    const receipt = await json(first);
    const { rows } = await s.node.pool.query(
      `SELECT provider_id FROM emitted_events WHERE tenant_id = $1 AND idempotency_key = 'k-node-death'`,
      [tenant.tenant_id],
    );
    expect(rows.map((r) => r.provider_id)).toEqual([receipt.provider_id]);
    // As if the node died between Slack's answer and storing the receipt: the claim has no
    // receipt and its lock has passed, so the retry takes it over (INTERFACE §9.3).
    await s.node.pool.query(
      `UPDATE idempotency_keys SET receipt = NULL, locked_until = now() - interval '1 second'
       WHERE tenant_id = $1 AND key = 'k-node-death'`,
      [tenant.tenant_id],
    );
    const posts = s.slack.posted.filter((p) => p.channel === ch(149).id).length;
    const retry = await send();
    expect(retry.status).toBe(200);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect((await json(retry)).provider_id).toBe(receipt.provider_id);
    expect(s.slack.posted.filter((p) => p.channel === ch(149).id)).toHaveLength(posts);
  });

  it('adds a reaction (receipt channel:ts:name); already_reacted is success', async () => {
    const target = ch(2);
    const ts = nextTs();
    target.messages.push({ ts, user: 'U0HUMAN', text: 'react to me' });
    const first = await emit(s.node.url, tenant, installId, 'chatapp.reaction', {
      channel_id: target.id,
      timestamp: ts,
      name: ':tada:',
    });
    expect(first.status).toBe(200);
    expect((await json(first)).provider_id).toBe(`${target.id}:${ts}:tada`);
    await new Promise((r) => setTimeout(r, 1_000)); // the channel's bucket has a token again
    const again = await emit(s.node.url, tenant, installId, 'chatapp.reaction', {
      channel_id: target.id,
      timestamp: ts,
      name: 'tada',
    });
    expect(again.status).toBe(200);
    expect(s.slack.callsOf('reactions.add').map((c) => c.error)).toEqual([undefined, 'already_reacted']);
  });

  it('refuses invalid bodies and other connectors kinds with bad_config before any upstream call', async () => {
    const calls = s.slack.calls.length;
    const bad: Array<[string, Record<string, unknown>]> = [
      ['chatapp.message', { channel_id: ch(3).id }],
      ['chatapp.message', { channel_id: ch(3).id, text: '   ' }],
      ['chatapp.message', { channel_id: 'not a channel', text: 'x' }],
      ['chatapp.message', { channel_id: ch(3).id, text: 'x', extra: true }],
      ['chatapp.reaction', { channel_id: ch(3).id, timestamp: 'yesterday', name: 'tada' }],
      ['chatapp.reaction', { channel_id: ch(3).id, timestamp: '1.2', name: 'no spaces' }],
      ['chatapp.file', { channel_id: ch(3).id }],
      ['codehost.label', { repo_full_name: 'a/b', issue_number: 1, labels: ['x'] }],
    ];
    for (const [kind, body] of bad) {
      const res = await emit(s.node.url, tenant, installId, kind, body);
      expect(res.status, `${kind} ${JSON.stringify(body)}`).toBe(400);
      expect((await json(res)).error.code).toBe('bad_config');
    }
    expect(s.slack.calls.length).toBe(calls);
  });

  it('never posts more than once per second to one channel; throttled emits answer 429 with Retry-After', async () => {
    const target = ch(4);
    const started = Date.now();
    const answers: Array<{ status: number; retryAfter: string | null; code?: string }> = [];
    // 100 emits over about 1.5 s, ten in flight at a time.
    for (let b = 0; b < 10; b++) {
      const rs = await Promise.all(Array.from({ length: 10 }, () => post(target, `burst ${b}`)));
      for (const r of rs)
        answers.push({
          status: r.status,
          retryAfter: r.headers.get('retry-after'),
          code: r.status === 200 ? undefined : (await json(r)).error.code,
        });
      await new Promise((r) => setTimeout(r, 150)); // pacing the client
    }
    const elapsed = Date.now() - started;
    const ok = answers.filter((a) => a.status === 200);
    const limited = answers.filter((a) => a.status === 429);
    expect(ok.length + limited.length).toBe(100);
    for (const l of limited) {
      expect(l.code).toBe('rate_limited');
      expect(Number(l.retryAfter)).toBeGreaterThanOrEqual(1);
    }
    const upstream = s.slack.posted.filter((p) => p.channel === target.id).map((p) => p.at);
    expect(upstream).toHaveLength(ok.length);
    expect(ok.length).toBeLessThanOrEqual(Math.floor(elapsed / 1000) + 1);
    expect(ok.length).toBeGreaterThanOrEqual(2);
    // The channel's bucket gives its first token no earlier than the burst's start and each next one
    // a second after the one before (on the actor's clock; the workspace bucket has tokens here, so
    // no emit waits on a timer): the i-th post cannot reach Slack before i seconds after the start,
    // however unevenly a loaded machine delays each post after its permit (that only makes posts
    // later). Ten emits in flight without a bucket would reach Slack ms apart.
    const arrived = [...upstream].sort((a, b) => a - b);
    for (let i = 0; i < arrived.length; i++)
      expect(arrived[i]! - started, `post ${i + 1} at Slack`).toBeGreaterThanOrEqual(i * 1000);
  });

  it('a throttled channel takes no workspace token; past 100 per minute an emit waits for one', async () => {
    const target = ch(5);
    // Fill the channel's second with refusals: none may charge the workspace bucket.
    const tatBefore = await workspaceTat();
    const burstStarted = Date.now();
    const burst = await Promise.all(Array.from({ length: 40 }, () => post(target, 'burst')));
    const burstEnded = Date.now();
    // One write per second of the channel: one, or one more for each further second the
    // 40 requests took to get through a loaded machine.
    for (const r of burst) expect([200, 429]).toContain(r.status);
    const written = burst.filter((r) => r.status === 200).length;
    expect(written).toBeGreaterThanOrEqual(1);
    expect(written).toBeLessThanOrEqual(1 + Math.floor((burstEnded - burstStarted) / 1000));
    // spec §8: each write charged one workspace token (600 ms of the bucket's tat); had the
    // refusals charged too, the tat would have moved on by 40 tokens, 24 s.
    expect(await workspaceTat()).toBeLessThanOrEqual(
      Math.max(tatBefore, burstEnded) + written * WORKSPACE_BUCKET.intervalMs,
    );
    // Spend the workspace budget: ten emits at a time, each to a channel of its own, until the
    // bucket has no token left. The bucket refills one token per 600 ms meanwhile, so how many
    // emits that takes depends on how fast this machine posts: the bucket's state is the sync
    // point, not a count of posts.
    let tat = await workspaceTat();
    let readAt = Date.now();
    while (available(tat, readAt, WORKSPACE_BUCKET) > 0) {
      expect(writes(), 'the workspace bucket never ran out').toBeLessThan(MAX_WRITES);
      for (const r of await Promise.all(Array.from({ length: 10 }, () => post(freshChannel(), 'fan out'))))
        expect(r.status).toBe(200);
      tat = await workspaceTat();
      readAt = Date.now();
    }
    // The budget is 100 per minute, neither less nor more: the bucket runs out only after 100
    // writes (every write at Slack took one token), and at the latest once the 100, one more per
    // 600 ms since the file's first emit, and the last batch's ten were written.
    expect(writes()).toBeGreaterThanOrEqual(100);
    expect(writes()).toBeLessThanOrEqual(110 + (readAt - firstEmitAt) / WORKSPACE_BUCKET.intervalMs);
    // Past the budget an emit waits for a token instead of answering 429 (INTERFACE §3: up to
    // 10 s; ten emits at once wait at most 6 s here). The bucket hands out one token per 600 ms
    // from `tat`: the j-th of ten emits at once cannot reach Slack before the j-th token's time,
    // the last one 5.4 s after the bucket was seen empty. Less 5 ms: the timer that holds an emit
    // and Date.now() round to the millisecond on clocks of their own. Without the wait the ten
    // posts would reach Slack together.
    const held = Array.from({ length: 10 }, () => freshChannel());
    for (const r of await Promise.all(held.map((c) => post(c, 'one more')))) expect(r.status).toBe(200);
    const ids = new Set(held.map((c) => c.id));
    const at = s.slack.posted.filter((p) => ids.has(p.channel)).map((p) => p.at);
    at.sort((a, b) => a - b);
    expect(at).toHaveLength(10);
    const noToken = WORKSPACE_BUCKET.capacity * WORKSPACE_BUCKET.intervalMs;
    for (let j = 0; j < 10; j++)
      expect(at[j]!, `post ${j + 1} of 10`).toBeGreaterThanOrEqual(
        tat - noToken + (j + 1) * WORKSPACE_BUCKET.intervalMs - 5,
      );
    expect(at[9]! - readAt).toBeGreaterThanOrEqual(9 * WORKSPACE_BUCKET.intervalMs - 5);
    // Draining takes about 10 s when ten emits take a second; slower posting makes it longer still, as the
    // bucket refills meanwhile: 120 s is the bound for a loaded machine, not a measurement.
  }, 120_000);

  it("honours Slack's own 429 on a channel: that channel only, for its Retry-After, without calling again", async () => {
    const held = ch(3);
    s.slack.rateLimit('chat.postMessage', 3);
    const first = await post(held, 'limited upstream');
    expect(first.status).toBe(429);
    expect(first.headers.get('retry-after')).toBe('3');
    const upstreamCalls = s.slack.callsOf('chat.postMessage').length;
    // Past the channel's own bucket (1 post/s), within Slack's 3 s: only Slack's 429 holds it.
    await new Promise((r) => setTimeout(r, 1_100));
    const second = await post(held, 'still held');
    expect(second.status).toBe(429);
    expect(Number(second.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(s.slack.callsOf('chat.postMessage')).toHaveLength(upstreamCalls);
    const elsewhere = await post(ch(149), 'other channel');
    expect(elsewhere.status).toBe(200);
  });

  it('reports health through auth.test, and 503 when the workspace is unreachable', async () => {
    const ok = await json(
      await fetch(`${s.node.url}/api/v1/connectors/installs/${installId}/health`, { headers: tenant.auth }),
    );
    expect(ok).toMatchObject({ install_id: installId, connector_id: 'chatapp', status: 'healthy', team_id: team.id });
    const token = [...s.slack.tokens.values()].find((t) => t.teamId === team.id && t.kind === 'bot')!;
    token.revoked = true;
    try {
      const res = await fetch(`${s.node.url}/api/v1/connectors/installs/${installId}/health`, { headers: tenant.auth });
      expect(res.status).toBe(503);
      expect((await json(res)).error.code).toBe('unavailable');
    } finally {
      token.revoked = false;
    }
  });
});
