/**
 * Code-host reads of the emitted-event records (spec §2.3): the Tier-2 self-emit lookup
 * and the PR summary comment's remembered id. Records are written by `recordEmitted`.
 */
import { isUuid, type Queryable } from './db.js';
import { sanitizeText } from './sanitize.js';

/** Emit kinds whose provider id is a comment id (INTERFACE §8.6). */
const COMMENT_EMIT_KINDS = [
  'codehost.pr_summary_comment',
  'codehost.issue_comment',
  'codehost.review_comment',
] as const;

/**
 * spec §6.3 Tier 2, for a batch of comment ids of one or more installs (group commit): the
 * ones the named install wrote, as `emittedCommentKey`s. Only comment kinds count: a status
 * id that happens to equal a comment id is not an echo.
 */
export async function commentsEmittedBy(
  q: Queryable,
  comments: ReadonlyArray<{ installId: string; commentId: string }>,
): Promise<Set<string>> {
  const asked = comments.filter((c) => isUuid(c.installId));
  if (asked.length === 0) return new Set();
  const { rows } = await q.query<{ install_id: string; provider_id: string }>(
    `SELECT DISTINCT e.install_id, e.provider_id
     FROM emitted_events e JOIN unnest($1::uuid[], $2::text[]) AS c(install_id, provider_id)
       ON e.install_id = c.install_id AND e.provider_id = c.provider_id
     WHERE e.kind = ANY($3::text[])`,
    [asked.map((c) => c.installId), asked.map((c) => sanitizeText(c.commentId)), COMMENT_EMIT_KINDS],
  );
  return new Set(rows.map((r) => emittedCommentKey(r.install_id, r.provider_id)));
}

/** How `commentsEmittedBy` names a comment it found. */
export function emittedCommentKey(installId: string, commentId: string): string {
  return `${installId}\u0000${commentId}`;
}

/** The newest PR summary comment this install wrote on the PR, or null. */
export async function findSummaryCommentId(
  q: Queryable,
  installId: string,
  repoFullName: string,
  prNumber: number,
): Promise<string | null> {
  if (!isUuid(installId)) return null;
  const { rows } = await q.query<{ provider_id: string }>(
    `SELECT provider_id FROM emitted_events
     WHERE install_id = $1 AND kind = 'codehost.pr_summary_comment' AND repo_full_name = $2 AND issue_or_pr_number = $3
     ORDER BY emitted_at DESC LIMIT 1`,
    [installId, sanitizeText(repoFullName), prNumber],
  );
  return rows[0]?.provider_id ?? null;
}

/** Forgets a remembered summary comment that no longer exists upstream (deleted by a person). */
export async function forgetSummaryComment(
  q: Queryable,
  installId: string,
  repoFullName: string,
  prNumber: number,
  commentId: string,
): Promise<void> {
  if (!isUuid(installId)) return;
  await q.query(
    `DELETE FROM emitted_events
     WHERE install_id = $1 AND kind = 'codehost.pr_summary_comment' AND repo_full_name = $2
       AND issue_or_pr_number = $3 AND provider_id = $4`,
    [installId, sanitizeText(repoFullName), prNumber, sanitizeText(commentId)],
  );
}
