/**
 * A tenant's graph as NDJSON (INTERFACE §10.5 `GET /api/v1/export`): one line per node
 * `{"type": "node", "node": {...}}`, then one per edge `{"type": "edge", "edge": {...}}`, in
 * the shapes of `GET /api/v1/graph/nodes/{id}` (queries.ts), read through two server-side
 * cursors in one read-only, repeatable-read transaction (one snapshot for nodes and edges).
 *
 * Memory stays flat whatever the tenant's size: the lines are an async generator that the
 * stream pulls one batch at a time only when its reader has taken the previous ones
 * (`Readable.from` backpressure), and each batch is fetched by row count sized from the
 * previous batch's largest line (a PR node carries its diff, up to 1 MB). Ending the stream
 * early (a reader gone) rolls the transaction back, which closes the cursors.
 */
import { Readable } from 'node:stream';
import { toNode, type NodeRow as QueriedNodeRow } from './queries.js';
import { outsideWaitBudget } from '../wait-budget.js';

/** What the export needs of a connection: one the caller holds for the whole export (a fenced client). */
export interface ExportClient {
  query<R extends object>(text: string, values?: unknown[]): Promise<{ rows: R[] }>;
}

export interface ExportScope {
  tenantId: string;
  /** Only this install's nodes, and the edges touching them. */
  installId?: string;
  /**
   * Postgres ends the session when the transaction sits idle this long (a backstop: the edge
   * closes a stalled reader's export before, src/edge/routes/export.ts).
   */
  idleInTransactionMs: number;
}

/** A batch aims at this many bytes of lines; its row count follows the previous batch's largest line. */
const BATCH_BYTES = 256 * 1024;
const FIRST_BATCH_ROWS = 16;
const MAX_BATCH_ROWS = 500;

const NODES_SQL = (byInstall: boolean) => `
  DECLARE export_nodes NO SCROLL CURSOR FOR
  SELECT n.node_id, n.kind, n.external_id, n.connector_id, n.install_id, n.props, i.status AS source_status,
         n.created_at, n.updated_at
  FROM graph_nodes n JOIN installs i ON i.install_id = n.install_id
  WHERE n.tenant_id = $1${byInstall ? ' AND n.install_id = $2' : ''}
  ORDER BY n.seq`;

// Removed edges (a reaction taken back) are left out, as the node route leaves them out.
const EDGES_SQL = (byInstall: boolean) => `
  DECLARE export_edges NO SCROLL CURSOR FOR
  SELECT e.type, e.from_node, e.to_node, e.props
  FROM graph_edges e
  WHERE e.tenant_id = $1 AND NOT e.removed${
    byInstall
      ? ` AND EXISTS (SELECT 1 FROM graph_nodes n
           WHERE n.tenant_id = $1 AND n.node_id IN (e.from_node, e.to_node) AND n.install_id = $2)`
      : ''
  }
  ORDER BY e.edge_id`;

type NodeRow = Omit<QueriedNodeRow, 'seq'>;
interface EdgeRow {
  type: string;
  from_node: string;
  to_node: string;
  props: Record<string, unknown>;
}

const nodeLine = (r: NodeRow): string => JSON.stringify({ type: 'node', node: toNode(r) });

const edgeLine = (r: EdgeRow): string =>
  JSON.stringify({ type: 'edge', edge: { type: r.type, from: r.from_node, to: r.to_node, props: r.props } });

/**
 * Opens the export's transaction and cursors on `client`; the caller has checked the install
 * belongs to the tenant. Throws (rolled back, `done` called) when Postgres refuses, so the
 * route can still answer an error. From then on the stream owns the transaction: once it
 * closes, however it ended (read to the end, failed, or destroyed because its reader went
 * away), the transaction is over (committed, or rolled back, which closes the cursors) and
 * `done` runs once, with an error when the connection should not be reused.
 */
export async function openExport(
  client: ExportClient,
  scope: ExportScope,
  done: (broken?: Error) => void,
): Promise<Readable> {
  const params = scope.installId === undefined ? [scope.tenantId] : [scope.tenantId, scope.installId];
  try {
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    await client.query(`SET LOCAL idle_in_transaction_session_timeout = ${Math.ceil(scope.idleInTransactionMs)}`);
    await client.query(NODES_SQL(scope.installId !== undefined), params);
    await client.query(EDGES_SQL(scope.installId !== undefined), params);
  } catch (err) {
    done(await rollback(client));
    throw err;
  }
  let committed = false;
  async function* lines(): AsyncGenerator<string> {
    yield* batches<NodeRow>(client, 'export_nodes', nodeLine);
    yield* batches<EdgeRow>(client, 'export_edges', edgeLine);
    await outsideWaitBudget(() => client.query('COMMIT'));
    committed = true;
  }
  const stream = Readable.from(lines(), { objectMode: false, highWaterMark: 64 * 1024 });
  // A FETCH still running when the stream closes finishes first: the client queues the ROLLBACK after it.
  stream.once(
    'close',
    () => void (committed ? Promise.resolve(undefined) : outsideWaitBudget(() => rollback(client))).then(done),
  );
  return stream;
}

async function* batches<R>(client: ExportClient, cursor: string, line: (r: R) => string): AsyncGenerator<string> {
  let rows = FIRST_BATCH_ROWS;
  for (;;) {
    // An export is many statements by design: its FETCHes run on the export's own bounds (the
    // route's stall timeouts), not on the 2 s its request may wait in all (src/wait-budget.ts).
    const { rows: got } = await outsideWaitBudget(() => client.query<R & object>(`FETCH ${rows} FROM ${cursor}`));
    if (got.length === 0) return;
    const out = got.map(line);
    const largest = out.reduce((m, l) => Math.max(m, Buffer.byteLength(l)), 1);
    rows = Math.max(1, Math.min(MAX_BATCH_ROWS, Math.floor(BATCH_BYTES / largest)));
    yield `${out.join('\n')}\n`;
  }
}

/** Rolls back; the error when the connection could not (it is then dropped, not reused). */
async function rollback(client: ExportClient): Promise<Error | undefined> {
  try {
    await client.query('ROLLBACK');
    return undefined;
  } catch (err) {
    return err instanceof Error ? err : new Error('rollback failed');
  }
}
