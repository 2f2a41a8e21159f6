/**
 * The chat backfill walk as pure steps (spec §1; ARCHITECTURE.md "Actors", backfill walker): list
 * conversations a page at a time, then the history of each listed conversation newest
 * first, and after each history page the replies of that page's threads. `nextCall`
 * names the one upstream call the walker makes next; `applyOutcome` folds its answer
 * into the cursor and returns the events to publish. The cursor stays small (at most
 * one listing page of channels and one history page of threads are ever queued).
 */
import { backoffMs } from '../../backoff.js';
import type { BackfillCursor, PaceMethod } from './backfill-cursor.js';
import type { ChatEventDraft } from './chat-event.js';
import { messageEvent } from './normalize-event.js';
import { channelInfoEvent } from './normalize-names.js';
import { channelTypeOf } from './scopes.js';
import type { SlackFailure } from './slack-errors.js';

export interface Pacing {
  /** Minimum gap between two calls of each method, in ms (INTERFACE §8.16, §8.22). */
  intervalMs: Record<PaceMethod, number>;
  /** `limit` of conversations.history / .replies. */
  pageLimit: number;
}

export type AppTier = 'non_marketplace' | 'marketplace';
const LIST_PAGE_LIMIT = 200;
const MAX_TRANSIENT_FAILURES = 12;
/** After a failed call of a method (backoff.ts). */
const CALL_RETRY = { firstMs: 2_000, capMs: 5 * 60_000 };
const SKIPPED_KEPT = 100;

/**
 * INTERFACE §8.16: non_marketplace 1/min with limit 15; marketplace Tier 3 (50/min) with limit 200; list Tier 2
 * (20/min, §8.22).
 */
export function pacingFor(tier: AppTier, divisor = 1): Pacing {
  const history = tier === 'marketplace' ? 1_200 : 60_000;
  const d = Math.max(1, divisor);
  return {
    intervalMs: {
      'conversations.list': 3_000 / d,
      'conversations.history': history / d,
      'conversations.replies': history / d,
    },
    pageLimit: tier === 'marketplace' ? 200 : 15,
  };
}

export interface Call {
  method: PaceMethod;
  params: Record<string, string | number | boolean>;
}

export type Outcome = { ok: true; data: Record<string, unknown> } | SlackFailure;

export type Ending = null | { state: 'complete' } | { state: 'failed'; reason: string };

/** Moves finished channels out and the next listed one in; no upstream call. */
function settle(c: BackfillCursor): void {
  for (;;) {
    if (c.channel && c.channel.historyDone && c.threads.length === 0) {
      c.channel = null;
      c.progress.channels_done++;
      continue;
    }
    if (!c.channel && c.queue.length > 0) {
      const next = c.queue.shift()!;
      c.channel = { id: next.id, type: next.type, historyCursor: null, historyDone: false };
      continue;
    }
    return;
  }
}

/** The next upstream call, or null when the walk is over. */
export function nextCall(c: BackfillCursor, pacing: Pacing): Call | null {
  settle(c);
  const ch = c.channel;
  // INTERFACE §10.6: a catch-up reads only its window (replies: those after its start).
  const w = c.window;
  if (ch && c.threads.length > 0) {
    const params = { channel: ch.id, ts: c.threads[0]!, limit: pacing.pageLimit };
    return {
      method: 'conversations.replies',
      params: withCursor(w ? { ...params, oldest: w.oldest } : params, c.repliesCursor),
    };
  }
  if (ch) {
    const params = { channel: ch.id, limit: pacing.pageLimit };
    return {
      method: 'conversations.history',
      params: withCursor(
        w ? { ...params, oldest: w.oldest, latest: w.latest, inclusive: true } : params,
        ch.historyCursor,
      ),
    };
  }
  if (!c.listDone) {
    return {
      method: 'conversations.list',
      params: withCursor({ types: c.types, limit: LIST_PAGE_LIMIT, exclude_archived: false }, c.listCursor),
    };
  }
  return null;
}

function withCursor<T extends Record<string, string | number | boolean>>(p: T, cursor: string | null): T {
  return cursor ? { ...p, cursor } : p;
}

const nextCursorOf = (data: Record<string, unknown>): string | null => {
  const meta = data.response_metadata as { next_cursor?: unknown } | undefined;
  return typeof meta?.next_cursor === 'string' && meta.next_cursor.length > 0 ? meta.next_cursor : null;
};
const arrayOf = (v: unknown): Array<Record<string, unknown>> =>
  Array.isArray(v) ? v.filter((x): x is Record<string, unknown> => typeof x === 'object' && x !== null) : [];

/** A conversation error that ends that conversation's walk, not the whole walk (INTERFACE §8.21). */
const SKIP_CHANNEL = new Set(['not_in_channel', 'channel_not_found', 'missing_scope', 'is_archived', 'access_denied']);

export function applyOutcome(
  c: BackfillCursor,
  call: Call,
  outcome: Outcome,
  now: number,
  pacing: Pacing,
): { events: ChatEventDraft[]; ending: Ending } {
  const events: ChatEventDraft[] = [];
  if (!outcome.ok) {
    if (outcome.kind === 'rate_limited') {
      // A 429 is honoured with its Retry-After and is not a failure.
      c.nextAt[call.method] = now + outcome.retryAfterMs;
      return { events, ending: null };
    }
    c.nextAt[call.method] = now + pacing.intervalMs[call.method];
    if (outcome.kind === 'dead_token')
      return { events, ending: { state: 'failed', reason: `token is dead: ${outcome.error}` } };
    if (outcome.kind === 'refused' && call.method !== 'conversations.list' && SKIP_CHANNEL.has(outcome.error)) {
      skipChannel(c, outcome.error);
      return { events, ending: endingOf(c) };
    }
    if (outcome.kind === 'refused' && call.method === 'conversations.replies' && outcome.error === 'thread_not_found') {
      c.threads.shift();
      c.repliesCursor = null;
      return { events, ending: endingOf(c) };
    }
    // STYLE.md "Retries": a refusal a retry cannot mend stops the walk at once, with its cause.
    if (outcome.kind === 'refused') {
      c.lastError = `${call.method}: ${outcome.error}`;
      return { events, ending: { state: 'failed', reason: c.lastError } };
    }
    c.failures++;
    c.lastError = `${call.method}: ${outcome.error}`;
    if (c.failures > MAX_TRANSIENT_FAILURES) return { events, ending: { state: 'failed', reason: c.lastError } };
    c.nextAt[call.method] = now + backoffMs(CALL_RETRY, c.failures);
    return { events, ending: null };
  }

  c.failures = 0;
  c.lastError = null;
  c.nextAt[call.method] = now + pacing.intervalMs[call.method];
  const next = nextCursorOf(outcome.data);
  if (call.method === 'conversations.list') {
    // Conversations the bot was never invited to answer not_in_channel; not asking saves a paced call each.
    const listed = arrayOf(outcome.data.channels).filter((ch) => typeof ch.id === 'string' && ch.is_member !== false);
    for (const ch of listed) {
      c.queue.push({ id: ch.id as string, type: channelTypeOf(ch) });
      // INTERFACE §9.5: the listing names the channel; published with the page.
      const info = channelInfoEvent(ch);
      if (info) events.push(info);
    }
    c.progress.channels_listed += listed.length;
    c.listCursor = next;
    c.listDone = next === null;
  } else if (call.method === 'conversations.history') {
    const ch = c.channel!;
    for (const m of arrayOf(outcome.data.messages)) {
      const ev = messageEvent(ch.id, ch.type, m);
      if (ev) events.push(ev);
      if (typeof m.ts === 'string' && m.thread_ts === m.ts && Number(m.reply_count ?? 0) > 0 && newReplies(c, m))
        c.threads.push(m.ts);
    }
    c.progress.messages += events.length;
    ch.historyCursor = next;
    ch.historyDone = next === null;
  } else {
    const ch = c.channel!;
    const parent = c.threads[0]!;
    for (const m of arrayOf(outcome.data.messages)) {
      const ev = messageEvent(ch.id, ch.type, m);
      if (!ev) continue;
      events.push(ev);
      if (m.ts !== parent) c.progress.replies++;
    }
    c.repliesCursor = next;
    if (next === null) c.threads.shift();
  }
  return { events, ending: endingOf(c) };
}

/** A catch-up reads a thread only when its latest reply is inside the window (Slack's `latest_reply`). */
function newReplies(c: BackfillCursor, parent: Record<string, unknown>): boolean {
  if (!c.window || typeof parent.latest_reply !== 'string') return true;
  return Number(parent.latest_reply) >= Number(c.window.oldest);
}

function skipChannel(c: BackfillCursor, reason: string): void {
  const ch = c.channel!;
  c.progress.skipped_count++;
  if (c.progress.skipped.length < SKIPPED_KEPT) c.progress.skipped.push({ channel_id: ch.id, reason });
  c.channel = null;
  c.threads = [];
  c.repliesCursor = null;
}

function endingOf(c: BackfillCursor): Ending {
  settle(c);
  return c.channel === null && c.queue.length === 0 && c.listDone ? { state: 'complete' } : null;
}
