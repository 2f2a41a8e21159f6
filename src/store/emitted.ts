/**
 * Records of what the service itself emitted upstream, read by the self-emit filters:
 * an event whose provider id this install emitted is the service's own echo (spec Tier 2).
 */
import { isUuid, type Queryable } from './db.js';
import { sanitizeText } from './sanitize.js';

export interface EmittedRecord {
  installId: string;
  tenantId: string;
  kind: string;
  /** Code host: `owner/repo`. Chat: the channel id. */
  repoFullName?: string;
  /** Code host: the issue or PR number; chat: omitted (0). */
  issueOrPrNumber?: number;
  /** INTERFACE §8.6: the receipt's provider_id. */
  providerId: string;
  byActorLogin?: string | null;
}

/** Returns whether a new record was written (a replayed emit finds its record already there). */
export async function recordEmitted(q: Queryable, rec: EmittedRecord): Promise<boolean> {
  const { rowCount } = await q.query(
    `INSERT INTO emitted_events
       (install_id, tenant_id, kind, repo_full_name, issue_or_pr_number, provider_id, by_actor_login)
     VALUES ($1, $2, $3, $4, $5, $6, $7)
     ON CONFLICT (install_id, kind, repo_full_name, issue_or_pr_number, provider_id) DO NOTHING`,
    [
      rec.installId,
      rec.tenantId,
      sanitizeText(rec.kind),
      sanitizeText(rec.repoFullName ?? ''),
      rec.issueOrPrNumber ?? 0,
      sanitizeText(rec.providerId),
      rec.byActorLogin == null ? null : sanitizeText(rec.byActorLogin),
    ],
  );
  return (rowCount ?? 0) > 0;
}

export async function wasEmittedBy(q: Queryable, installId: string, providerId: string): Promise<boolean> {
  if (!isUuid(installId)) return false;
  const { rows } = await q.query('SELECT 1 FROM emitted_events WHERE install_id = $1 AND provider_id = $2 LIMIT 1', [
    installId,
    sanitizeText(providerId),
  ]);
  return rows.length > 0;
}
