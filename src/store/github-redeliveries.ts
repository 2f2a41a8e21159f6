/**
 * How many times reconciliation asked GitHub to redeliver a delivery guid (INTERFACE §9.4;
 * migration 085): the bound on asking again for a delivery the service keeps failing.
 */
import type { Queryable } from './db.js';

/** GitHub keeps a delivery (and lets it be redelivered) for three days. */
const REDELIVERY_MEMORY_DAYS = 3;

/**
 * Takes one of the guid's `max` redelivery requests: true when one was left (and is now
 * counted), false when all were used. One statement, so two passes never both take the last.
 */
export async function takeRedeliveryRequest(q: Queryable, appId: number, guid: string, max: number): Promise<boolean> {
  const { rows } = await q.query(
    `INSERT INTO github_redeliveries AS r (app_id, guid, requests) VALUES ($1, $2, 1)
     ON CONFLICT (app_id, guid) DO UPDATE SET requests = r.requests + 1, last_requested_at = now()
       WHERE r.requests < $3
     RETURNING r.requests`,
    [appId, guid, max],
  );
  return rows.length > 0;
}

/** A request that did not get through gives its count back. */
export async function returnRedeliveryRequest(q: Queryable, appId: number, guid: string): Promise<void> {
  await q.query(
    `UPDATE github_redeliveries SET requests = requests - 1 WHERE app_id = $1 AND guid = $2 AND requests > 0`,
    [appId, guid],
  );
}

/** Forgets guids GitHub no longer keeps; bounded per call. Returns how many rows went. */
export async function forgetOldRedeliveries(q: Queryable, limit = 1000): Promise<number> {
  const { rowCount } = await q.query(
    `DELETE FROM github_redeliveries WHERE ctid IN (
       SELECT ctid FROM github_redeliveries
        WHERE last_requested_at < now() - make_interval(days => $1) LIMIT $2)`,
    [REDELIVERY_MEMORY_DAYS, limit],
  );
  return rowCount ?? 0;
}
