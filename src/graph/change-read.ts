/**
 * Reading the change feed (INTERFACE §10.1), for the route, the SSE stream, MCP's
 * `list_changes` and the webhook actors alike: the tenant's changes after a cursor, oldest
 * first, and the cursor to pass next.
 *
 * A cursor is the seq of the last change seen (change-log.ts numbers them 1, 2, 3, ... per
 * tenant, each visible only after every smaller one), so `seq > cursor` never steps over a
 * change still to come. Head and rows are read by one statement, in one snapshot: a
 * `next_cursor` at the head never passes a row that the same read did not see.
 */
import { BadRequest, ErrorCodes, Gone } from '../errors.js';
import type { Queryable } from '../store/db.js';
import type { NodeKind } from './kinds.js';

export const MAX_CHANGES_LIMIT = 1000;
const DEFAULT_CHANGES_LIMIT = 100;
/** Rows a filtered read looks through at most; past them it answers the cursor it reached. */
const SCAN = 10_000;
const CURSOR = /^(0|[1-9][0-9]{0,17})$/;

export interface FeedChange {
  cursor: string;
  node_id: string;
  kind: NodeKind;
  op: 'upserted' | 'deleted';
  install_id: string;
  connector_id: string;
  changed_at: string;
}

export interface ChangesPage {
  changes: FeedChange[];
  next_cursor: string;
}

export interface ReadOptions {
  /** A `next_cursor` or change `cursor`; `latest` = the head; absent = the oldest retained change. */
  cursor?: string;
  limit?: number;
  kind?: string;
  /** Any of these kinds (a webhook's `kinds`); empty or absent: every kind. */
  kinds?: readonly string[];
  installId?: string;
  /** SERVICE_CHANGES_RETENTION_DAYS: a cursor before changes older than this is expired (410). */
  retentionDays: number;
}

/** Whether `s` is a cursor this feed could have given (or `latest`). */
export function isFeedCursor(s: string): boolean {
  return s === 'latest' || CURSOR.test(s);
}

interface Row {
  head: string;
  start: string;
  stale: boolean | null;
  seq: string | null;
  node_id: string;
  kind: NodeKind;
  op: FeedChange['op'];
  install_id: string;
  connector_id: string;
  changed_at: Date;
}

/** The tenant's changes after `opts.cursor`; 410 `cursor_expired` past the retention. */
export async function readChanges(
  db: Queryable,
  tenantId: string,
  opts: ReadOptions,
): Promise<ChangesPage & { head: number }> {
  const limit = opts.limit ?? DEFAULT_CHANGES_LIMIT;
  if (opts.cursor !== undefined && !isFeedCursor(opts.cursor)) throw new BadRequest('cursor is not a feed cursor');
  const latest = opts.cursor === 'latest';
  const from = opts.cursor === undefined || latest ? null : opts.cursor;
  const { rows } = await db.query<Row>(
    `WITH f AS (
       SELECT coalesce((SELECT last_seq FROM tenant_feed WHERE tenant_id = $1), 0) AS head
     ), cutoff AS (
       SELECT now() - make_interval(days => $3) AS at
     ), start AS (
       SELECT CASE
         WHEN $8 THEN f.head
         WHEN $2::bigint IS NOT NULL THEN $2::bigint
         ELSE coalesce((SELECT min(g.seq) FROM graph_changes g, cutoff
                         WHERE g.tenant_id = $1 AND g.changed_at >= cutoff.at), f.head + 1) - 1
       END AS c
       FROM f
     )
     SELECT f.head, start.c AS start,
            (SELECT g.changed_at < cutoff.at FROM graph_changes g, cutoff
              WHERE g.tenant_id = $1 AND g.seq = start.c + 1) AS stale,
            r.seq, r.node_id, r.kind, r.op, r.install_id, r.connector_id, r.changed_at
       FROM f CROSS JOIN start
       LEFT JOIN LATERAL (
         SELECT g.seq, g.node_id, g.kind, g.op, g.install_id, g.connector_id, g.changed_at
           FROM graph_changes g
          WHERE g.tenant_id = $1 AND g.seq > start.c AND g.seq <= start.c + $4
            AND ($5::text[] IS NULL OR g.kind = ANY($5)) AND ($6::uuid IS NULL OR g.install_id = $6)
          ORDER BY g.seq LIMIT $7
       ) r ON NOT $8
      ORDER BY r.seq`,
    [tenantId, from, opts.retentionDays, SCAN, kindsOf(opts), opts.installId ?? null, limit, latest],
  );
  const first = rows[0]!;
  const head = Number(first.head);
  const start = Number(first.start);
  if (start > head) throw new BadRequest('cursor is ahead of the feed');
  // Seqs have no holes: a missing or too old change right after the cursor was (or is due to be) deleted.
  if (start < head && first.stale !== false) {
    throw new Gone('cursor is older than the retention; start again without a cursor', {
      code: ErrorCodes.cursorExpired,
    });
  }
  const changes = rows.filter((r) => r.seq !== null).map(toChange);
  const next = changes.length === limit ? Number(changes.at(-1)!.cursor) : Math.min(head, start + SCAN);
  return { changes, next_cursor: String(next), head };
}

function kindsOf(opts: ReadOptions): string[] | null {
  const kinds = [...(opts.kinds ?? []), ...(opts.kind === undefined ? [] : [opts.kind])];
  return kinds.length === 0 ? null : kinds;
}

function toChange(r: Row): FeedChange {
  return {
    cursor: r.seq!,
    node_id: r.node_id,
    kind: r.kind,
    op: r.op,
    install_id: r.install_id,
    connector_id: r.connector_id,
    changed_at: r.changed_at.toISOString(),
  };
}
