/**
 * What the graph routes (routes/graph.ts, INTERFACE §3) and the MCP tools (mcp/tools.ts,
 * §10.3) both call: one implementation of searching, reading and acting on the tenant's
 * nodes, so an agent and an HTTP client get the same answers and the same errors.
 */
import { z } from 'zod';
import { installWritesKey } from '../actors/install-protocol.js';
import { NotFound } from '../errors.js';
import { NODE_KINDS } from '../graph/kinds.js';
import { emitForAction, type NodeAction } from '../graph/node-actions.js';
import { getNode, listEdges, listNodes, MAX_NODES_LIMIT, type GraphNode, type NodePage } from '../graph/queries.js';
import type { AuditStamp } from '../store/audit-log.js';
import type { Queryable } from '../store/db.js';
import { findActiveInstalls, getInstall } from '../store/installs.js';
import type { EdgeContext } from './context.js';
import { UNOWNED_MS } from './emit-request.js';
import { idempotentCall } from './idempotency.js';
import { countEmit } from './metrics.js';
import { ownInstall } from './params.js';
import {
  type ActorAnswer,
  EmitReceipt,
  GraphNode as GraphNodeSchema,
  installIdFilter,
  limitParam,
  nextCursor,
} from './schemas.js';

export const NodesQuery = z
  .object({
    kind: z.enum(NODE_KINDS).optional(),
    install_id: installIdFilter('nodes'),
    q: z
      .string()
      .max(500)
      .regex(/\S/, { message: 'must not be blank' })
      .optional()
      .describe('Full-text match on the node\'s text (words, "phrases", or, -not)'),
    limit: limitParam(MAX_NODES_LIMIT, 50),
    cursor: z.string().min(1).max(100).optional().describe("A page's `next_cursor`"),
  })
  .strict();
export type NodesQuery = z.output<typeof NodesQuery>;

export const NodePageAnswer = z.object({ nodes: z.array(GraphNodeSchema), next_cursor: nextCursor });

export async function searchNodes(db: Queryable, tenantId: string, q: NodesQuery): Promise<NodePage> {
  // A foreign or unknown install id is the same 404 as on the install routes (INTERFACE §2).
  const install = q.install_id === undefined ? null : await ownInstall(db, tenantId, q.install_id);
  return listNodes(db, tenantId, {
    kind: q.kind,
    installId: install?.install_id,
    q: q.q,
    limit: q.limit,
    cursor: q.cursor,
  });
}

export async function ownNode(db: Queryable, tenantId: string, nodeId: string): Promise<GraphNode> {
  const node = await getNode(db, tenantId, nodeId);
  if (!node) throw new NotFound('node not found');
  return node;
}

export async function readNode(db: Queryable, tenantId: string, nodeId: string) {
  const node = await ownNode(db, tenantId, nodeId);
  const { edges, truncated } = await listEdges(db, tenantId, node.id);
  return { ...node, edges, edges_truncated: truncated };
}

/** Same budget as the emit route: an action is an emit. */
const ACTION_TIMEOUT_MS = 25_000;

/** An action's Idempotency-Key as the caller sent it (absent: none), and who hears of a replayed answer. */
export interface ActionKey {
  key: unknown;
  replayed?: () => void;
  /** INTERFACE §10.5: the caller's audit entry, written by the install actor with the receipt. */
  audit?: AuditStamp;
}

/**
 * Performs `action` on `node` as the matching emit (src/graph/node-actions.ts has the map),
 * through the install actor exactly as the emit route does: same validation, errors and
 * Idempotency-Key semantics (INTERFACE §9.3).
 */
export async function actOnNode(
  ctx: EdgeContext,
  tenantId: string,
  node: GraphNode,
  action: NodeAction,
  { key, replayed, audit }: ActionKey,
): Promise<ActorAnswer<typeof EmitReceipt>> {
  const emit = emitForAction(node, action);
  const claim = { tenantId, key, target: `action:${node.id}`, body: action };
  return idempotentCall(
    ctx,
    claim,
    async (idempotencyKey) =>
      countEmit(
        ctx.metrics,
        emit.kind,
        ctx.actors.ask(
          installWritesKey(await actingInstall(ctx.db, tenantId, node)),
          { type: 'emit', tenantId, kind: emit.kind, body: emit.body, idempotencyKey, audit },
          { timeoutMs: ACTION_TIMEOUT_MS, unownedMs: UNOWNED_MS },
        ),
      ) as Promise<ActorAnswer<typeof EmitReceipt>>,
    replayed,
  );
}

/**
 * The install an action goes through: the node's own (the install that last wrote it)
 * while it is active; after an uninstall and a reinstall of the same workspace or App
 * installation, the tenant's active install of it, so a node nobody rewrote yet still
 * acts. Otherwise the node's own, whose actor answers 409 `install_not_active`.
 */
async function actingInstall(db: Queryable, tenantId: string, node: GraphNode): Promise<string> {
  if (node.source_status === 'active') return node.install_id;
  const own = await getInstall(db, tenantId, node.install_id);
  if (!own) return node.install_id;
  const successor = (await findActiveInstalls(db, own.connector_id, own.external_id)).find(
    (i) => i.tenant_id === tenantId,
  );
  return successor?.install_id ?? node.install_id;
}
