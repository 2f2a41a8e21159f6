/**
 * Retention (INTERFACE §10.5): each function deletes at most `limit` rows past their time in
 * one short statement (or one short transaction), oldest first, and returns how many it
 * deleted, so the housekeeping pass (src/graph/housekeeping-pass.ts) works in bounded
 * batches that hold row locks for milliseconds. Rows another transaction holds (an ingest
 * scrubbing an old event) are skipped this time (`SKIP LOCKED`), never waited on. The cutoffs
 * come from the caller's clock. Indexes: migration 041.
 */
import type { Queryable } from './db.js';

/** Stored events received before `cutoff` (SERVICE_EVENTS_RETENTION_DAYS; the graph keeps its projection). */
export async function pruneEvents(q: Queryable, cutoff: Date, limit: number): Promise<number> {
  const { rowCount } = await q.query(
    `DELETE FROM events e USING (
       SELECT install_id, id FROM events WHERE received_at < $1 ORDER BY received_at LIMIT $2 FOR UPDATE SKIP LOCKED
     ) o WHERE e.install_id = o.install_id AND e.id = o.id`,
    [cutoff, limit],
  );
  return rowCount ?? 0;
}

/** Effects finished (done or given up) before `cutoff`. */
export async function pruneFinishedEffects(q: Queryable, cutoff: Date, limit: number): Promise<number> {
  const { rowCount } = await q.query(
    `DELETE FROM effects e USING (
       SELECT id FROM effects WHERE state <> 'pending' AND updated_at < $1 ORDER BY updated_at LIMIT $2
       FOR UPDATE SKIP LOCKED
     ) o WHERE e.id = o.id`,
    [cutoff, limit],
  );
  return rowCount ?? 0;
}

/** Idempotency-Key claims made before `cutoff` (INTERFACE §9.3: remembered 24 hours). */
export async function pruneIdempotencyKeys(q: Queryable, cutoff: Date, limit: number): Promise<number> {
  const { rowCount } = await q.query(
    `DELETE FROM idempotency_keys k USING (
       SELECT tenant_id, key FROM idempotency_keys WHERE created_at < $1 ORDER BY created_at LIMIT $2
       FOR UPDATE SKIP LOCKED
     ) o WHERE k.tenant_id = o.tenant_id AND k.key = o.key`,
    [cutoff, limit],
  );
  return rowCount ?? 0;
}

/** Dead letters recorded before `cutoff`. */
export async function pruneDeadLetters(q: Queryable, cutoff: Date, limit: number): Promise<number> {
  const { rowCount } = await q.query(
    `DELETE FROM dead_letters d USING (
       SELECT id FROM dead_letters WHERE failed_at < $1 ORDER BY failed_at LIMIT $2 FOR UPDATE SKIP LOCKED
     ) o WHERE d.id = o.id`,
    [cutoff, limit],
  );
  return rowCount ?? 0;
}

/**
 * Payload blobs stored before `cutoff`: orphans of a publish that never happened, and the
 * blobs of dead letters (the caller passes a cutoff older than the dead letters').
 */
export async function pruneBlobsBefore(q: Queryable, cutoff: Date, limit: number): Promise<number> {
  const { rowCount } = await q.query(
    `DELETE FROM ingest_blobs b USING (
       SELECT ref FROM ingest_blobs WHERE created_at < $1 ORDER BY created_at LIMIT $2 FOR UPDATE SKIP LOCKED
     ) o WHERE b.ref = o.ref`,
    [cutoff, limit],
  );
  return rowCount ?? 0;
}

/** Installs uninstalled before `cutoff` (their status last changed then). */
export async function expiredUninstalls(
  q: Queryable,
  cutoff: Date,
): Promise<Array<{ install_id: string; tenant_id: string }>> {
  const { rows } = await q.query<{ install_id: string; tenant_id: string }>(
    `SELECT install_id, tenant_id FROM installs WHERE status = 'uninstalled' AND updated_at < $1 ORDER BY updated_at`,
    [cutoff],
  );
  return rows;
}

/** Rows of one table that one batch of an install's data deleted. */
export type InstallRows = Partial<Record<'events' | 'effects' | 'emitted_events', number>>;

/**
 * One batch of an expired install's rows (INTERFACE §10.5: its events and effects, its emit
 * records too; its graph nodes go through src/graph/delete-nodes.ts): up to `limit` rows of
 * the first table that still has some. An empty result means none of these is left.
 */
export async function pruneInstallRows(q: Queryable, installId: string, limit: number): Promise<InstallRows> {
  const args = [installId, limit];
  for (const [table, sql] of [
    [
      'events',
      `DELETE FROM events e USING (SELECT id FROM events WHERE install_id = $1 LIMIT $2) o
        WHERE e.install_id = $1 AND e.id = o.id`,
    ],
    [
      'effects',
      `DELETE FROM effects e USING (SELECT id FROM effects WHERE install_id = $1 LIMIT $2) o WHERE e.id = o.id`,
    ],
    [
      'emitted_events',
      `DELETE FROM emitted_events e USING (SELECT ctid FROM emitted_events WHERE install_id = $1 LIMIT $2) o
        WHERE e.ctid = o.ctid`,
    ],
  ] as const) {
    const { rowCount } = await q.query(sql, args);
    if ((rowCount ?? 0) > 0) return { [table]: rowCount ?? 0 };
  }
  return {};
}

/** The oldest row each retention keeps, as a time (null: the table holds none). One cheap statement. */
export async function oldestKept(q: Queryable): Promise<Record<string, Date | null>> {
  const { rows } = await q.query<Record<string, Date | null>>(
    `SELECT (SELECT min(received_at) FROM events) AS events,
            (SELECT min(updated_at) FROM effects WHERE state <> 'pending') AS effects,
            (SELECT min(created_at) FROM idempotency_keys) AS idempotency_keys,
            (SELECT min(failed_at) FROM dead_letters) AS dead_letters`,
  );
  return rows[0] ?? {};
}
