/**
 * The backfill event (spec §2.3, §6.1; INTERFACE §4): kind `pull_request.backfill_diff`,
 * id `backfill:pr-diff:{repo_id}:{pr_number}` so it never collides with a live
 * `pull_request.opened` on dedup, payload `{repo_id, repo_full_name, pr_number, oversized,
 * diff?}` with numbers as numbers (INTERFACE §8.10).
 */
import type { IngestEvent } from '../../../runtime/ports.js';
import type { ListedPull } from './codehost-api.js';

const BACKFILL_DIFF_KIND = 'pull_request.backfill_diff';
/** INTERFACE §8.9: 1,000,000 bytes of the diff's UTF-8 text. */
export const DIFF_MAX_BYTES = 1_000_000;

export interface BackfillDiff {
  repoId: number;
  repoFullName: string;
  prNumber: number;
  /** Absent when GitHub answered 406 or the diff is over `DIFF_MAX_BYTES`. */
  diff: string | null;
}

export function backfillEventId(repoId: number, prNumber: number): string {
  return `backfill:pr-diff:${repoId}:${prNumber}`;
}

/** spec §6.1 rule 3: an oversized diff is flagged, never sent, and never fails the page. */
export function isOversized(diff: string): boolean {
  // Cheap bound first: a UTF-8 encoding is at least as long as the code-unit count.
  return diff.length > DIFF_MAX_BYTES || Buffer.byteLength(diff, 'utf8') > DIFF_MAX_BYTES;
}

export function backfillDiffEvent(install: { install_id: string; tenant_id: string }, d: BackfillDiff): IngestEvent {
  const oversized = d.diff === null || isOversized(d.diff);
  const payload: Record<string, unknown> = {
    repo_id: d.repoId,
    repo_full_name: d.repoFullName,
    pr_number: d.prNumber,
    oversized,
  };
  if (!oversized) payload.diff = d.diff;
  return {
    installId: install.install_id,
    tenantId: install.tenant_id,
    connectorId: 'codehost',
    id: backfillEventId(d.repoId, d.prNumber),
    kind: BACKFILL_DIFF_KIND,
    occurredAt: null,
    payload,
  };
}

/**
 * INTERFACE §9.5: a backfilled pull request carries what the pulls listing gives. One event
 * per listed PR, published by the pulls step; its own id (never colliding with the diff
 * event or a live delivery), its payload GitHub's listing fields under `pull_request`.
 */
const BACKFILL_PULL_KIND = 'pull_request.backfill';

export function backfillPullEventId(repoId: number, prNumber: number): string {
  return `backfill:pr:${repoId}:${prNumber}`;
}

export function backfillPullEvent(
  install: { install_id: string; tenant_id: string },
  repo: { id: number; full_name: string },
  pull: ListedPull,
): IngestEvent {
  const { head_sha, head_ref, base_ref, ...rest } = pull;
  return {
    installId: install.install_id,
    tenantId: install.tenant_id,
    connectorId: 'codehost',
    id: backfillPullEventId(repo.id, pull.number),
    kind: BACKFILL_PULL_KIND,
    occurredAt: pull.updated_at,
    payload: {
      repo_id: repo.id,
      repo_full_name: repo.full_name,
      pr_number: pull.number,
      // GitHub's own shape, so the projection reads it like a webhook's `pull_request`.
      pull_request: { ...rest, head: { sha: head_sha, ref: head_ref }, base: base_ref ? { ref: base_ref } : undefined },
    },
  };
}
