import { describe, expect, it } from 'vitest';
import { needsRefresh, type ChatSecret } from '../../src/connectors/chatapp/bot-token.js';
import { parseEmit } from '../../src/connectors/chatapp/emit.js';
import { RECONNECT_CAP_MS, reconnectDelayMs } from '../../src/connectors/chatapp/reconnect-backoff.js';
import { authoredByBot } from '../../src/connectors/chatapp/self-emit-filter.js';
import { createTicker } from '../../src/runtime/ticker.js';
import { ManualClock } from '../support/clock.js';

describe('Socket Mode reconnect backoff (spec §5)', () => {
  it('draws uniformly below a ceiling doubling from 1 s to 60 s', () => {
    expect([0, 1, 2, 3, 4, 5, 6, 7, 20].map((a) => reconnectDelayMs(a, () => 0.999999))).toEqual([
      999, 1_999, 3_999, 7_999, 15_999, 31_999, 59_999, 59_999, 59_999,
    ]);
    expect(reconnectDelayMs(3, () => 0)).toBe(0);
    const draws = Array.from({ length: 2_000 }, () => reconnectDelayMs(10));
    expect(Math.max(...draws)).toBeLessThan(RECONNECT_CAP_MS);
    // Full jitter: spread over the whole range, not bunched at the ceiling.
    expect(draws.filter((d) => d < 30_000).length).toBeGreaterThan(800);
  });
});

describe('self-emit tier 1 (INTERFACE §8.23)', () => {
  const bot = { bot_user_id: 'UBOT', bot_id: 'BBOT', app_id: 'AAPP' };
  it('recognises our bot by bot_id, app_id or bot user, on messages and edits', () => {
    expect(authoredByBot('message', { bot_id: 'BBOT' }, bot)).toBe(true);
    expect(authoredByBot('message', { app_id: 'AAPP', user: 'U1' }, bot)).toBe(true);
    expect(authoredByBot('message_changed', { user: 'UBOT' }, bot)).toBe(true);
    expect(authoredByBot('message', { user: 'U1', bot_id: 'BOTHER', app_id: 'AOTHER' }, bot)).toBe(false);
  });
  it('recognises our reactions by their user only, and never drops a delete by tier 1', () => {
    expect(authoredByBot('reaction_added', { user: 'UBOT', name: 'x' }, bot)).toBe(true);
    expect(authoredByBot('reaction_added', { user: 'U1', item_user: 'UBOT' }, bot)).toBe(false);
    expect(authoredByBot('message_deleted', { user: 'UBOT' }, bot)).toBe(false);
  });
});

describe('chat emit validation (spec §4.1)', () => {
  it('accepts the contract bodies and normalises reaction names', () => {
    expect(parseEmit('chatapp.message', { channel_id: 'C1', text: ' hi ', thread_ts: '1.2' })).toEqual({
      kind: 'chatapp.message',
      body: { channel_id: 'C1', text: ' hi ', thread_ts: '1.2' },
    });
    expect(
      parseEmit('chatapp.reaction', { channel_id: 'C1', timestamp: '1.2', name: ':+1::skin-tone-3:' }).body,
    ).toMatchObject({ name: '+1::skin-tone-3' });
  });
  it('refuses everything else with bad_config', () => {
    for (const [k, b] of [
      ['chatapp.message', { channel_id: 'C1', text: '' }],
      ['chatapp.message', { channel_id: 'C1', text: 'x'.repeat(40_001) }],
      ['chatapp.reaction', { channel_id: 'C1', timestamp: '1.2' }],
      ['chatapp.other', {}],
    ] as const) {
      expect(() => parseEmit(k, b as Record<string, unknown>)).toThrow(expect.objectContaining({ code: 'bad_config' }));
    }
  });
});

describe('token rotation timing', () => {
  const secret = (issued: number, expires: number): ChatSecret => ({
    bot_token: 't',
    bot_user_id: 'U',
    bot_id: null,
    app_id: 'A',
    scopes: [],
    team: { id: 'T', name: null },
    refresh_token: 'r',
    issued_at: new Date(issued).toISOString(),
    expires_at: new Date(expires).toISOString(),
  });
  it('refreshes 5 minutes before expiry, or at half-life for short-lived tokens; never without rotation', () => {
    const h12 = 12 * 3_600_000;
    expect(needsRefresh(secret(0, h12), h12 - 5 * 60_000 - 1)).toBe(false);
    expect(needsRefresh(secret(0, h12), h12 - 5 * 60_000)).toBe(true);
    expect(needsRefresh(secret(0, 2_000), 999)).toBe(false);
    expect(needsRefresh(secret(0, 2_000), 1_000)).toBe(true);
    const { refresh_token: _r, expires_at: _e, ...plain } = secret(0, 1);
    expect(needsRefresh(plain as ChatSecret, 10 ** 13)).toBe(false);
  });
});

describe('ticker (walker self-scheduling)', () => {
  it('keeps at most one pending tick, caps delays, and never fires after stop', async () => {
    const clock = new ManualClock();
    let fired = 0;
    const t = createTicker({ fire: async () => void fired++, onError: () => undefined, maxDelayMs: 30, clock });
    t.arm(10);
    t.arm(20);
    t.arm(10_000);
    expect(t.dueAt).toBe(clock.now() + 30);
    expect(clock.pending).toBe(1);
    await clock.advance(29);
    expect(fired).toBe(0);
    await clock.advance(1);
    expect(fired).toBe(1);
    expect(t.dueAt).toBeNull();
    await clock.advance(1_000);
    expect(fired).toBe(1);
    t.arm(5);
    t.stop();
    t.arm(5);
    expect(clock.pending).toBe(0);
    await clock.advance(1_000);
    expect(fired).toBe(1);
  });
  it('reports a failing fire instead of throwing', async () => {
    const clock = new ManualClock();
    const errors: unknown[] = [];
    const t = createTicker({
      fire: async () => Promise.reject(new Error('no responders')),
      onError: (e) => errors.push(e),
      clock,
    });
    t.arm(0);
    await clock.advance(0);
    expect(errors).toHaveLength(1);
  });
});
