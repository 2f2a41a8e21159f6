/**
 * `GET /api/v1/export` (INTERFACE §10.5): a tenant's graph as NDJSON, one line per node
 * `{"type": "node", "node": {...}}` then per edge `{"type": "edge", "edge": {...}}`, in the
 * shapes of `GET /api/v1/graph/nodes/{id}`. Read through server-side cursors in one
 * transaction (one consistent snapshot), `FETCH_ROWS` rows at a time, and yielded a batch of
 * lines at a time: the consumer pulls the next batch only once it has written the last, so a
 * node's memory holds a batch, whatever the graph's size.
 */
import type pg from 'pg';
import { toIso } from '../store/db.js';

export const FETCH_ROWS = 500;

interface Row {
  node_id: string;
  kind: string;
  external_id: string;
  connector_id: string;
  install_id: string;
  props: Record<string, unknown>;
  source_status: string;
  created_at: Date;
  updated_at: Date;
}

/**
 * The lines of the tenant's graph (of one install's nodes, and the edges from them, with
 * `installId`). `client` is a checked-out client of its own, in no transaction; it is left
 * in none. Every statement names the tenant.
 */
export async function* exportLines(
  client: pg.PoolClient,
  tenantId: string,
  installId: string | null,
): AsyncGenerator<string> {
  await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
  let ok = false;
  try {
    await client.query(
      `DECLARE export_nodes NO SCROLL CURSOR FOR
       SELECT n.node_id, n.kind, n.external_id, n.connector_id, n.install_id, n.props, i.status AS source_status,
              n.created_at, n.updated_at
         FROM graph_nodes n JOIN installs i ON i.install_id = n.install_id
        WHERE n.tenant_id = $1 AND ($2::uuid IS NULL OR n.install_id = $2)
        ORDER BY n.seq`,
      [tenantId, installId],
    );
    for (;;) {
      const { rows } = await client.query<Row>(`FETCH ${FETCH_ROWS} FROM export_nodes`);
      if (rows.length === 0) break;
      yield rows.map((r) => `${JSON.stringify({ type: 'node', node: nodeOf(r) })}\n`).join('');
    }
    await client.query('CLOSE export_nodes');
    await client.query(
      `DECLARE export_edges NO SCROLL CURSOR FOR
       SELECT e.type, e.from_node, e.to_node, e.props FROM graph_edges e
        WHERE e.tenant_id = $1 AND NOT e.removed
          AND ($2::uuid IS NULL OR EXISTS (
                SELECT 1 FROM graph_nodes f WHERE f.node_id = e.from_node AND f.install_id = $2))
        ORDER BY e.edge_id`,
      [tenantId, installId],
    );
    for (;;) {
      const { rows } = await client.query<{
        type: string;
        from_node: string;
        to_node: string;
        props: Record<string, unknown>;
      }>(`FETCH ${FETCH_ROWS} FROM export_edges`);
      if (rows.length === 0) break;
      yield rows
        .map(
          (r) =>
            `${JSON.stringify({ type: 'edge', edge: { type: r.type, from: r.from_node, to: r.to_node, props: r.props } })}\n`,
        )
        .join('');
    }
    ok = true;
  } finally {
    // A consumer that stopped early (the client went away) ends here too: the read is over.
    await client.query(ok ? 'COMMIT' : 'ROLLBACK').catch(() => undefined);
  }
}

function nodeOf(r: Row) {
  return {
    id: r.node_id,
    kind: r.kind,
    external_id: r.external_id,
    connector_id: r.connector_id,
    install_id: r.install_id,
    props: r.props,
    source_status: r.source_status,
    created_at: toIso(r.created_at),
    updated_at: toIso(r.updated_at),
  };
}
