/**
 * Graph nodes deleted for good (INTERFACE §10.5: an install uninstalled past its retention,
 * a deleted tenant): every edge that touches them goes first (the foreign keys of 004, found
 * through migration 041's indexes by node), and each node's deletion is a change of the
 * feed (`op: deleted`, INTERFACE §10.1) written in the same transaction.
 */
import type pg from 'pg';
import { withTx } from '../store/db.js';
import { recordChanges } from './change-log.js';

export interface DeletedNodes {
  graph_nodes: number;
  graph_edges: number;
}

/**
 * One batch: up to `limit` nodes of the tenant that `installId` last wrote (all of the
 * tenant's with null), in one short transaction. Nodes another transaction holds are left
 * for the next batch. Returns what it deleted; zero nodes means none is left.
 */
export async function deleteNodesBatch(
  pool: pg.Pool,
  owner: { tenantId: string; installId: string | null },
  limit: number,
): Promise<DeletedNodes> {
  return withTx(pool, async (tx) => {
    const { rows } = await tx.query<{ node_id: string; kind: string; install_id: string; connector_id: string }>(
      `SELECT node_id, kind, install_id, connector_id FROM graph_nodes
        WHERE tenant_id = $1 AND ($2::uuid IS NULL OR install_id = $2)
        LIMIT $3 FOR UPDATE SKIP LOCKED`,
      [owner.tenantId, owner.installId, limit],
    );
    if (rows.length === 0) return { graph_nodes: 0, graph_edges: 0 };
    const nodes = rows.map((r) => r.node_id);
    const from = await tx.query('DELETE FROM graph_edges WHERE from_node = ANY($1::uuid[])', [nodes]);
    const to = await tx.query('DELETE FROM graph_edges WHERE to_node = ANY($1::uuid[])', [nodes]);
    const gone = await tx.query('DELETE FROM graph_nodes WHERE node_id = ANY($1::uuid[])', [nodes]);
    const byInstall = new Map<string, typeof rows>();
    for (const r of rows) byInstall.set(r.install_id, [...(byInstall.get(r.install_id) ?? []), r]);
    await recordChanges(
      tx,
      [...byInstall.values()].map((rs) => ({
        tenantId: owner.tenantId,
        installId: rs[0]!.install_id,
        connectorId: rs[0]!.connector_id,
        changes: rs.map((r) => ({ node_id: r.node_id, kind: r.kind, op: 'deleted' as const })),
      })),
    );
    return { graph_nodes: gone.rowCount ?? 0, graph_edges: (from.rowCount ?? 0) + (to.rowCount ?? 0) };
  });
}
