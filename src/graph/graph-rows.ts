/**
 * The graph tables read and written a batch at a time (ARCHITECTURE "Inbound" 2, group
 * commit): one statement per table and direction, whatever the number of events and of
 * installs and tenants in the batch (every row names its own). The graph writer
 * (graph-writer.ts) decides what to write; this file only moves rows.
 *
 * Rows are locked (`FOR UPDATE`) in a stable order, so two transactions writing the same
 * nodes (installs of one tenant, in the same or in two concurrent transactions) queue
 * rather than deadlock; a deadlock that happens
 * anyway is retried whole by `withTx`. Both lookups use the unique keys' indexes once
 * Postgres has statistics for the tables (autovacuum, on by default, keeps them).
 */
import type { Queryable } from '../store/db.js';
import { queryJsonRows } from '../store/json-rows.js';
import { OWNERS, Owners } from './graph-owners.js';

export type { Owner } from './graph-owners.js';
import type { Props, PropVersions } from './merge-props.js';

export interface NodeKey {
  tenantId: string;
  kind: string;
  externalId: string;
}

export interface StoredNode extends NodeKey {
  nodeId: string;
  installId: string;
  props: Props;
  versions: PropVersions;
}

export interface NodeRowWrite extends NodeKey {
  nodeId: string;
  /** The install writing the row (INTERFACE §8.15: the node's last writer) and its connector. */
  installId: string;
  connectorId: string;
  props: Props;
  versions: PropVersions;
  searchText: string;
  /** Whether `updated_at` moves (props or owning install changed, not only versions). */
  touched: boolean;
}

export interface EdgeKey {
  tenantId: string;
  from: string;
  type: string;
  to: string;
  key: string;
}

export interface StoredEdge extends EdgeKey {
  props: Props;
  version: string;
  removed: boolean;
}

export async function lockNodes(tx: Queryable, keys: readonly NodeKey[]): Promise<StoredNode[]> {
  if (keys.length === 0) return [];
  // A join, not a probe per key (LATERAL): on a table Postgres has no statistics for yet
  // (autovacuum off, or before its first analyze) the planner may pick the listing index for
  // each probe, scanning the tenant's nodes once per key; a join scans them at most once,
  // and the tenants' list keeps that scan to the batch's tenants (without it, every node).
  const { rows } = await tx.query<{
    node_id: string;
    tenant_id: string;
    kind: string;
    external_id: string;
    install_id: string;
    props: Props;
    prop_versions: PropVersions;
  }>(
    `SELECT n.node_id, n.tenant_id, n.kind, n.external_id, n.install_id, n.props, n.prop_versions
     FROM graph_nodes n JOIN unnest($1::uuid[], $2::text[], $3::text[]) AS k(tenant_id, kind, external_id)
       ON n.tenant_id = k.tenant_id AND n.kind = k.kind AND n.external_id = k.external_id
     WHERE n.tenant_id = ANY($4::uuid[])
     ORDER BY n.tenant_id, n.kind, n.external_id FOR UPDATE OF n`,
    [
      keys.map((k) => k.tenantId),
      keys.map((k) => k.kind),
      keys.map((k) => k.externalId),
      [...new Set(keys.map((k) => k.tenantId))],
    ],
  );
  return rows.map((r) => ({
    nodeId: r.node_id,
    tenantId: r.tenant_id,
    kind: r.kind,
    externalId: r.external_id,
    installId: r.install_id,
    props: r.props,
    versions: r.prop_versions,
  }));
}

/**
 * Inserts new nodes in the order given (their listing `seq`). Returns how many were
 * inserted: fewer than asked means another transaction created one of them meanwhile.
 */
export async function insertNodes(tx: Queryable, rows: readonly NodeRowWrite[]): Promise<number> {
  if (rows.length === 0) return 0;
  const owners = new Owners();
  const docRows = rows.map((r) => nodeRow(r, owners));
  const { rowCount } = await queryJsonRows(
    tx,
    docRows,
    `INSERT INTO graph_nodes
       (node_id, tenant_id, kind, external_id, connector_id, install_id, props, prop_versions, search_text)
     SELECT v.node_id, o.tenant_id, v.kind, v.external_id, o.connector_id, o.install_id, v.props, v.prop_versions,
            v.search_text
     FROM ROWS FROM (jsonb_to_recordset($1::jsonb) AS (${NODE_ROW})) WITH ORDINALITY
          AS v(node_id, o, kind, external_id, props, prop_versions, search_text, touched, ord)
     JOIN ${OWNERS} ON o.i = v.o
     ORDER BY v.ord
     ON CONFLICT (tenant_id, kind, external_id) DO NOTHING`,
    (doc) => [doc, ...owners.columns()],
  );
  return rowCount;
}

export async function updateNodes(tx: Queryable, rows: readonly NodeRowWrite[]): Promise<void> {
  if (rows.length === 0) return;
  const owners = new Owners();
  const docRows = rows.map((r) => nodeRow(r, owners));
  await queryJsonRows(
    tx,
    docRows,
    `UPDATE graph_nodes g
     SET props = v.props, prop_versions = v.prop_versions, search_text = v.search_text,
         install_id = o.install_id, connector_id = o.connector_id,
         updated_at = CASE WHEN v.touched THEN now() ELSE g.updated_at END
     FROM jsonb_to_recordset($1::jsonb) AS v(${NODE_ROW}) JOIN ${OWNERS} ON o.i = v.o
     WHERE g.node_id = v.node_id`,
    (doc) => [doc, ...owners.columns()],
  );
}

/**
 * Rows whose props are unchanged and only a prop's version moved (a channel named by every
 * message, a repository by every issue event: issue 12). Setting `prop_versions` alone
 * leaves `props`, `search_text` and `install_id` as they are (equal to what `updateNodes`
 * would write) and, as no column they derive from is set, Postgres does not compute the
 * generated `search` tsvector and `search_cjk` again.
 */
export async function updateNodeVersions(tx: Queryable, rows: readonly NodeRowWrite[]): Promise<void> {
  if (rows.length === 0) return;
  await queryJsonRows(
    tx,
    rows.map((r) => ({ node_id: r.nodeId, prop_versions: r.versions })),
    `UPDATE graph_nodes g SET prop_versions = v.prop_versions
     FROM jsonb_to_recordset($1::jsonb) AS v(node_id uuid, prop_versions jsonb)
     WHERE g.node_id = v.node_id`,
    (doc) => [doc],
  );
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** A node row as the statements read it from JSON (store/json-rows.ts). */
const NODE_ROW =
  'node_id uuid, o int, kind text, external_id text, props jsonb, prop_versions jsonb, search_text text, ' +
  'touched boolean';

function nodeRow(r: NodeRowWrite, owners: Owners) {
  return {
    node_id: r.nodeId,
    o: owners.of(r.tenantId, r.installId, r.connectorId),
    kind: r.kind,
    external_id: r.externalId,
    props: r.props,
    prop_versions: r.versions,
    search_text: r.searchText,
    touched: r.touched,
  };
}

export async function lockEdges(tx: Queryable, keys: readonly EdgeKey[]): Promise<StoredEdge[]> {
  if (keys.length === 0) return [];
  const sorted = [...keys].sort(
    (a, b) =>
      cmp(a.tenantId, b.tenantId) || cmp(a.from, b.from) || cmp(a.type, b.type) || cmp(a.to, b.to) || cmp(a.key, b.key),
  );
  const { rows } = await tx.query<{
    tenant_id: string;
    from_node: string;
    type: string;
    to_node: string;
    key: string;
    props: Props;
    version: string;
    removed: boolean;
  }>(
    `SELECT e.tenant_id, e.from_node, e.type, e.to_node, e.key, e.props, e.version, e.removed
     FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::uuid[], $5::text[])
          WITH ORDINALITY AS k(tenant_id, from_node, type, to_node, key, ord)
     CROSS JOIN LATERAL (
       SELECT * FROM graph_edges g
       WHERE g.tenant_id = k.tenant_id AND g.from_node = k.from_node AND g.type = k.type
         AND g.to_node = k.to_node AND g.key = k.key
       FOR UPDATE
     ) e
     ORDER BY k.ord`,
    edgeKeyColumns(sorted),
  );
  return rows.map((r) => ({
    tenantId: r.tenant_id,
    from: r.from_node,
    type: r.type,
    to: r.to_node,
    key: r.key,
    props: r.props,
    version: r.version,
    removed: r.removed,
  }));
}

/** As `insertNodes`: fewer inserted than asked means a concurrent transaction won a row. */
export async function insertEdges(tx: Queryable, rows: readonly StoredEdge[]): Promise<number> {
  if (rows.length === 0) return 0;
  const owners = new Owners();
  const docRows = rows.map((r) => edgeRow(r, owners));
  const { rowCount } = await queryJsonRows(
    tx,
    docRows,
    `INSERT INTO graph_edges (tenant_id, from_node, type, to_node, key, props, version, removed)
     SELECT o.tenant_id, v.from_node, v.type, v.to_node, v.key, v.props, v.version, v.removed
     FROM ROWS FROM (jsonb_to_recordset($1::jsonb) AS (${EDGE_ROW})) WITH ORDINALITY
          AS v(o, from_node, type, to_node, key, props, version, removed, ord)
     JOIN ${OWNERS} ON o.i = v.o
     ORDER BY v.ord
     ON CONFLICT (tenant_id, from_node, type, to_node, key) DO NOTHING`,
    (doc) => [doc, ...owners.columns()],
  );
  return rowCount;
}

export async function updateEdges(tx: Queryable, rows: readonly StoredEdge[]): Promise<void> {
  if (rows.length === 0) return;
  const owners = new Owners();
  const docRows = rows.map((r) => edgeRow(r, owners));
  await queryJsonRows(
    tx,
    docRows,
    `UPDATE graph_edges e SET props = v.props, version = v.version, removed = v.removed, updated_at = now()
     FROM jsonb_to_recordset($1::jsonb) AS v(${EDGE_ROW}) JOIN ${OWNERS} ON o.i = v.o
     WHERE e.tenant_id = o.tenant_id AND e.from_node = v.from_node AND e.type = v.type AND e.to_node = v.to_node
       AND e.key = v.key`,
    (doc) => [doc, ...owners.columns()],
  );
}

function edgeKeyColumns(keys: readonly EdgeKey[]): unknown[] {
  return [
    keys.map((k) => k.tenantId),
    keys.map((k) => k.from),
    keys.map((k) => k.type),
    keys.map((k) => k.to),
    keys.map((k) => k.key),
  ];
}

/** An edge row as the statements read it from JSON, as node rows. */
const EDGE_ROW = 'o int, from_node uuid, type text, to_node uuid, key text, props jsonb, version text, removed boolean';

function edgeRow(r: StoredEdge, owners: Owners) {
  return {
    o: owners.of(r.tenantId),
    from_node: r.from,
    type: r.type,
    to_node: r.to,
    key: r.key,
    props: r.props,
    version: r.version,
    removed: r.removed,
  };
}
