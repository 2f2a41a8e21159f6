/**
 * The rare graph writes of a transferred issue (INTERFACE §9.5, `issues.transferred`):
 * a node takes another external id, keeping its id, props and edges, and loses its edge to
 * the old repository. They run at once inside the ingest transaction, after the batch's
 * pending writes are flushed (graph-writer.ts), so they see and leave the tables current.
 */
import type { Queryable } from '../store/db.js';
import type { Owner } from './graph-rows.js';
import type { EdgeType, NodeKind } from './kinds.js';

/** What a move did: the nodes whose change notices are due, and the node that went. */
export interface NodeMove {
  changed: string[];
  removed: string | null;
}

/**
 * The node `from` takes the external id `to`. When `to` already exists (its own events came
 * first), the old node's edges move onto it and the old node goes. No node at `from` (a
 * replay, or never seen): nothing to do.
 */
export async function moveNodeRows(
  tx: Queryable,
  owner: Owner,
  kind: NodeKind,
  from: string,
  to: string,
): Promise<NodeMove> {
  const none: NodeMove = { changed: [], removed: null };
  if (from === to) return none;
  const { rows } = await tx.query<{ node_id: string; external_id: string }>(
    `SELECT node_id, external_id FROM graph_nodes
     WHERE tenant_id = $1 AND kind = $2 AND external_id = ANY($3::text[]) ORDER BY external_id FOR UPDATE`,
    [owner.tenantId, kind, [from, to]],
  );
  const old = rows.find((r) => r.external_id === from);
  const target = rows.find((r) => r.external_id === to);
  if (!old) return none;
  if (!target) {
    await tx.query(
      `UPDATE graph_nodes SET external_id = $2, install_id = $3, connector_id = $4, updated_at = now()
       WHERE node_id = $1`,
      [old.node_id, to, owner.installId, owner.connectorId],
    );
    return { changed: [old.node_id], removed: null };
  }
  const args = [owner.tenantId, old.node_id, target.node_id];
  await tx.query(
    `INSERT INTO graph_edges (tenant_id, from_node, type, to_node, key, props, version, removed)
     SELECT tenant_id, CASE WHEN from_node = $2 THEN $3 ELSE from_node END, type,
            CASE WHEN to_node = $2 THEN $3 ELSE to_node END, key, props, version, removed
     FROM graph_edges WHERE tenant_id = $1 AND (from_node = $2 OR to_node = $2)
     ON CONFLICT (tenant_id, from_node, type, to_node, key) DO NOTHING`,
    args,
  );
  await tx.query(`DELETE FROM graph_edges WHERE tenant_id = $1 AND (from_node = $2 OR to_node = $2)`, args.slice(0, 2));
  await tx.query(`DELETE FROM graph_nodes WHERE node_id = $1`, [old.node_id]);
  return { changed: [old.node_id, target.node_id], removed: old.node_id };
}

/** Removes `fromId`'s edges of `type` to any node but `keepId`; true when one went. */
export async function dropEdgesExcept(
  tx: Queryable,
  tenantId: string,
  type: EdgeType,
  fromId: string,
  keepId: string,
): Promise<boolean> {
  const { rowCount } = await tx.query(
    `DELETE FROM graph_edges WHERE tenant_id = $1 AND from_node = $2 AND type = $3 AND to_node <> $4`,
    [tenantId, fromId, type, keepId],
  );
  return (rowCount ?? 0) > 0;
}
