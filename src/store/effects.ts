/**
 * Durable side effects of ingested events (INTERFACE §9.4; migration 008). Rows are
 * inserted inside the ingest transaction, claimed by the effect runner of the shard's
 * owner, and settled as done, retried later, or failed for good after the give-up age.
 */
import { isUuid, toIso, type Queryable } from './db.js';
import { sanitizeText } from './sanitize.js';

export interface NewEffect {
  installId: string;
  tenantId: string;
  connectorId: string;
  /** SERVICE_NAMESPACE of the deployment whose shard owner runs it. */
  namespace: string;
  shard: number;
  eventId: string;
  kind: string;
  serialKey: string;
}

export interface ClaimedEffect {
  id: string;
  install_id: string;
  tenant_id: string;
  connector_id: string;
  event_id: string;
  kind: string;
  serial_key: string;
  attempts: number;
  created_at: Date;
  /** The stored event the effect belongs to (null if it vanished). */
  event_kind: string | null;
  occurred_at: Date | null;
  payload: unknown;
}

/** Per install, for its record (INTERFACE §9.4: failures visible per install). */
export interface EffectsSummary {
  pending: number;
  failed: number;
  retrying: number;
  last_error: string | null;
  last_error_at: string | null;
}

const MAX_ERROR_CHARS = 2000;

export async function insertEffects(q: Queryable, effects: readonly NewEffect[]): Promise<void> {
  if (effects.length === 0) return;
  // One statement for a whole batch; the order of the rows is their order of running.
  await q.query(
    `INSERT INTO effects (install_id, tenant_id, connector_id, namespace, shard, event_id, kind, serial_key)
     SELECT v.install_id, v.tenant_id, v.connector_id, v.namespace, v.shard, v.event_id, v.kind, v.serial_key
     FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::int[], $6::text[], $7::text[], $8::text[])
          WITH ORDINALITY AS v(install_id, tenant_id, connector_id, namespace, shard, event_id, kind, serial_key, ord)
     ORDER BY v.ord
     ON CONFLICT (install_id, event_id, kind) DO NOTHING`,
    [
      effects.map((e) => e.installId),
      effects.map((e) => e.tenantId),
      effects.map((e) => e.connectorId),
      effects.map((e) => e.namespace),
      effects.map((e) => e.shard),
      effects.map((e) => sanitizeText(e.eventId)),
      effects.map((e) => e.kind),
      effects.map((e) => sanitizeText(e.serialKey).slice(0, 500)),
    ],
  );
}

/**
 * Claims up to `limit` due effects of the given shards for `claimMs`. Of the pending
 * effects sharing an (install, serial key) only the oldest is ever claimable, so they run
 * one at a time in order; a claim held by another runner (or a dead one, until it lapses)
 * is skipped.
 */
export async function claimDueEffects(
  q: Queryable,
  namespace: string,
  shards: readonly number[],
  limit: number,
  claimMs: number,
): Promise<ClaimedEffect[]> {
  if (shards.length === 0) return [];
  const { rows } = await q.query<ClaimedEffect>(
    `WITH due AS (
       SELECT f.id FROM effects f
       WHERE f.state = 'pending' AND f.namespace = $4 AND f.shard = ANY($1::int[]) AND f.next_at <= now()
         AND (f.claimed_until IS NULL OR f.claimed_until < now())
         AND NOT EXISTS (SELECT 1 FROM effects g WHERE g.install_id = f.install_id
                         AND g.serial_key = f.serial_key AND g.state = 'pending' AND g.id < f.id)
       ORDER BY f.next_at, f.id
       LIMIT $2
       FOR UPDATE OF f SKIP LOCKED
     ), claimed AS (
       UPDATE effects e SET claimed_until = now() + ($3::int * interval '1 millisecond'), attempts = e.attempts + 1,
              updated_at = now()
       FROM due WHERE e.id = due.id
       RETURNING e.*
     )
     SELECT c.id::text AS id, c.install_id, c.tenant_id, c.connector_id, c.event_id, c.kind, c.serial_key,
            c.attempts, c.created_at, ev.kind AS event_kind, ev.occurred_at, ev.payload
     FROM claimed c LEFT JOIN events ev ON ev.install_id = c.install_id AND ev.id = c.event_id`,
    [shards, limit, claimMs, namespace],
  );
  return rows;
}

export async function completeEffect(q: Queryable, id: string): Promise<void> {
  await q.query(`UPDATE effects SET state = 'done', claimed_until = NULL, updated_at = now() WHERE id = $1::bigint`, [
    id,
  ]);
}

/** A failed attempt: due again after `retryInMs`, or failed for good when `giveUp`. */
export async function failEffect(
  q: Queryable,
  id: string,
  error: string,
  opts: { retryInMs: number; giveUp: boolean },
): Promise<void> {
  await q.query(
    `UPDATE effects
     SET state = CASE WHEN $4 THEN 'failed' ELSE 'pending' END, last_error = $2,
         next_at = now() + ($3::int * interval '1 millisecond'), claimed_until = NULL, updated_at = now()
     WHERE id = $1::bigint`,
    [id, sanitizeText(error.slice(0, MAX_ERROR_CHARS)), Math.max(0, Math.round(opts.retryInMs)), opts.giveUp],
  );
}

/** Hands a claim back untouched (the runner is stopping): it runs again at once elsewhere. */
export async function releaseEffect(q: Queryable, id: string): Promise<void> {
  await q.query(`UPDATE effects SET claimed_until = NULL, attempts = greatest(0, attempts - 1) WHERE id = $1::bigint`, [
    id,
  ]);
}

export async function summarizeEffects(q: Queryable, installId: string): Promise<EffectsSummary> {
  const empty: EffectsSummary = { pending: 0, failed: 0, retrying: 0, last_error: null, last_error_at: null };
  if (!isUuid(installId)) return empty;
  const { rows } = await q.query<{
    pending: string;
    failed: string;
    retrying: string;
    last_error: string | null;
    last_error_at: Date | null;
  }>(
    `SELECT count(*) FILTER (WHERE state = 'pending') AS pending,
            count(*) FILTER (WHERE state = 'failed') AS failed,
            count(*) FILTER (WHERE state = 'pending' AND last_error IS NOT NULL) AS retrying,
            (array_agg(last_error ORDER BY updated_at DESC) FILTER (WHERE last_error IS NOT NULL))[1] AS last_error,
            max(updated_at) FILTER (WHERE last_error IS NOT NULL) AS last_error_at
     FROM effects WHERE install_id = $1`,
    [installId],
  );
  const r = rows[0];
  if (!r) return empty;
  return {
    pending: Number(r.pending),
    failed: Number(r.failed),
    retrying: Number(r.retrying),
    last_error: r.last_error,
    last_error_at: r.last_error_at === null ? null : toIso(r.last_error_at),
  };
}
