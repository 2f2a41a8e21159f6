import { describe, expect, it } from 'vitest';
import {
  CURSOR_MAX_BYTES,
  catchUpCursor,
  decodeCursor,
  encodeCursor,
  initialCursor,
  type BackfillCursor,
} from '../../src/connectors/chatapp/backfill-cursor.js';
import { applyOutcome, nextCall, pacingFor, type Outcome } from '../../src/connectors/chatapp/backfill-walk.js';
import { missingGroupDmHistory, walkableTypes } from '../../src/connectors/chatapp/scopes.js';

const pacing = pacingFor('non_marketplace');
const ok = (data: Record<string, unknown>): Outcome => ({ ok: true, data });
const page = (next: string | null) => ({ response_metadata: { next_cursor: next ?? '' } });
const msg = (ts: string, replies = 0) => ({
  type: 'message',
  ts,
  text: `m ${ts}`,
  user: 'U1',
  ...(replies ? { thread_ts: ts, reply_count: replies } : {}),
});

function walk(c: BackfillCursor, answers: Array<(call: ReturnType<typeof nextCall>) => Outcome>) {
  const trace: string[] = [];
  const published: string[] = [];
  let now = 0;
  for (const answer of answers) {
    const call = nextCall(c, pacing)!;
    trace.push(`${call.method} ${JSON.stringify(call.params)}`);
    const { events, ending } = applyOutcome(c, call, answer(call), now, pacing);
    published.push(...events.map((e) => e.id));
    now += 60_000;
    if (ending) return { trace, published, ending };
  }
  return { trace, published, ending: null };
}

describe('chat backfill walk', () => {
  it('lists, then walks each conversation newest first, with each history page followed by its threads', () => {
    const c = initialCursor('public_channel,im', false);
    const { trace, published, ending } = walk(c, [
      () =>
        ok({
          channels: [
            { id: 'C1', name: 'general', is_channel: true, is_private: false, is_member: true },
            { id: 'C2', is_member: false },
            { id: 'D1', is_im: true },
          ],
          ...page(null),
        }),
      () => ok({ messages: [msg('3.0'), msg('2.0', 2)], ...page('h2') }),
      () => ok({ messages: [msg('2.0', 2), { ...msg('2.1'), thread_ts: '2.0' }], ...page('r2') }),
      () => ok({ messages: [{ ...msg('2.2'), thread_ts: '2.0' }], ...page(null) }),
      () => ok({ messages: [msg('1.0')], ...page(null) }),
      () => ok({ messages: [msg('9.0')], ...page(null) }),
    ]);
    expect(trace).toEqual([
      'conversations.list {"types":"public_channel,im","limit":200,"exclude_archived":false}',
      'conversations.history {"channel":"C1","limit":15}',
      'conversations.replies {"channel":"C1","ts":"2.0","limit":15}',
      'conversations.replies {"channel":"C1","ts":"2.0","limit":15,"cursor":"r2"}',
      'conversations.history {"channel":"C1","limit":15,"cursor":"h2"}',
      'conversations.history {"channel":"D1","limit":15}',
    ]);
    expect(ending).toEqual({ state: 'complete' });
    // INTERFACE §9.5: each listed conversation the walk takes is named by a channel_info event.
    const infos = published.filter((id) => id.startsWith('channel_info:'));
    expect(infos.map((id) => id.split(':')[1])).toEqual(['C1', 'D1']);
    expect(new Set(published.filter((id) => !id.startsWith('channel_info:')))).toEqual(
      new Set([
        'message:C1:3.0',
        'message:C1:2.0',
        'message:C1:2.1',
        'message:C1:2.2',
        'message:C1:1.0',
        'message:D1:9.0',
      ]),
    );
    expect(c.progress).toMatchObject({
      channels_listed: 2,
      channels_done: 2,
      messages: 4,
      replies: 2,
      skipped_count: 0,
    });
  });

  it('skips a channel answering not_in_channel and lists it; the walk still completes', () => {
    const c = initialCursor('public_channel', false);
    const { ending } = walk(c, [
      () => ok({ channels: [{ id: 'C1' }, { id: 'C2' }], ...page(null) }),
      () => ({ ok: false, kind: 'refused', error: 'not_in_channel' }),
      () => ok({ messages: [msg('1.0')], ...page(null) }),
    ]);
    expect(ending).toEqual({ state: 'complete' });
    expect(c.progress.skipped).toEqual([{ channel_id: 'C1', reason: 'not_in_channel' }]);
  });

  it('honours a 429 with its Retry-After for that method only, and retries the same call', () => {
    const c = initialCursor('public_channel', false);
    const list = nextCall(c, pacing)!;
    applyOutcome(c, list, ok({ channels: [{ id: 'C1' }], ...page(null) }), 1_000, pacing);
    const history = nextCall(c, pacing)!;
    applyOutcome(c, history, { ok: false, kind: 'rate_limited', retryAfterMs: 30_000 }, 2_000, pacing);
    expect(c.nextAt['conversations.history']).toBe(32_000);
    expect(c.nextAt['conversations.list']).toBe(1_000 + 3_000);
    expect(nextCall(c, pacing)).toEqual(history);
    expect(c.failures).toBe(0);
  });

  it('backs off on transient failures and fails the walk after too many; a dead token fails it at once', () => {
    const c = initialCursor('public_channel', false);
    let ending = null;
    let n = 0;
    while (!ending) {
      const call = nextCall(c, pacing)!;
      ({ ending } = applyOutcome(c, call, { ok: false, kind: 'transient', error: 'socket hang up' }, 0, pacing));
      n++;
    }
    expect(n).toBe(13);
    expect(ending).toEqual({ state: 'failed', reason: 'conversations.list: socket hang up' });
    const d = initialCursor('public_channel', false);
    expect(
      applyOutcome(d, nextCall(d, pacing)!, { ok: false, kind: 'dead_token', error: 'token_revoked' }, 0, pacing)
        .ending,
    ).toEqual({
      state: 'failed',
      reason: 'token is dead: token_revoked',
    });
  });

  it('paces by tier (INTERFACE §8.16, §8.22) and the divisor only speeds tests', () => {
    expect(pacingFor('non_marketplace')).toEqual({
      intervalMs: { 'conversations.list': 3_000, 'conversations.history': 60_000, 'conversations.replies': 60_000 },
      pageLimit: 15,
    });
    expect(pacingFor('marketplace')).toEqual({
      intervalMs: { 'conversations.list': 3_000, 'conversations.history': 1_200, 'conversations.replies': 1_200 },
      pageLimit: 200,
    });
    expect(pacingFor('non_marketplace', 1000).intervalMs['conversations.history']).toBe(60);
  });

  it('chooses conversation types by scope; without mpim:history group DMs are out', () => {
    const all = [
      'channels:read',
      'channels:history',
      'groups:read',
      'groups:history',
      'im:read',
      'im:history',
      'mpim:read',
      'mpim:history',
    ];
    expect(walkableTypes(all)).toBe('public_channel,private_channel,im,mpim');
    const noMpim = all.filter((s) => s !== 'mpim:history');
    expect(walkableTypes(noMpim)).toBe('public_channel,private_channel,im');
    expect(missingGroupDmHistory(noMpim)).toBe(true);
    expect(initialCursor('', true)).toMatchObject({ listDone: true });
    expect(nextCall(initialCursor('', true), pacing)).toBeNull();
  });

  it('keeps the cursor far under 100 KB at its largest, and round-trips it', () => {
    const c = initialCursor('public_channel,private_channel,im,mpim', true);
    const big = 'x'.repeat(60);
    c.listCursor = big;
    c.queue = Array.from({ length: 200 }, (_, i) => ({
      id: `C${String(i).padStart(10, '0')}`,
      type: 'channel' as const,
    }));
    c.channel = { id: 'C0000000001', type: 'channel', historyCursor: big, historyDone: false };
    c.threads = Array.from({ length: 200 }, (_, i) => `17000000${String(i).padStart(2, '0')}.000100`);
    c.repliesCursor = big;
    c.progress.skipped = Array.from({ length: 100 }, (_, i) => ({ channel_id: `C${i}`, reason: 'channel_not_found' }));
    const bytes = encodeCursor(c);
    expect(bytes.length).toBeLessThan(CURSOR_MAX_BYTES / 4);
    expect(decodeCursor(bytes)).toEqual(c);
    expect(decodeCursor(new TextEncoder().encode('{"v":2}'))).toBeNull();
    c.queue = Array.from({ length: 5_000 }, (_, i) => ({
      id: `C${String(i).padStart(20, '0')}`,
      type: 'channel' as const,
    }));
    expect(() => encodeCursor(c)).toThrow(/100 KB/);
  });
});

describe('chat catch-up walk (INTERFACE §10.6)', () => {
  it('reads history only inside its window, threads only with replies inside it, and starts paced', () => {
    const now = 1_700_000_600_000;
    const c = catchUpCursor(
      'public_channel',
      false,
      { sinceMs: 1_700_000_000_000, untilMs: 1_700_000_300_500 },
      {
        'conversations.list': now + 3_000,
        'conversations.history': now + 60_000,
        'conversations.replies': now + 60_000,
      },
    );
    expect(c.window).toEqual({ oldest: '1700000000.000000', latest: '1700000300.500000' });
    expect(c.nextAt['conversations.history']).toBe(now + 60_000);
    expect(decodeCursor(encodeCursor(c))).toEqual(c);
    const { trace, published, ending } = walk(c, [
      () => ok({ channels: [{ id: 'C1', is_channel: true }], ...page(null) }),
      () =>
        ok({
          messages: [
            { ...msg('1700000200.000001', 2), latest_reply: '1700000250.000000' },
            { ...msg('1700000100.000001', 3), latest_reply: '1699999000.000000' },
          ],
          ...page(null),
        }),
      () => ok({ messages: [msg('1700000200.000001'), msg('1700000250.000000')], ...page(null) }),
    ]);
    expect(trace[1]).toBe(
      'conversations.history {"channel":"C1","limit":15,"oldest":"1700000000.000000","latest":"1700000300.500000","inclusive":true}',
    );
    // Only the thread whose latest reply falls inside the window is read, from the window's start.
    expect(trace[2]).toBe(
      'conversations.replies {"channel":"C1","ts":"1700000200.000001","limit":15,"oldest":"1700000000.000000"}',
    );
    expect(trace).toHaveLength(3);
    expect(published).toContain('message:C1:1700000250.000000');
    expect(ending).toEqual({ state: 'complete' });
  });

  it('a first backfill reads everything: no window in its calls', () => {
    const c = initialCursor('public_channel', false);
    c.listDone = true;
    c.queue.push({ id: 'C1', type: 'channel' });
    expect(nextCall(c, pacing)!.params).toEqual({ channel: 'C1', limit: 15 });
  });
});
