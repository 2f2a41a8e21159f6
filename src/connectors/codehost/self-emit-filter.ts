/**
 * spec §6.3: the code host's two-tier self-emit filter, run inside the ingest transaction
 * on every ingest path (INTERFACE §8.20), so a dropped event is never stored.
 *
 * Tier 1 is pure and cannot fail. Tier 2 is one indexed lookup in the emitted-event
 * records, run under a savepoint: if it fails, the failure is logged, the transaction
 * stays usable and the Tier-1 survivor proceeds (spec: Tier 2 is best-effort).
 */
import type { Logger } from '../../log.js';
import type { Queryable } from '../../store/db.js';
import { commentsEmittedBy, emittedCommentKey } from '../../store/codehost-emitted.js';
import { PR_SUMMARY_SENTINEL, SLASH_REPLY_SENTINEL } from './sentinels.js';

export type DropReason = 'bot_issue_comment' | 'service_sentinel' | 'emitted_by_this_install';

function commentOf(payload: unknown): { id?: unknown; body?: unknown } | null {
  const c = (payload as { comment?: unknown } | null)?.comment;
  return c && typeof c === 'object' ? (c as { id?: unknown; body?: unknown }) : null;
}

/** Tier 1: the reason to drop, or null to keep. */
export function tier1DropReason(kind: string, payload: unknown): DropReason | null {
  const sender = (payload as { sender?: { type?: unknown } } | null)?.sender;
  if ((kind === 'issue_comment' || kind.startsWith('issue_comment.')) && sender?.type === 'Bot')
    return 'bot_issue_comment';
  const body = commentOf(payload)?.body;
  if (typeof body === 'string' && (body.includes(PR_SUMMARY_SENTINEL) || body.includes(SLASH_REPLY_SENTINEL))) {
    return 'service_sentinel';
  }
  return null;
}

/**
 * Tier 2, for a batch of payloads of one or more installs (group commit: one lookup):
 * whether each event's `comment.id` is a comment the install it came to wrote. It catches a
 * comment re-attributed to a user and a mirror tool that stripped the sentinel.
 */
export async function tier2Drops(
  tx: Queryable,
  events: ReadonlyArray<{ installId: string; payload: unknown }>,
  log: Logger,
): Promise<boolean[]> {
  const keys = events.map(({ installId, payload }) => {
    const id = commentOf(payload)?.id;
    return typeof id === 'number' || typeof id === 'string' ? { installId, commentId: String(id) } : null;
  });
  const asked = keys.filter((k) => k !== null);
  if (asked.length === 0) return keys.map(() => false);
  try {
    await tx.query('SAVEPOINT codehost_tier2');
    const hits = await commentsEmittedBy(tx, asked);
    await tx.query('RELEASE SAVEPOINT codehost_tier2');
    return keys.map((k) => k !== null && hits.has(emittedCommentKey(k.installId, k.commentId)));
  } catch (err) {
    await tx.query('ROLLBACK TO SAVEPOINT codehost_tier2').catch(() => undefined);
    log.warn(
      { err, comments: asked.length },
      'Tier-2 self-emit lookup failed; keeping the events (spec §6.3: best-effort)',
    );
    return keys.map(() => false);
  }
}
