/**
 * Dead letters as an operator and a tenant see them (INTERFACE §9.1, §9.3): newest first,
 * with the event's id and kind read from the stored message (its blob when the payload was
 * too big for one message), and the tenant of the install it was for. An event that
 * cannot be read still lists, with null id and kind, so nothing hides from the operator.
 */
import { getBlob } from './blobs.js';
import { isUuid, toIso, type Queryable } from './db.js';

export interface DeadLetterView {
  id: string;
  tenant_id: string | null;
  install_id: string | null;
  event_id: string | null;
  kind: string | null;
  error: string;
  dead_lettered_at: string;
}

/** What a replay needs: where the message went, its stored bytes, and whose it is (for its audit entry). */
export interface DeadLetterMessage {
  id: string;
  stream: string;
  subject: string;
  payload: Buffer;
  /** Null when the dead letter names no install of this database. */
  tenant_id: string | null;
}

export interface DeadLetterFilter {
  tenantId?: string;
  installId?: string;
  /** Default 50, at most 500. */
  limit?: number;
  /** A dead letter id: list those older than it. */
  cursor?: string | null;
}

interface Row {
  id: string;
  tenant_id: string | null;
  install_id: string | null;
  error: string;
  failed_at: Date;
  payload: Buffer;
}

export async function listDeadLetters(
  q: Queryable,
  f: DeadLetterFilter = {},
): Promise<{ dead_letters: DeadLetterView[]; next_cursor: string | null }> {
  const limit = Math.min(500, Math.max(1, f.limit ?? 50));
  const { rows } = await q.query<Row>(
    `SELECT d.id::text AS id, i.tenant_id, d.install_id, d.error, d.failed_at, d.payload
       FROM dead_letters d LEFT JOIN installs i ON i.install_id = d.install_id
      WHERE ($1::uuid IS NULL OR i.tenant_id = $1)
        AND ($2::uuid IS NULL OR d.install_id = $2)
        AND ($3::bigint IS NULL OR d.id < $3)
      ORDER BY d.id DESC
      LIMIT $4`,
    [f.tenantId ?? null, f.installId ?? null, cursorOf(f.cursor), limit + 1],
  );
  const page = rows.slice(0, limit);
  const out: DeadLetterView[] = [];
  for (const r of page) {
    const ev = await eventOf(q, r.payload);
    out.push({
      id: r.id,
      tenant_id: r.tenant_id,
      install_id: r.install_id,
      event_id: ev?.id ?? null,
      kind: ev?.kind ?? null,
      error: r.error,
      dead_lettered_at: toIso(r.failed_at),
    });
  }
  return { dead_letters: out, next_cursor: rows.length > limit ? page[page.length - 1]!.id : null };
}

/** Dead letters to replay: one by id, an install's, or all; `tenantId` scopes to a tenant's installs. */
export async function selectDeadLetters(
  q: Queryable,
  sel: { id?: string; installId?: string; tenantId?: string },
): Promise<DeadLetterMessage[]> {
  if (sel.id !== undefined && !/^\d{1,18}$/.test(sel.id)) return [];
  if (sel.installId !== undefined && !isUuid(sel.installId)) return [];
  const { rows } = await q.query<DeadLetterMessage>(
    `SELECT d.id::text AS id, d.stream, d.subject, d.payload, i.tenant_id
       FROM dead_letters d LEFT JOIN installs i ON i.install_id = d.install_id
      WHERE ($1::bigint IS NULL OR d.id = $1)
        AND ($2::uuid IS NULL OR d.install_id = $2)
        AND ($3::uuid IS NULL OR i.tenant_id = $3)
      ORDER BY d.id`,
    [sel.id ?? null, sel.installId ?? null, sel.tenantId ?? null],
  );
  return rows;
}

/** Returns whether it was still there (a concurrent replay may have taken it). */
export async function deleteDeadLetter(q: Queryable, id: string): Promise<boolean> {
  const { rowCount } = await q.query('DELETE FROM dead_letters WHERE id = $1', [id]);
  return (rowCount ?? 0) > 0;
}

function cursorOf(c: string | null | undefined): string | null {
  return c != null && /^\d{1,18}$/.test(c) ? c : null;
}

/** The event's id and kind from an ingest envelope (ingest/message.ts), or null. */
async function eventOf(q: Queryable, payload: Buffer, depth = 0): Promise<{ id: string; kind: string } | null> {
  let v: { type?: unknown; ref?: unknown; event?: { id?: unknown; kind?: unknown } };
  try {
    v = JSON.parse(payload.toString('utf8'));
  } catch {
    return null;
  }
  if (v?.type === 'event' && typeof v.event?.id === 'string' && typeof v.event.kind === 'string') {
    return { id: v.event.id, kind: v.event.kind };
  }
  if (v?.type === 'blob-ref' && typeof v.ref === 'string' && depth === 0) {
    const blob = await getBlob(q, v.ref);
    return blob ? eventOf(q, blob, 1) : null;
  }
  return null;
}
