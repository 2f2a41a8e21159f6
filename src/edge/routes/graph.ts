/**
 * Graph routes (INTERFACE §3): list and search nodes, one node with its edges, and act on
 * a node. Mounted in the tenant context (Bearer auth, 1 MiB bodies). The work is in
 * graph-calls.ts, shared with the MCP tools (INTERFACE §10.3): reads from Postgres, filtered
 * on the caller's tenant; an action becomes an emit sent to the node's install actor exactly
 * as the emit route sends it (src/graph/node-actions.ts has the map).
 */
import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { NodeAction } from '../../graph/node-actions.js';
import { AUDITED, auditStamp } from '../audit.js';
import type { EdgeContext } from '../context.js';
import { EMIT_ERRORS } from '../emit-request.js';
import { actOnNode, NodePageAnswer, NodesQuery, ownNode, readNode, searchNodes } from '../graph-calls.js';
import { operation } from '../operation.js';
import { validInput } from '../params.js';
import { EmitReceipt, IdempotencyHeaders, NodeIdParams, NodeWithEdges } from '../schemas.js';

const tag = 'graph';
const LIST = operation({
  operationId: 'listNodes',
  tag,
  summary: "List or search the tenant's graph nodes, newest first",
  description: "A listing leaves out `props.diff` (up to 1 MB per PR); the node's own route has it.",
  auth: 'bearer',
  scope: 'graph:read',
  querystring: NodesQuery,
  responses: {
    200: {
      description: 'A page of nodes',
      schema: NodePageAnswer,
    },
  },
  errors: ['bad_request', 'not_found'],
});
const GET = operation({
  operationId: 'getNode',
  tag,
  summary: 'One node with the edges touching it',
  auth: 'bearer',
  scope: 'graph:read',
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
  scope: 'graph:write',
  params: NodeIdParams,
  headers: IdempotencyHeaders,
  body: NodeAction,
  responses: { 200: { description: 'The emit was made upstream', schema: EmitReceipt } },
  errors: EMIT_ERRORS,
});

export const graphRoutes: FastifyPluginAsync<EdgeContext> = async (plugin, ctx) => {
  const app = plugin.withTypeProvider<ZodTypeProvider>();
  app.get('/graph/nodes', { schema: LIST, attachValidation: true }, async (req) =>
    searchNodes(ctx.db, req.tenantId, validInput<NodesQuery>(req, 'querystring')),
  );

  app.get('/graph/nodes/:nodeId', { schema: GET }, async (req) => readNode(ctx.db, req.tenantId, req.params.nodeId));

  app.post(
    '/graph/nodes/:nodeId/actions',
    { schema: ACT, attachValidation: true, config: { audit: AUDITED.nodeAction } },
    async (req, reply) => {
      const node = await ownNode(ctx.db, req.tenantId, req.params.nodeId);
      const action = validInput<NodeAction>(req, 'body');
      const key = req.headers['idempotency-key'];
      return actOnNode(ctx, req.tenantId, node, action, {
        key,
        replayed: () => reply.header('idempotent-replayed', 'true'),
        audit: auditStamp(req),
      });
    },
  );
};
