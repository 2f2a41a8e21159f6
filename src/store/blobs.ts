/**
 * Ingest payloads too big for a NATS message (webhooks up to 25 MiB, INTERFACE §2) are
 * stored here before the publish; the message carries the ref, and the consumer deletes
 * the blob once the event is stored. `pruneBlobs` clears refs whose publish never happened.
 */
import { isUuid, type Queryable } from './db.js';

/** `tenantId` fences the blob to its tenant (migration 013); cross-tenant roles see it regardless. */
export async function putBlob(q: Queryable, data: Buffer, tenantId?: string): Promise<string> {
  const { rows } = await q.query<{ ref: string }>(
    'INSERT INTO ingest_blobs (data, tenant_id) VALUES ($1, $2) RETURNING ref',
    [data, isUuid(tenantId) ? tenantId : null],
  );
  return rows[0]!.ref;
}

export async function getBlob(q: Queryable, ref: string): Promise<Buffer | null> {
  if (!isUuid(ref)) return null;
  const { rows } = await q.query<{ data: Buffer }>('SELECT data FROM ingest_blobs WHERE ref = $1', [ref]);
  return rows[0]?.data ?? null;
}

/** A dead letter's blob without what its platform asked to forget (INTERFACE §10.5); the ref stays. */
export async function replaceBlob(q: Queryable, ref: string, data: Buffer): Promise<void> {
  if (isUuid(ref)) await q.query('UPDATE ingest_blobs SET data = $2 WHERE ref = $1', [ref, data]);
}

/** Returns whether the blob existed. */
export async function deleteBlob(q: Queryable, ref: string): Promise<boolean> {
  if (!isUuid(ref)) return false;
  const { rowCount } = await q.query('DELETE FROM ingest_blobs WHERE ref = $1', [ref]);
  return (rowCount ?? 0) > 0;
}

/** Deletes blobs older than `olderThanMs` (orphans of failed publishes); returns how many. */
export async function pruneBlobs(q: Queryable, olderThanMs: number): Promise<number> {
  const { rowCount } = await q.query(
    `DELETE FROM ingest_blobs WHERE created_at < now() - $1::bigint * interval '1 millisecond'`,
    [Math.max(0, Math.floor(olderThanMs))],
  );
  return rowCount ?? 0;
}
