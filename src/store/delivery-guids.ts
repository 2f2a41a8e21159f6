/**
 * Which GitHub delivery guids are stored as events (INTERFACE §9.4: "whose guid was never
 * stored"). A webhook's event id is its `X-GitHub-Delivery` (INTERFACE §4), stored once per
 * bound install; one stored copy is enough to know the delivery reached the service.
 */
import type { Queryable } from './db.js';

export async function storedDeliveryGuids(q: Queryable, guids: string[]): Promise<Set<string>> {
  if (guids.length === 0) return new Set();
  // Through the installs, so each lookup uses the events primary key (install_id, id).
  const { rows } = await q.query<{ id: string }>(
    `SELECT DISTINCT e.id
       FROM installs i
       JOIN events e ON e.install_id = i.install_id AND e.id = ANY($1::text[])
      WHERE i.connector_id = 'codehost'`,
    [guids],
  );
  return new Set(rows.map((r) => r.id));
}
