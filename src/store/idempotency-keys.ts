/**
 * Idempotency-Key claims (INTERFACE §9.3), kept in Postgres so that duplicates arriving
 * on different nodes collapse onto one call. See migration 011 for the row's life.
 */
import type { Queryable } from './db.js';

/** How long a key is remembered (INTERFACE §9.3: 24 hours). */
export const IDEMPOTENCY_TTL_HOURS = 24;

/** `takeover`: the key was claimed before by a call that never stored its receipt. */
export type Claim =
  | { state: 'claimed'; takeover: boolean }
  | { state: 'done'; receipt: unknown }
  | { state: 'running' }
  | { state: 'mismatch' };

/**
 * Claims `key` for a call whose fingerprint is `fingerprint`, or reports who has it.
 * A row older than the TTL is replaced; an abandoned claim (no receipt, lock expired)
 * is taken over by a call with the same fingerprint.
 */
export async function claimIdempotencyKey(
  q: Queryable,
  a: { tenantId: string; key: string; fingerprint: Buffer; lockMs: number },
): Promise<Claim> {
  for (;;) {
    const won = await q.query<{ inserted: boolean }>(
      `INSERT INTO idempotency_keys (tenant_id, key, fingerprint, locked_until)
       VALUES ($1, $2, $3, now() + $4 * interval '1 millisecond')
       ON CONFLICT (tenant_id, key) DO UPDATE
         SET fingerprint = EXCLUDED.fingerprint, receipt = NULL, locked_until = EXCLUDED.locked_until,
             created_at = CASE WHEN idempotency_keys.created_at < now() - $5 * interval '1 hour'
                               THEN now() ELSE idempotency_keys.created_at END
         WHERE idempotency_keys.created_at < now() - $5 * interval '1 hour'
            OR (idempotency_keys.receipt IS NULL AND idempotency_keys.locked_until < now()
                AND idempotency_keys.fingerprint = EXCLUDED.fingerprint)
       RETURNING (xmax = 0) AS inserted`,
      [a.tenantId, a.key, a.fingerprint, a.lockMs, IDEMPOTENCY_TTL_HOURS],
    );
    // xmax = 0 on a freshly inserted row; a replaced one was an expired or abandoned claim.
    if (won.rowCount === 1) return { state: 'claimed', takeover: won.rows[0]?.inserted === false };
    const { rows } = await q.query<{ fingerprint: Buffer; receipt: unknown }>(
      `SELECT fingerprint, receipt FROM idempotency_keys WHERE tenant_id = $1 AND key = $2`,
      [a.tenantId, a.key],
    );
    // Released between the two statements: claim again.
    if (rows.length === 0) continue;
    const row = rows[0]!;
    if (!row.fingerprint.equals(a.fingerprint)) return { state: 'mismatch' };
    return row.receipt === null ? { state: 'running' } : { state: 'done', receipt: row.receipt };
  }
}

/** Stores the first call's receipt; later calls with the key replay it. */
export async function completeIdempotencyKey(
  q: Queryable,
  tenantId: string,
  key: string,
  receipt: unknown,
): Promise<void> {
  await q.query(`UPDATE idempotency_keys SET receipt = $3 WHERE tenant_id = $1 AND key = $2 AND receipt IS NULL`, [
    tenantId,
    key,
    JSON.stringify(receipt),
  ]);
}

/** Gives the key up after a call that wrote nothing, so a retry with it runs again. */
export async function releaseIdempotencyKey(q: Queryable, tenantId: string, key: string): Promise<void> {
  await q.query(`DELETE FROM idempotency_keys WHERE tenant_id = $1 AND key = $2 AND receipt IS NULL`, [tenantId, key]);
}
