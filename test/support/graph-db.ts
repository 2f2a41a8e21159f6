/**
 * Projection tests against the real Postgres: fresh tenants and installs, events projected
 * in their own transactions as the install actor does, and the graph read back by natural
 * keys (node ids are random per tenant) so two tenants' graphs can be compared.
 */
import type { Pool } from 'pg';
import type { GraphChange } from '../../src/graph/change.js';
import { projectEvent } from '../../src/graph/project.js';
import { getNode, listEdges } from '../../src/graph/queries.js';
import type { IngestEvent } from '../../src/runtime/ports.js';
import { withTx } from '../../src/store/db.js';
import { createInstall, setBackfill, type ConnectorId, type Install } from '../../src/store/installs.js';
import { createTenant } from '../../src/store/tenants.js';
import { TEST_MASTER_KEY } from './env.js';

export type RawEvent = Pick<IngestEvent, 'id' | 'kind' | 'payload'>;

export function graphDb(pool: Pool) {
  const freshInstall = async (connectorId: ConnectorId, externalId: string): Promise<Install> => {
    const tid = (await createTenant(pool, TEST_MASTER_KEY, 'graph')).tenant_id;
    const inst = await createInstall(pool, { tenantId: tid, connectorId, externalId });
    // Nothing to backfill: keeps connector nodes of other test files from walking these installs.
    await setBackfill(pool, inst.install_id, 'complete');
    return inst;
  };

  const project = (inst: Install, e: RawEvent): Promise<GraphChange[]> =>
    withTx(pool, (tx) =>
      projectEvent(tx, inst, {
        ...e,
        installId: inst.install_id,
        tenantId: inst.tenant_id,
        connectorId: inst.connector_id,
        occurredAt: null,
      }),
    );

  const projectAll = async (inst: Install, events: RawEvent[]): Promise<void> => {
    for (const e of events) await project(inst, e);
  };

  /**
   * One chat `message` per text in channel C9 from U1, `ts` = `<tsPrefix><index>0.000100`
   * (a prefix per test keeps their messages apart).
   */
  const projectMessages = async (inst: Install, tsPrefix: string, texts: readonly string[]): Promise<void> => {
    for (const [i, text] of texts.entries()) {
      const ts = `${tsPrefix}${i}0.000100`;
      await project(inst, {
        id: `message:C9:${ts}`,
        kind: 'message',
        payload: { channel_id: 'C9', channel_type: 'channel', ts, user: 'U1', text },
      });
    }
  };

  /** The tenant's graph by natural keys, bookkeeping (versions) included. */
  const snapshot = async (tenantId: string) => {
    const nodes = await pool.query(
      `SELECT kind, external_id, props, prop_versions, search_text FROM graph_nodes
       WHERE tenant_id = $1 ORDER BY kind, external_id`,
      [tenantId],
    );
    const edges = await pool.query(
      `SELECT e.type, f.kind AS from_kind, f.external_id AS from_ext, t.kind AS to_kind, t.external_id AS to_ext,
              e.key, e.props, e.version, e.removed
       FROM graph_edges e JOIN graph_nodes f ON f.node_id = e.from_node JOIN graph_nodes t ON t.node_id = e.to_node
       WHERE e.tenant_id = $1 ORDER BY 1, 2, 3, 4, 5, 6`,
      [tenantId],
    );
    return { nodes: nodes.rows, edges: edges.rows };
  };

  /** Every column, ids and timestamps included: what a replay on top must leave untouched. */
  const rawTables = async (tenantId: string) => {
    const nodes = await pool.query('SELECT * FROM graph_nodes WHERE tenant_id = $1 ORDER BY node_id', [tenantId]);
    const edges = await pool.query('SELECT * FROM graph_edges WHERE tenant_id = $1 ORDER BY edge_id', [tenantId]);
    return { nodes: nodes.rows, edges: edges.rows };
  };

  /** One node with its live edges, each edge's other end named by kind and external id. */
  const nodeOf = async (tenantId: string, kind: string, externalId: string) => {
    const { rows } = await pool.query<{ node_id: string }>(
      'SELECT node_id FROM graph_nodes WHERE tenant_id = $1 AND kind = $2 AND external_id = $3',
      [tenantId, kind, externalId],
    );
    if (!rows[0]) return null;
    const node = (await getNode(pool, tenantId, rows[0].node_id))!;
    const { edges } = await listEdges(pool, tenantId, node.id);
    const names = await pool.query<{ node_id: string; kind: string; external_id: string }>(
      'SELECT node_id, kind, external_id FROM graph_nodes WHERE node_id = ANY($1::uuid[])',
      [edges.flatMap((e) => [e.from, e.to])],
    );
    const name = new Map(names.rows.map((r) => [r.node_id, `${r.kind} ${r.external_id}`]));
    return {
      ...node,
      edges: edges.map((e) => ({ ...e, fromName: name.get(e.from)!, toName: name.get(e.to)! })),
    };
  };

  return { freshInstall, project, projectAll, projectMessages, snapshot, rawTables, nodeOf };
}
