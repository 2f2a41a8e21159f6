/**
 * The change log behind the feed (INTERFACE §10.1; migration 031; docs/architecture.md "The
 * change feed"): written in the transaction that changes the graph, one row per changed node,
 * numbered per tenant without holes.
 *
 * Why a counter row and not a sequence: a sequence value taken by one transaction can commit
 * after a larger value taken by another, so a reader at `seq > cursor` would step over the
 * smaller one for good. Here each transaction advances its tenants' `tenant_feed.last_seq`
 * with an upsert that holds the row's lock until COMMIT: the next transaction of that tenant
 * waits for it, takes the following range, and so a seq is visible only once every smaller
 * seq of its tenant is. The lock is taken last in the transaction (writeIngest), so it is
 * held for the commit only, and tenants are locked in id order (no deadlock between two
 * group-commit transactions of several tenants).
 */
import type { Queryable } from '../store/db.js';
import type { GraphChange } from './change.js';

/** One install's changes of a transaction, in the order they were made. */
export interface ChangesOf {
  tenantId: string;
  installId: string;
  connectorId: string;
  changes: readonly GraphChange[];
}

interface Row {
  t: string;
  i: number;
  n: string;
  k: string;
  o: GraphChange['op'];
  s: string;
  c: string;
}

/**
 * Coalesced per tenant (INTERFACE §10.1 allows it): a node changed several times in the
 * transaction gets one row, at the place of its last change and with its last op, so the
 * rows of a tenant never show an older change of a node after a newer one.
 */
function rowsOf(batches: readonly ChangesOf[]): Row[] {
  const byTenant = new Map<string, Map<string, Omit<Row, 'i'>>>();
  for (const b of batches) {
    let nodes = byTenant.get(b.tenantId);
    if (!nodes) byTenant.set(b.tenantId, (nodes = new Map()));
    for (const ch of b.changes) {
      nodes.delete(ch.node_id);
      nodes.set(ch.node_id, { t: b.tenantId, n: ch.node_id, k: ch.kind, o: ch.op, s: b.installId, c: b.connectorId });
    }
  }
  const rows: Row[] = [];
  for (const nodes of byTenant.values()) {
    let i = 0;
    for (const r of nodes.values()) rows.push({ ...r, i: ++i });
  }
  return rows;
}

/**
 * Inside the transaction `tx`: numbers and stores the changes; answers each tenant's new
 * head (its last seq once this commits). One statement: the rows as one JSON document, the
 * counters advanced in tenant order, the rows inserted at `head - count + i`.
 */
export async function recordChanges(tx: Queryable, batches: readonly ChangesOf[]): Promise<Map<string, number>> {
  const rows = rowsOf(batches);
  const heads = new Map<string, number>();
  if (rows.length === 0) return heads;
  const { rows: got } = await tx.query<{ tenant_id: string; last_seq: string }>(
    `WITH r AS (
       SELECT * FROM jsonb_to_recordset($1::jsonb)
         AS x(t uuid, i bigint, n uuid, k text, o text, s uuid, c text)
     ), counts AS (
       SELECT t, count(*) AS n FROM r GROUP BY t
     ), heads AS (
       INSERT INTO tenant_feed AS f (tenant_id, last_seq)
       SELECT t, n FROM counts ORDER BY t
       ON CONFLICT (tenant_id) DO UPDATE SET last_seq = f.last_seq + excluded.last_seq
       RETURNING f.tenant_id, f.last_seq
     ), written AS (
       INSERT INTO graph_changes (tenant_id, seq, node_id, kind, op, install_id, connector_id)
       SELECT r.t, h.last_seq - counts.n + r.i, r.n, r.k, r.o, r.s, r.c
         FROM r JOIN counts ON counts.t = r.t JOIN heads h ON h.tenant_id = r.t
     )
     SELECT tenant_id, last_seq FROM heads`,
    [JSON.stringify(rows)],
  );
  for (const h of got) heads.set(h.tenant_id, Number(h.last_seq));
  return heads;
}

/**
 * Deletes up to `limit` changes recorded before `olderThan` (the retention,
 * SERVICE_CHANGES_RETENTION_DAYS); answers how many. `changed_at` grows with seq per tenant,
 * so what goes is the oldest part of each tenant's feed; a cursor into it then answers 410
 * (change-read.ts). Bounded, so it never holds locks ingest waits on for long.
 */
export async function pruneChanges(db: Queryable, olderThan: Date, limit: number): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM graph_changes g
      USING (SELECT tenant_id, seq FROM graph_changes WHERE changed_at < $1 LIMIT $2) old
      WHERE g.tenant_id = old.tenant_id AND g.seq = old.seq`,
    [olderThan, limit],
  );
  return rowCount ?? 0;
}
