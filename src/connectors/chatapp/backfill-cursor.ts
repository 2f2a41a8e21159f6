/**
 * The chat backfill cursor: everything a walker needs to resume after a crash or a shard
 * move (ARCHITECTURE.md "Actors"), pacing included (INTERFACE §8.22: next-allowed times per Web API method
 * live with the cursor, so a restart never calls early). Stored as JSON in the cursor KV
 * bucket, whose values must stay under 100 KB (spec §8); `encodeCursor` refuses more.
 */
import { z } from 'zod';

export type PaceMethod = 'conversations.list' | 'conversations.history' | 'conversations.replies';
export const CURSOR_MAX_BYTES = 100 * 1024;

const Channel = z.object({ id: z.string(), type: z.enum(['channel', 'group', 'im', 'mpim']) });

const CursorSchema = z.object({
  v: z.literal(1),
  types: z.string(),
  /**
   * A catch-up's window (INTERFACE §10.6): history only between these Slack timestamps, and
   * replies after `oldest`. Absent for the install's first backfill, which reads everything.
   */
  window: z.object({ oldest: z.string(), latest: z.string() }).optional(),
  listCursor: z.string().nullable(),
  listDone: z.boolean(),
  queue: z.array(Channel),
  channel: Channel.extend({ historyCursor: z.string().nullable(), historyDone: z.boolean() }).nullable(),
  threads: z.array(z.string()),
  repliesCursor: z.string().nullable(),
  nextAt: z.object({
    'conversations.list': z.number(),
    'conversations.history': z.number(),
    'conversations.replies': z.number(),
  }),
  failures: z.number().int(),
  lastError: z.string().nullable(),
  progress: z.object({
    channels_listed: z.number().int(),
    channels_done: z.number().int(),
    messages: z.number().int(),
    replies: z.number().int(),
    skipped_count: z.number().int(),
    skipped: z.array(z.object({ channel_id: z.string(), reason: z.string() })),
    group_dms_excluded: z.boolean(),
    /** Catch-up only: messages it found missing from the events and published. */
    recovered: z.number().int().optional(),
  }),
});
export type BackfillCursor = z.infer<typeof CursorSchema>;

export function initialCursor(types: string, groupDmsExcluded: boolean): BackfillCursor {
  return {
    v: 1,
    types,
    // Nothing to list when no conversation type can be walked with the granted scopes.
    listCursor: null,
    listDone: types.length === 0,
    queue: [],
    channel: null,
    threads: [],
    repliesCursor: null,
    nextAt: { 'conversations.list': 0, 'conversations.history': 0, 'conversations.replies': 0 },
    failures: 0,
    lastError: null,
    progress: {
      channels_listed: 0,
      channels_done: 0,
      messages: 0,
      replies: 0,
      skipped_count: 0,
      skipped: [],
      group_dms_excluded: groupDmsExcluded,
    },
  };
}

/**
 * A catch-up walk over `[sinceMs, untilMs]`. Its calls start paced as if each method had
 * just been called (`startedAt` + interval): whatever walk ran before it, the install's
 * calls keep the backfill's pace (INTERFACE §10.6, §8.22).
 */
export function catchUpCursor(
  types: string,
  groupDmsExcluded: boolean,
  window: { sinceMs: number; untilMs: number },
  firstCallAt: Record<PaceMethod, number>,
): BackfillCursor {
  const c = initialCursor(types, groupDmsExcluded);
  c.window = { oldest: slackTs(window.sinceMs), latest: slackTs(window.untilMs) };
  c.nextAt = { ...firstCallAt };
  c.progress.recovered = 0;
  return c;
}

/** Epoch milliseconds as a Slack timestamp (`seconds.micros`). */
export function slackTs(ms: number): string {
  const whole = Math.floor(ms);
  return `${Math.floor(whole / 1000)}.${String((whole % 1000) * 1000).padStart(6, '0')}`;
}

const enc = new TextEncoder();
const dec = new TextDecoder();

export function encodeCursor(c: BackfillCursor): Uint8Array {
  const bytes = enc.encode(JSON.stringify(c));
  if (bytes.length >= CURSOR_MAX_BYTES)
    throw new Error(`backfill cursor of ${bytes.length} bytes exceeds the 100 KB ceiling`);
  return bytes;
}

/** A stored cursor, or null when it is not one this version wrote (the walk then restarts; ids dedup). */
export function decodeCursor(bytes: Uint8Array): BackfillCursor | null {
  try {
    const r = CursorSchema.safeParse(JSON.parse(dec.decode(bytes)));
    return r.success ? r.data : null;
  } catch {
    return null;
  }
}

/** The walk's phase, for progress: what the next call will be. */
export function phaseOf(c: BackfillCursor): 'listing' | 'history' | 'replies' {
  if (c.channel && c.threads.length > 0) return 'replies';
  if (c.channel || c.queue.length > 0) return 'history';
  return 'listing';
}
