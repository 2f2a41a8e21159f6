/**
 * The audit log (INTERFACE §10.5, migration 042): one entry per audited action of a tenant,
 * append-only for the service's roles; listed newest first with keyset pagination.
 */
import { BadRequest } from '../errors.js';
import { isUuid, toIso, type Queryable } from './db.js';
import { sanitizeText } from './sanitize.js';

export interface AuditEntry {
  tenantId: string;
  action: string;
  keyId: string | null;
  requestId: string | null;
  target: string | null;
  outcome: string;
}

/**
 * An audited action as its caller names it (who asked, with which request, on what), carried
 * down to the transaction that performs it, which writes it with outcome `ok` (INTERFACE
 * §10.5: an entry is committed with its action, never without it).
 */
export interface AuditStamp {
  action: string;
  keyId: string | null;
  requestId: string | null;
  target: string | null;
}

export interface ListedAuditEntry {
  id: string;
  at: string;
  action: string;
  key_id: string | null;
  request_id: string | null;
  target: string | null;
  outcome: string;
}

export async function recordAudit(q: Queryable, e: AuditEntry): Promise<void> {
  await q.query(
    `INSERT INTO audit_log (tenant_id, action, key_id, request_id, target, outcome) VALUES ($1, $2, $3, $4, $5, $6)`,
    [
      e.tenantId,
      sanitizeText(e.action),
      isUuid(e.keyId) ? e.keyId : null,
      e.requestId === null ? null : sanitizeText(e.requestId),
      e.target === null ? null : sanitizeText(e.target),
      sanitizeText(e.outcome),
    ],
  );
}

/** The `ok` entry of an action, written by the transaction that commits the action. */
export async function recordAuditOk(q: Queryable, tenantId: string, stamp: AuditStamp): Promise<void> {
  await recordAudit(q, {
    tenantId,
    action: stamp.action,
    keyId: stamp.keyId,
    requestId: stamp.requestId,
    target: stamp.target,
    outcome: 'ok',
  });
}

const CURSOR = /^[1-9]\d{0,18}$/;

/** Newest first; `cursor` is the id of the last entry of the previous page. */
export async function listAudit(
  q: Queryable,
  tenantId: string,
  opts: { limit: number; cursor?: string | null },
): Promise<{ entries: ListedAuditEntry[]; next_cursor: string | null }> {
  if (opts.cursor != null && !CURSOR.test(opts.cursor)) throw new BadRequest('cursor is not one this service issued');
  const { rows } = await q.query<Omit<ListedAuditEntry, 'at'> & { at: Date }>(
    `SELECT id::text AS id, at, action, key_id, request_id, target, outcome FROM audit_log
      WHERE tenant_id = $1 AND ($2::bigint IS NULL OR id < $2)
      ORDER BY audit_log.id DESC LIMIT $3`, // the column: the output's id is text, where '9' > '10'
    [tenantId, opts.cursor ?? null, opts.limit + 1],
  );
  const page = rows.slice(0, opts.limit);
  return {
    entries: page.map((r) => ({ ...r, at: toIso(r.at) })),
    next_cursor: rows.length > opts.limit ? page[page.length - 1]!.id : null,
  };
}

/** Retention (housekeeping): up to `limit` entries older than `before`, through the owner's function. */
export async function pruneAudit(q: Queryable, before: Date, limit: number): Promise<number> {
  const { rows } = await q.query<{ n: number }>('SELECT audit_log_prune($1, $2) AS n', [before, limit]);
  return rows[0]?.n ?? 0;
}
