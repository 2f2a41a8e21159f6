/**
 * The ingest log (ARCHITECTURE "Inbound"; INTERFACE §3 ".../events", §8.27).
 *
 * `(install_id, id)` is the dedup key: a replayed or redelivered event inserts nothing.
 * The listing is newest first by `(received_at, seq)` with keyset pagination, so a cursor
 * stays valid and skips nothing while new events arrive (they sort before it).
 */
import { BadRequest } from '../errors.js';
import type { IngestEvent } from '../runtime/ports.js';
import { isUuid, toIso, type Queryable } from './db.js';
import type { ConnectorId } from './installs.js';
import { queryJsonRows } from './json-rows.js';
import { jsonText, sanitizeText } from './sanitize.js';

/** An event as the events route lists it (INTERFACE §3): the caller's tenant is not repeated. */
interface StoredEvent {
  id: string;
  kind: string;
  connector_id: ConnectorId;
  install_id: string;
  occurred_at: string | null;
  received_at: string;
  payload: unknown;
}

export interface NewEvent {
  /** The upstream event id, unique per install (INTERFACE §4). */
  id: string;
  kind: string;
  connector_id: string;
  install_id: string;
  tenant_id: string;
  /** When it happened upstream, if known. */
  occurred_at?: Date | string | null;
  payload: unknown;
}

/** The events-table row of an ingested event (the install actor's group commit). */
export function newEventOf(ev: IngestEvent): NewEvent {
  return {
    id: ev.id,
    kind: ev.kind,
    connector_id: ev.connectorId,
    install_id: ev.installId,
    tenant_id: ev.tenantId,
    occurred_at: ev.occurredAt,
    payload: ev.payload,
  };
}

export interface ListEventsOptions {
  kind?: string;
  /** Default 50; values above 500 are cut to 500. */
  limit?: number;
  cursor?: string | null;
}

export interface EventPage {
  events: StoredEvent[];
  next_cursor: string | null;
}

const DEFAULT_EVENTS_LIMIT = 50;
export const MAX_EVENTS_LIMIT = 500;

/** Returns whether the event was new (false: a duplicate, dropped by the dedup key). */
export async function insertEvent(q: Queryable, ev: NewEvent): Promise<boolean> {
  const { rowCount } = await q.query(
    `INSERT INTO events (install_id, id, tenant_id, connector_id, kind, occurred_at, payload)
     VALUES ($1, $2, $3, $4, $5, $6::timestamptz, $7::jsonb)
     ON CONFLICT (install_id, id) DO NOTHING`,
    [
      ev.install_id,
      sanitizeText(ev.id),
      ev.tenant_id,
      sanitizeText(ev.connector_id),
      sanitizeText(ev.kind),
      occurredAt(ev.occurred_at),
      jsonText(ev.payload),
    ],
  );
  return (rowCount ?? 0) > 0;
}

/** An event row as insertEvents reads it from JSON (json-rows.ts). */
const EVENT_ROW =
  'install_id uuid, id text, tenant_id uuid, connector_id text, kind text, occurred_at timestamptz, payload jsonb';

/**
 * Group commit (ARCHITECTURE "Inbound" 2): inserts a batch of events, of one install or
 * several, with one statement, in order. Returns, per event, whether it was new; an event
 * (install and id) repeated inside the batch counts as new once, at its first place.
 */
export async function insertEvents(q: Queryable, events: readonly NewEvent[]): Promise<boolean[]> {
  if (events.length === 0) return [];
  const ids = events.map((ev) => sanitizeText(ev.id));
  // The rows as JSON (json-rows.ts). JSON null would become SQL NULL: hence the COALESCE.
  const { rows } = await queryJsonRows<{ install_id: string; id: string }>(
    q,
    events.map((ev, i) => ({
      install_id: ev.install_id,
      id: ids[i],
      tenant_id: ev.tenant_id,
      connector_id: ev.connector_id,
      kind: ev.kind,
      occurred_at: occurredAt(ev.occurred_at),
      payload: ev.payload ?? null,
    })),
    `INSERT INTO events (install_id, id, tenant_id, connector_id, kind, occurred_at, payload)
     SELECT v.install_id, v.id, v.tenant_id, v.connector_id, v.kind, v.occurred_at, COALESCE(v.payload, 'null')
     FROM ROWS FROM (jsonb_to_recordset($1::jsonb) AS (${EVENT_ROW}))
          WITH ORDINALITY AS v(install_id, id, tenant_id, connector_id, kind, occurred_at, payload, ord)
     ORDER BY v.ord
     ON CONFLICT (install_id, id) DO NOTHING
     RETURNING install_id, id`,
    (doc) => [doc],
  );
  const inserted = new Set(rows.map((r) => `${r.install_id}\u0000${r.id}`));
  return events.map((ev, i) => inserted.delete(`${ev.install_id}\u0000${ids[i]}`));
}

function occurredAt(v: Date | string | null | undefined): string | null {
  if (v === null || v === undefined) return null;
  const d = typeof v === 'string' ? new Date(v) : v;
  if (Number.isNaN(d.getTime())) throw new BadRequest('occurred_at is not a valid timestamp');
  return d.toISOString();
}

interface EventRow {
  id: string;
  kind: string;
  connector_id: ConnectorId;
  install_id: string;
  occurred_at: Date | null;
  received_at: Date;
  payload: unknown;
  /** received_at to the microsecond (a JS Date keeps only milliseconds). */
  received_key: string;
  seq: string;
}

export async function listEvents(
  q: Queryable,
  tenantId: string,
  installId: string,
  opts: ListEventsOptions = {},
): Promise<EventPage> {
  const limit = opts.limit ?? DEFAULT_EVENTS_LIMIT;
  if (!Number.isInteger(limit) || limit < 1) throw new BadRequest('limit must be a whole number of at least 1');
  const after = opts.cursor == null ? null : decodeCursor(opts.cursor);
  if (!isUuid(tenantId) || !isUuid(installId)) return { events: [], next_cursor: null };

  const params: unknown[] = [tenantId, installId];
  let where = 'tenant_id = $1 AND install_id = $2';
  if (opts.kind !== undefined) {
    params.push(sanitizeText(opts.kind));
    where += ` AND kind = $${params.length}`;
  }
  if (after !== null) {
    params.push(after.receivedAt, after.seq);
    where += ` AND (received_at, seq) < ($${params.length - 1}::timestamptz, $${params.length}::bigint)`;
  }
  const take = Math.min(limit, MAX_EVENTS_LIMIT);
  // One row more than asked tells whether another page exists.
  params.push(take + 1);
  const { rows } = await q.query<EventRow>(
    `SELECT id, kind, connector_id, install_id, occurred_at, received_at, payload, seq,
            to_char(received_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS received_key
     FROM events WHERE ${where}
     ORDER BY received_at DESC, seq DESC
     LIMIT $${params.length}`,
    params,
  );
  const page = rows.slice(0, take);
  const last = page[page.length - 1];
  return {
    events: page.map(toStoredEvent),
    next_cursor: rows.length > take && last ? encodeCursor(last.received_key, last.seq) : null,
  };
}

function toStoredEvent(r: EventRow): StoredEvent {
  return {
    id: r.id,
    kind: r.kind,
    connector_id: r.connector_id,
    install_id: r.install_id,
    occurred_at: toIso(r.occurred_at),
    received_at: toIso(r.received_at),
    payload: r.payload,
  };
}

const RECEIVED_KEY = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;
const SEQ = /^[1-9]\d{0,18}$/;

/** Opaque to clients: base64url of `[received_at (µs, UTC), seq]` of the page's last row. */
export function encodeCursor(receivedKey: string, seq: string): string {
  return Buffer.from(JSON.stringify([receivedKey, seq]), 'utf8').toString('base64url');
}

/** A cursor this module did not make is a BadRequest, never a database error. */
export function decodeCursor(cursor: string): { receivedAt: string; seq: string } {
  const bad = () => new BadRequest('cursor is not one this service issued');
  if (typeof cursor !== 'string' || cursor.length === 0 || cursor.length > 200 || !/^[A-Za-z0-9_-]+$/.test(cursor)) {
    throw bad();
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw bad();
  }
  if (!Array.isArray(parsed) || parsed.length !== 2) throw bad();
  const [receivedAt, seq] = parsed as unknown[];
  if (typeof receivedAt !== 'string' || typeof seq !== 'string' || !RECEIVED_KEY.test(receivedAt) || !SEQ.test(seq)) {
    throw bad();
  }
  // The shape can still name a day that does not exist (02-30): the round trip catches it.
  const ms = `${receivedAt.slice(0, 23)}Z`;
  const d = new Date(ms);
  if (Number.isNaN(d.getTime()) || d.toISOString() !== ms) throw bad();
  if (BigInt(seq) > 9223372036854775807n) throw bad();
  return { receivedAt, seq };
}

/**
 * Which of `keys` the events table holds, one answer per key in order (a shard's new owner
 * at takeover, ingest/takeover.ts). One statement for the lot. Keyed by the primary
 * key: an install id names one tenant's install, so no key can see another tenant's row,
 * and only a boolean per key comes back. A key whose install id is not a uuid is not stored.
 */
export async function storedEventKeys(
  q: Queryable,
  keys: readonly { installId: string; id: string }[],
): Promise<boolean[]> {
  const asked = keys.flatMap((k, i) =>
    isUuid(k.installId) ? [{ i, installId: k.installId, id: sanitizeText(k.id) }] : [],
  );
  const out = keys.map(() => false);
  if (asked.length === 0) return out;
  const { rows } = await q.query<{ ord: string }>(
    `SELECT k.ord FROM unnest($1::uuid[], $2::text[]) WITH ORDINALITY AS k(install_id, id, ord)
     WHERE EXISTS (SELECT 1 FROM events e WHERE e.install_id = k.install_id AND e.id = k.id)`,
    [asked.map((a) => a.installId), asked.map((a) => a.id)],
  );
  for (const r of rows) out[asked[Number(r.ord) - 1]!.i] = true;
  return out;
}
