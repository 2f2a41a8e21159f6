/**
 * The catch-up half of the chat walker (INTERFACE §10.6): after a gap in Slack's deliveries,
 * the install's walker (chat-backfill.ts, the same actor, cursor slot and pacing as the
 * backfill, so the two never run side by side) re-reads the history of the install's
 * conversations over the gap's window, from its start less one minute, with the ids live
 * events would have had. Only what the events table lacks is published, and it is counted
 * as recovered.
 */
import type pg from 'pg';
import type { BackfillCursor, PaceMethod } from '../../connectors/chatapp/backfill-cursor.js';
import { catchUpCursor, phaseOf, slackTs } from '../../connectors/chatapp/backfill-cursor.js';
import type { Pacing } from '../../connectors/chatapp/backfill-walk.js';
import type { ChatEventDraft } from '../../connectors/chatapp/chat-event.js';
import { missingGroupDmHistory, walkableTypes } from '../../connectors/chatapp/scopes.js';
import { authoredByBot } from '../../connectors/chatapp/self-emit-filter.js';
import { getBotIdentity } from '../../store/chat-claims.js';
import { endCatchUp, setCatchUpProgress, takeCatchUp } from '../../store/chat-catch-up.js';
import { storedEventKeys } from '../../store/events.js';

/** INTERFACE §10.6: the re-read starts one minute before the gap (clocks and Slack's own lag). */
const CATCH_UP_LEAD_MS = 60_000;

export type CatchUpBegin = { cursor: BackfillCursor } | { waitMs: number } | null;

/**
 * The catch-up cursor this step walks: `current` while it is the walk the install row says
 * runs, a new one for a gap taken now, a wait until the recorded gap ends, or null.
 */
export async function beginCatchUp(
  pool: pg.Pool,
  installId: string,
  current: BackfillCursor | null,
  now: number,
  pacing: Pacing,
): Promise<CatchUpBegin> {
  const take = await takeCatchUp(pool, installId, now);
  if (take === null) return null;
  if ('dueAtMs' in take) return { waitMs: Math.max(0, take.dueAtMs - now) };
  const window = { sinceMs: take.window.sinceMs - CATCH_UP_LEAD_MS, untilMs: take.window.untilMs };
  const w = current?.window;
  if (w && w.oldest === slackTs(window.sinceMs) && w.latest === slackTs(window.untilMs)) return { cursor: current! };
  const scopes = (await getBotIdentity(pool, installId))?.scopes ?? [];
  const types = walkableTypes(scopes);
  return { cursor: catchUpCursor(types, missingGroupDmHistory(scopes), window, firstCallAt(now, pacing)) };
}

function firstCallAt(now: number, pacing: Pacing): Record<PaceMethod, number> {
  const i = pacing.intervalMs;
  return {
    'conversations.list': now + i['conversations.list'],
    'conversations.history': now + i['conversations.history'],
    'conversations.replies': now + i['conversations.replies'],
  };
}

/**
 * The drafts of a page that the events table does not hold yet. The bot's own messages are
 * left out first (INTERFACE §8.23): ingest drops them, so they are never stored and would
 * otherwise count as recovered at every catch-up.
 */
export async function missingOf(pool: pg.Pool, installId: string, drafts: ChatEventDraft[]): Promise<ChatEventDraft[]> {
  if (drafts.length === 0) return drafts;
  const bot = await getBotIdentity(pool, installId);
  const others = bot ? drafts.filter((d) => !authoredByBot(d.kind, d.payload, bot)) : drafts;
  const stored = await storedEventKeys(
    pool,
    others.map((d) => ({ installId, id: d.id })),
  );
  return others.filter((_, i) => !stored[i]);
}

function catchUpProgress(c: BackfillCursor, lastError: string | null): Record<string, unknown> {
  const p = c.progress;
  return {
    phase: phaseOf(c),
    oldest: c.window?.oldest,
    latest: c.window?.latest,
    channels_listed: p.channels_listed,
    channels_done: p.channels_done,
    messages_read: p.messages,
    replies_read: p.replies,
    recovered: p.recovered ?? 0,
    skipped_count: p.skipped_count,
    ...((lastError ?? c.lastError) ? { last_error: lastError ?? c.lastError } : {}),
  };
}

export const saveCatchUpProgress = (pool: pg.Pool, installId: string, c: BackfillCursor) =>
  setCatchUpProgress(pool, installId, catchUpProgress(c, null));

/** Ends the walk; true when another gap waits for the next one. */
export const endCatchUpWalk = (
  pool: pg.Pool,
  installId: string,
  c: BackfillCursor,
  ending: { state: 'complete' } | { state: 'failed'; reason: string },
) => endCatchUp(pool, installId, ending.state, catchUpProgress(c, ending.state === 'failed' ? ending.reason : null));
