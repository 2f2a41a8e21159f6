/**
 * Graph routes (INTERFACE §3): list and search nodes, one node with its edges, and act on
 * a node. Mounted in the tenant context (Bearer auth, 1 MiB bodies). Reads come from
 * Postgres, filtered on the caller's tenant; an action becomes an emit sent to the node's
 * install actor exactly as the emit route sends it (src/graph/node-actions.ts has the map).
 */
import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { NotFound } from '../../errors.js';
import { AUDITED } from '../audit.js';
import { NODE_KINDS } from '../../graph/kinds.js';
import { emitForAction, NodeAction } from '../../graph/node-actions.js';
import { getNode, listEdges, listNodes, MAX_NODES_LIMIT, type GraphNode } from '../../graph/queries.js';
import { installWritesKey } from '../../actors/install-protocol.js';
import type { Queryable } from '../../store/db.js';
import { findActiveInstalls, getInstall } from '../../store/installs.js';
import type { EdgeContext } from '../context.js';
import { EMIT_ERRORS } from '../emit-request.js';
import { idempotent } from '../idempotency.js';
import { countEmit } from '../metrics.js';
import { operation } from '../operation.js';
import { ownInstall, validInput } from '../params.js';
import {
  type ActorAnswer,
  EmitReceipt,
  GraphNode as GraphNodeSchema,
  IdempotencyHeaders,
  installIdFilter,
  limitParam,
  nextCursor,
  NodeIdParams,
  NodeWithEdges,
} from '../schemas.js';

const NodesQuery = z
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

const tag = 'graph';
const LIST = operation({
  operationId: 'listNodes',
  tag,
  summary: "List or search the tenant's graph nodes, newest first",
  description: "A listing leaves out `props.diff` (up to 1 MB per PR); the node's own route has it.",
  auth: 'bearer',
  querystring: NodesQuery,
  responses: {
    200: {
      description: 'A page of nodes',
      schema: z.object({ nodes: z.array(GraphNodeSchema), next_cursor: nextCursor }),
    },
  },
  errors: ['bad_request', 'not_found'],
});
const GET = operation({
  operationId: 'getNode',
  tag,
  summary: 'One node with the edges touching it',
  auth: 'bearer',
  params: NodeIdParams,
  responses: { 200: { description: 'The node and its edges', schema: NodeWithEdges } },
  errors: ['not_found'],
});
const ACT = operation({
  operationId: 'actOnNode',
  tag,
  summary: 'Act on a node: reply, react or label (performed as the matching emit)',
  description:
    'Reply to a chat message posts in its thread, react adds a reaction; reply to a pull request or issue ' +
    "comments, label labels it. An action that does not fit the node's kind is 400 `bad_request`; the emit's " +
    'own errors follow. Takes an `Idempotency-Key` header, as the emit route does.',
  auth: 'bearer',
  params: NodeIdParams,
  headers: IdempotencyHeaders,
  body: NodeAction,
  responses: { 200: { description: 'The emit was made upstream', schema: EmitReceipt } },
  errors: EMIT_ERRORS,
});

/** Same budget as the emit route: an action is an emit. */
const ACTION_TIMEOUT_MS = 25_000;

export const graphRoutes: FastifyPluginAsync<EdgeContext> = async (plugin, ctx) => {
  const app = plugin.withTypeProvider<ZodTypeProvider>();
  app.get('/graph/nodes', { schema: LIST, attachValidation: true }, async (req) => {
    const q = validInput<z.output<typeof NodesQuery>>(req, 'querystring');
    // A foreign or unknown install id is the same 404 as on the install routes (INTERFACE §2).
    const install = q.install_id === undefined ? null : await ownInstall(ctx.db, req.tenantId, q.install_id);
    return listNodes(ctx.db, req.tenantId, {
      kind: q.kind,
      installId: install?.install_id,
      q: q.q,
      limit: q.limit,
      cursor: q.cursor,
    });
  });

  app.get('/graph/nodes/:nodeId', { schema: GET }, async (req) => {
    const node = await ownNode(ctx.db, req.tenantId, req.params.nodeId);
    const { edges, truncated } = await listEdges(ctx.db, req.tenantId, node.id);
    return { ...node, edges, edges_truncated: truncated };
  });

  app.post(
    '/graph/nodes/:nodeId/actions',
    { schema: ACT, attachValidation: true, config: { audit: AUDITED.nodeAction } },
    async (req, reply) => {
      const node = await ownNode(ctx.db, req.tenantId, req.params.nodeId);
      const action = validInput<z.output<typeof NodeAction>>(req, 'body');
      const emit = emitForAction(node, action);
      return idempotent(ctx, req, reply, `action:${node.id}`, action, async (idempotencyKey) =>
        countEmit(
          ctx.metrics,
          emit.kind,
          ctx.actors.ask(
            installWritesKey(await actingInstall(ctx.db, req.tenantId, node)),
            { type: 'emit', tenantId: req.tenantId, kind: emit.kind, body: emit.body, idempotencyKey },
            { timeoutMs: ACTION_TIMEOUT_MS },
          ),
        ),
      ) as Promise<ActorAnswer<typeof EmitReceipt>>;
    },
  );
};

async function ownNode(db: Queryable, tenantId: string, nodeId: string): Promise<GraphNode> {
  const node = await getNode(db, tenantId, nodeId);
  if (!node) throw new NotFound('node not found');
  return node;
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
