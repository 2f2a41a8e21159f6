/**
 * Reads of the knowledge graph for the graph routes (INTERFACE §3). Every query filters
 * on the caller's tenant, so a node id of another tenant reads exactly like one that does
 * not exist (INTERFACE §2: 404 for both).
 *
 * `source_status` is the status of the install that last wrote the node: `uninstalled`
 * marks a node whose source was uninstalled (kept, no longer in sync).
 */
import { BadRequest } from '../errors.js';
import { isUuid, toIso, type Queryable } from '../store/db.js';
import { sanitizeText } from '../store/sanitize.js';
import { splitCjk } from './cjk-query.js';
import type { ConnectorId, InstallStatus } from '../store/installs.js';
import type { EdgeType, NodeKind } from './kinds.js';

export interface GraphNode {
  id: string;
  kind: NodeKind;
  external_id: string;
  connector_id: ConnectorId;
  install_id: string;
  props: Record<string, unknown>;
  source_status: InstallStatus;
  created_at: string;
  updated_at: string;
}

export interface GraphEdge {
  type: EdgeType;
  from: string;
  to: string;
  props: Record<string, unknown>;
}

export interface NodePage {
  nodes: GraphNode[];
  next_cursor: string | null;
}

export interface ListNodesOptions {
  kind?: NodeKind;
  installId?: string;
  /** Full-text query (websearch syntax: words, "phrases", or, -not); never a LIKE pattern. */
  q?: string;
  limit?: number;
  cursor?: string | null;
}

const DEFAULT_NODES_LIMIT = 50;
export const MAX_NODES_LIMIT = 500;
/** A channel can have millions of messages; one node's answer names at most this many edges. */
const MAX_EDGES = 1000;

export interface NodeRow {
  node_id: string;
  kind: NodeKind;
  external_id: string;
  connector_id: ConnectorId;
  install_id: string;
  props: Record<string, unknown>;
  source_status: InstallStatus;
  created_at: Date;
  updated_at: Date;
  seq: string;
}

const NODE_COLUMNS = `n.node_id, n.kind, n.external_id, n.connector_id, n.install_id, n.created_at, n.updated_at, n.seq,
  i.status AS source_status`;

/**
 * The tenant's nodes, newest first (by creation, so the cursor stays valid while nodes
 * change and new ones arrive). A listing leaves out `props.diff` (up to 1 MB per PR; the
 * node's own route has it, and `props.diff_bytes` tells its size).
 */
export async function listNodes(q: Queryable, tenantId: string, opts: ListNodesOptions = {}): Promise<NodePage> {
  const limit = opts.limit ?? DEFAULT_NODES_LIMIT;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_NODES_LIMIT)
    throw new BadRequest(`limit must be 1-${MAX_NODES_LIMIT}`);
  const after = opts.cursor == null ? null : decodeNodeCursor(opts.cursor);
  if (!isUuid(tenantId)) return { nodes: [], next_cursor: null };

  const params: unknown[] = [tenantId];
  const where = ['n.tenant_id = $1'];
  const add = (sql: (p: string) => string, value: unknown) => {
    params.push(value);
    where.push(sql(`$${params.length}`));
  };
  if (opts.kind !== undefined) add((p) => `n.kind = ${p}`, opts.kind);
  if (opts.installId !== undefined) {
    if (!isUuid(opts.installId)) return { nodes: [], next_cursor: null };
    add((p) => `n.install_id = ${p}`, opts.installId);
  }
  if (after !== null) add((p) => `n.seq < ${p}::bigint`, after);
  const { rows } =
    opts.q === undefined
      ? await q.query<NodeRow>(
          `SELECT ${NODE_COLUMNS}, n.props - 'diff' AS props
           FROM graph_nodes n JOIN installs i ON i.install_id = n.install_id
           WHERE ${where.join(' AND ')}
           ORDER BY n.seq DESC
           LIMIT $${params.push(limit + 1)}`,
          params,
        )
      : await searchPage(q, tenantId, opts.q, { ...opts, after, pageSize: limit + 1 });
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return { nodes: page.map(toNode), next_cursor: rows.length > limit && last ? encodeNodeCursor(last.seq) : null };
}

/**
 * A page of nodes matching `q`: their ids come from graph_search_page (migration 017), which
 * can use the search indexes on the tenant routes, where row-level security kept Postgres
 * from using them; the rows are then read through the fence as every other read.
 * INTERFACE §3: full-text match of the node's vector (stems, stop words kept), `q` read with and without
 * stop words (migration 018);
 * websearch_to_tsquery never fails on odd input, and text without words ("%", "_") makes an
 * empty query matching nothing. INTERFACE §9.5: CJK runs match as substrings (016).
 */
async function searchPage(
  db: Queryable,
  tenantId: string,
  text: string,
  o: { kind?: string; installId?: string; after: string | null; pageSize: number },
): Promise<{ rows: NodeRow[] }> {
  const q = sanitizeText(text);
  const { cjk, rest } = splitCjk(q);
  return db.query<NodeRow>(
    `SELECT ${NODE_COLUMNS}, n.props - 'diff' AS props
     FROM graph_search_page($1, $2, $3::text[], $4, $5, $6::uuid, $7::bigint, $8) AS s
     JOIN graph_nodes n ON n.node_id = s.node_id JOIN installs i ON i.install_id = n.install_id
     WHERE n.tenant_id = $1
     ORDER BY n.seq DESC`,
    [tenantId, q, cjk, rest, o.kind ?? null, o.installId ?? null, o.after, o.pageSize],
  );
}

export async function getNode(q: Queryable, tenantId: string, nodeId: string): Promise<GraphNode | null> {
  if (!isUuid(tenantId) || !isUuid(nodeId)) return null;
  const { rows } = await q.query<NodeRow>(
    `SELECT ${NODE_COLUMNS}, n.props
     FROM graph_nodes n JOIN installs i ON i.install_id = n.install_id
     WHERE n.tenant_id = $1 AND n.node_id = $2`,
    [tenantId, nodeId.toLowerCase()],
  );
  return rows[0] ? toNode(rows[0]) : null;
}

/** Edges touching a node, newest first, removed reactions left out. */
export async function listEdges(
  q: Queryable,
  tenantId: string,
  nodeId: string,
  max = MAX_EDGES,
): Promise<{ edges: GraphEdge[]; truncated: boolean }> {
  if (!isUuid(tenantId) || !isUuid(nodeId)) return { edges: [], truncated: false };
  // Two index scans that each stop after max+1 rows (migration 041's indexes by node),
  // rather than an OR that would gather every edge of a busy channel before sorting.
  const { rows } = await q.query<{
    type: EdgeType;
    from_node: string;
    to_node: string;
    props: Record<string, unknown>;
  }>(
    `SELECT type, from_node, to_node, props FROM (
       (SELECT edge_id, type, from_node, to_node, props FROM graph_edges
        WHERE tenant_id = $1 AND from_node = $2 AND NOT removed ORDER BY edge_id DESC LIMIT $3)
       UNION ALL
       (SELECT edge_id, type, from_node, to_node, props FROM graph_edges
        WHERE tenant_id = $1 AND to_node = $2 AND from_node <> $2 AND NOT removed ORDER BY edge_id DESC LIMIT $3)
     ) e
     ORDER BY edge_id DESC
     LIMIT $3`,
    [tenantId, nodeId.toLowerCase(), max + 1],
  );
  return {
    edges: rows.slice(0, max).map((r) => ({ type: r.type, from: r.from_node, to: r.to_node, props: r.props })),
    truncated: rows.length > max,
  };
}

/** A node row as the API shows it (the node route, the listing, the export). */
export function toNode(r: Omit<NodeRow, 'seq'>): GraphNode {
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

const SEQ = /^[1-9]\d{0,18}$/;

/** Opaque to clients: base64url of `["n", seq]` of the page's last node. */
export function encodeNodeCursor(seq: string): string {
  return Buffer.from(JSON.stringify(['n', seq]), 'utf8').toString('base64url');
}

/** A cursor this module did not make is a BadRequest, never a database error. */
export function decodeNodeCursor(cursor: string): string {
  const bad = () => new BadRequest('cursor is not one this service issued');
  if (typeof cursor !== 'string' || cursor.length === 0 || cursor.length > 100 || !/^[A-Za-z0-9_-]+$/.test(cursor))
    throw bad();
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw bad();
  }
  if (!Array.isArray(parsed) || parsed.length !== 2 || parsed[0] !== 'n') throw bad();
  const seq: unknown = parsed[1];
  if (typeof seq !== 'string' || !SEQ.test(seq) || BigInt(seq) > 9223372036854775807n) throw bad();
  return seq;
}
