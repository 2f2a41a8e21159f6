/**
 * What a tenant's platform asked to forget (INTERFACE §10.5, migration 040): the tombstones,
 * and the removal of a chat message's content from every stored copy (its events and the
 * dead letters that carry them). Called inside the ingest transaction that stores the
 * `message_deleted` (ARCHITECTURE "Data lifecycle": a deletion reaches every copy in the
 * transaction that records it).
 */
import { getBlob, replaceBlob } from './blobs.js';
import { isUuid, type Queryable } from './db.js';
import { jsonText } from './sanitize.js';

/** A tombstone, named as the graph node it stands for (INTERFACE §5). */
export interface ForgottenKey {
  tenantId: string;
  kind: string;
  externalId: string;
}

/**
 * INTERFACE §10.5: a forgotten message loses its text, blocks, attachments and file
 * references, and the copies Slack nests (`previous_message`, `message`); ids, kinds and
 * timestamps stay.
 */
export const CONTENT_KEYS: readonly string[] = [
  'text',
  'blocks',
  'attachments',
  'files',
  'previous_message',
  'message',
];

/** The payload without its content (CONTENT_KEYS); the same object when it had none. */
export function withoutContent(payload: unknown): unknown {
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) return payload;
  const p = payload as Record<string, unknown>;
  if (!CONTENT_KEYS.some((k) => k in p)) return payload;
  return Object.fromEntries(Object.entries(p).filter(([k]) => !CONTENT_KEYS.includes(k)));
}

const keyOf = (k: ForgottenKey) => `${k.tenantId}\u0000${k.kind}\u0000${k.externalId}`;

/**
 * The first key of the tenants' forget lock (pg_advisory_xact_lock's two-int form); the second
 * is the tenant's hash.
 */
const FORGET_LOCK_CLASS = 1_040_010;

/**
 * Holds the tenants' forget lock to the end of `tx`: shared by an ingest transaction from its
 * start (ingest/transaction.ts `writeIngest`: before it reads the tombstones, `forgottenAmong`,
 * and before it writes anything, a deletion's tombstone included, forget-deleted.ts),
 * exclusive by an erase before it writes one (erase-user.ts) and by the recording of a dead
 * letter before it reads them (ingest/dead-letter-port.ts: a dead letter recorded meanwhile is
 * either scrubbed by the deletion or the erase, or records its event without the text).
 * Without it an ingest transaction that read no tombstone could commit the erased user's text
 * after the erase had looked for it (its rows were not yet visible), and the text stayed. With
 * it the erase waits for such a transaction and then finds its rows, and an ingest transaction
 * that starts while an erase runs reads that erase's tombstone. Ingest transactions never wait
 * for each other. Must come before the statements it guards (a statement's snapshot is taken
 * before any lock it waits for), and before the transaction writes a row: one that wrote a row
 * the erase then waits for, and waited for the lock the erase holds, would deadlock with it.
 */
export async function holdForgetLock(
  tx: Queryable,
  tenantIds: readonly string[],
  mode: 'shared' | 'exclusive',
): Promise<void> {
  const ids = [...new Set(tenantIds.filter((t) => isUuid(t)))].sort();
  if (ids.length === 0) return;
  const fn = mode === 'shared' ? 'pg_advisory_xact_lock_shared' : 'pg_advisory_xact_lock';
  await tx.query(`SELECT count(${fn}(${FORGET_LOCK_CLASS}, hashtext(t))) FROM unnest($1::text[]) AS t`, [ids]);
}

/**
 * Which of `keys` have a tombstone, as keys of `forgottenKey`. The caller's transaction holds
 * the tenants' forget lock (`holdForgetLock`: an ingest transaction from its start, the
 * recording of a dead letter exclusively), so no erase or deletion commits unseen meanwhile.
 */
export async function forgottenAmong(q: Queryable, keys: readonly ForgottenKey[]): Promise<Set<string>> {
  const asked = keys.filter((k) => isUuid(k.tenantId));
  if (asked.length === 0) return new Set();
  const { rows } = await q.query<{ tenant_id: string; kind: string; external_id: string }>(
    `SELECT f.tenant_id, f.kind, f.external_id
       FROM unnest($1::uuid[], $2::text[], $3::text[]) AS k(tenant_id, kind, external_id)
       JOIN forgotten f ON f.tenant_id = k.tenant_id AND f.kind = k.kind AND f.external_id = k.external_id`,
    [asked.map((k) => k.tenantId), asked.map((k) => k.kind), asked.map((k) => k.externalId)],
  );
  return new Set(rows.map((r) => keyOf({ tenantId: r.tenant_id, kind: r.kind, externalId: r.external_id })));
}

export const forgottenKey = keyOf;

/** Writes the tombstones (a second one of a key changes nothing). */
export async function recordForgotten(q: Queryable, keys: readonly ForgottenKey[]): Promise<void> {
  if (keys.length === 0) return;
  await q.query(
    `INSERT INTO forgotten (tenant_id, kind, external_id)
     SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[])
     ON CONFLICT DO NOTHING`,
    [keys.map((k) => k.tenantId), keys.map((k) => k.kind), keys.map((k) => k.externalId)],
  );
}

/** A chat message of a workspace (`team` is the install's external id, INTERFACE §3). */
export interface ChatMessageRef {
  tenantId: string;
  team: string;
  channelId: string;
  ts: string;
}

/**
 * Removes the content of the messages' stored events (INTERFACE §4 ids: the original
 * `message:{channel}:{ts}` and every `message_changed:{channel}:{ts}:{event_ts}`), in every
 * chat install of the tenant bound to the workspace (a reinstall keeps the old install's
 * events). By primary key and by the edits' prefix index (migration 040): never a scan of
 * the install's events. Returns how many rows changed.
 */
export async function scrubChatMessageEvents(q: Queryable, msgs: readonly ChatMessageRef[]): Promise<number> {
  if (msgs.length === 0) return 0;
  const { rowCount } = await q.query(
    `WITH m AS (
       SELECT i.install_id, m.ch_ts
         FROM unnest($1::uuid[], $2::text[], $3::text[]) AS m(tenant_id, team, ch_ts)
         JOIN installs i ON i.tenant_id = m.tenant_id AND i.connector_id = 'chatapp' AND i.external_id = m.team
     ), hit AS (
       SELECT e.install_id, e.id FROM m JOIN events e ON e.install_id = m.install_id AND e.id = 'message:' || m.ch_ts
       UNION ALL
       -- Bytewise range over text_pattern_ops: exactly the ids that start with the prefix.
       SELECT e.install_id, e.id FROM m JOIN events e ON e.install_id = m.install_id
          AND e.kind = 'message_changed'
          AND e.id ~>=~ ('message_changed:' || m.ch_ts || ':')
          AND e.id ~<~ ('message_changed:' || m.ch_ts || ';')
     )
     UPDATE events e SET payload = e.payload - $4::text[]
       FROM hit
      WHERE e.install_id = hit.install_id AND e.id = hit.id AND e.payload ?| $4::text[]`,
    [msgs.map((m) => m.tenantId), msgs.map((m) => m.team), msgs.map((m) => `${m.channelId}:${m.ts}`), CONTENT_KEYS],
  );
  return rowCount ?? 0;
}

/**
 * The tenant's chat installs bound to the workspace `team`, whatever their status (a reinstall
 * keeps the old one's events).
 */
export async function chatInstallsOfWorkspace(q: Queryable, tenantId: string, team: string): Promise<string[]> {
  const { rows } = await q.query<{ install_id: string }>(
    `SELECT install_id FROM installs WHERE tenant_id = $1 AND connector_id = 'chatapp' AND external_id = $2`,
    [tenantId, team],
  );
  return rows.map((r) => r.install_id);
}

/** An event as an ingest envelope carries it (ingest/message.ts), the fields a scrub reads. */
export interface EnvelopedEvent {
  kind: string;
  payload: unknown;
}

/**
 * Rewrites the dead letters of `installIds` whose event `redact` changes (it returns the new
 * payload, or null to leave the event as it is), and the blob a dead letter points at. Only
 * dead letters whose bytes contain one of `needles` (or that point at a blob) are decoded.
 * Returns how many were rewritten.
 */
export async function scrubDeadLetters(
  q: Queryable,
  installIds: readonly string[],
  needles: readonly string[],
  redact: (event: EnvelopedEvent) => unknown,
): Promise<number> {
  const ids = [...new Set(installIds.filter((id) => isUuid(id)))];
  if (ids.length === 0 || needles.length === 0) return 0;
  const { rows } = await q.query<{ id: string; payload: Buffer }>(
    `SELECT d.id::text AS id, d.payload FROM dead_letters d
      WHERE d.install_id = ANY($1::uuid[])
        AND (position('"blob-ref"'::bytea IN d.payload) > 0
             OR EXISTS (SELECT 1 FROM unnest($2::text[]) n WHERE position(convert_to(n, 'UTF8') IN d.payload) > 0))`,
    [ids, needles],
  );
  let n = 0;
  for (const r of rows) {
    const env = parse(r.payload);
    if (env?.type === 'event') {
      const next = rewrite(env, redact);
      if (next === null) continue;
      await q.query('UPDATE dead_letters SET payload = $2 WHERE id = $1', [r.id, next]);
      n++;
    } else if (env?.type === 'blob-ref' && typeof env.ref === 'string') {
      const blob = await getBlob(q, env.ref);
      const inner = blob ? parse(blob) : null;
      const next = inner?.type === 'event' ? rewrite(inner, redact) : null;
      if (next === null) continue;
      await replaceBlob(q, env.ref, next);
      n++;
    }
  }
  return n;
}

type Envelope = { type?: unknown; ref?: unknown; event?: EnvelopedEvent };

function parse(bytes: Buffer): Envelope | null {
  try {
    const v = JSON.parse(bytes.toString('utf8')) as unknown;
    return typeof v === 'object' && v !== null ? (v as Envelope) : null;
  } catch {
    return null;
  }
}

function rewrite(env: Envelope, redact: (event: EnvelopedEvent) => unknown): Buffer | null {
  const ev = env.event;
  if (typeof ev !== 'object' || ev === null || typeof ev.kind !== 'string') return null;
  const payload = redact(ev);
  if (payload === null || payload === ev.payload) return null;
  return Buffer.from(jsonText({ ...env, event: { ...ev, payload } }), 'utf8');
}
