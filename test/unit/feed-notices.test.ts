/**
 * The feed's wake-ups (runtime/feed-notices.ts) without NATS: a waiter wakes on the notice
 * of its tenant past its seq, not on another tenant's nor an older one; a notice heard just
 * before a waiter registers wakes it at once; the bound and the signal end a wait too.
 */
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { FeedNotices } from '../../src/runtime/feed-notices.js';
import { names } from '../../src/runtime/names.js';
import type { NatsConnection } from '@nats-io/transport-node';

const HOUR = 3_600_000;
const notices = () => new FeedNotices({} as NatsConnection, names('t'), pino({ level: 'silent' }));

describe('feed notices', () => {
  it('wake the waiters of the tenant whose feed went past their seq', async () => {
    const n = notices();
    let woke = false;
    const waiting = n.wait('a', 5, HOUR).then(() => (woke = true));
    n.advanced('b', 9);
    n.advanced('a', 5);
    await Promise.resolve();
    expect([woke, n.waiting()]).toEqual([false, 1]);
    n.advanced('a', 6);
    await waiting;
    expect(n.waiting()).toBe(0);
  });

  it('answer at once when a newer head was heard already, and end on the signal or the bound', async () => {
    const n = notices();
    n.advanced('a', 7);
    await n.wait('a', 6, HOUR);
    const ctl = new AbortController();
    const aborted = n.wait('a', 7, HOUR, ctl.signal);
    ctl.abort();
    await aborted;
    await n.wait('a', 7, 1);
    expect(n.waiting()).toBe(0);
  });
});
