/**
 * Records of what the service itself emitted upstream, read by the self-emit filters:
 * an event whose provider id this install emitted is the service's own echo (spec Tier 2).
 */
import { isUuid, toIso, type Queryable } from './db.js';
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
  /** INTERFACE §9.3: the Idempotency-Key of the emit that made this write, if it had one. */
  idempotencyKey?: string | null;
}

/** Returns whether a new record was written (a replayed emit finds its record already there). */
export async function recordEmitted(q: Queryable, rec: EmittedRecord): Promise<boolean> {
  const { rowCount } = await q.query(
    `INSERT INTO emitted_events
       (install_id, tenant_id, kind, repo_full_name, issue_or_pr_number, provider_id, by_actor_login, idempotency_key)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
     ON CONFLICT (install_id, kind, repo_full_name, issue_or_pr_number, provider_id) DO NOTHING`,
    [
      rec.installId,
      rec.tenantId,
      sanitizeText(rec.kind),
      sanitizeText(rec.repoFullName ?? ''),
      rec.issueOrPrNumber ?? 0,
      sanitizeText(rec.providerId),
      rec.byActorLogin == null ? null : sanitizeText(rec.byActorLogin),
      rec.idempotencyKey ?? null,
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

/**
 * The write an emit with this Idempotency-Key made, as its receipt, or null (INTERFACE
 * §9.3). Read when a retry takes over a claim whose first call never stored its receipt.
 */
export async function findEmittedReceipt(
  q: Queryable,
  tenantId: string,
  idempotencyKey: string,
): Promise<{ provider_id: string; kind: string; install_id: string; emitted_at: string } | null> {
  const { rows } = await q.query<{ provider_id: string; kind: string; install_id: string; emitted_at: Date }>(
    `SELECT provider_id, kind, install_id, emitted_at FROM emitted_events
     WHERE tenant_id = $1 AND idempotency_key = $2 ORDER BY emitted_at LIMIT 1`,
    [tenantId, idempotencyKey],
  );
  const r = rows[0];
  return r
    ? { provider_id: r.provider_id, kind: r.kind, install_id: r.install_id, emitted_at: toIso(r.emitted_at) }
    : null;
}
