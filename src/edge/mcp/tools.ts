/**
 * The MCP tools (INTERFACE §10.3): each names the scope it needs (§10.4), its input and
 * output as the zod schemas the routes validate and answer with, and runs the code the
 * route runs (graph-calls.ts, the store's reads), never the HTTP route itself. A tool's
 * result is the route's JSON; its failures are the route's errors (server.ts turns them
 * into tool errors naming the §2 code).
 */
import { z } from 'zod';
import type { ApiScope } from '../../api-scopes.js';
import type { ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import { LabelAction, NodeAction, ReactAction, ReplyAction } from '../../graph/node-actions.js';
import { readChanges } from '../../graph/change-read.js';
import type { AuditStamp } from '../../store/audit-log.js';
import { listInstalls } from '../../store/installs.js';
import { AUDITED } from '../audit.js';
import type { EdgeContext } from '../context.js';
import { actOnNode, NodePageAnswer, NodesQuery, ownNode, readNode, searchNodes } from '../graph-calls.js';
import { parseOrBadRequest } from '../params.js';
import { ChangesPage } from '../feed-schemas.js';
import { answer as changesAnswer, ChangesQuery } from '../routes/changes.js';
import { EmitReceipt, IDEMPOTENCY_KEY, InstallList, NodeWithEdges } from '../schemas.js';

/**
 * One call of a tool: the tenant the key authenticated and that key's scopes, the edge it runs
 * on (its tenant pool).
 */
export interface ToolCall {
  ctx: EdgeContext;
  tenantId: string;
  scopes: readonly ApiScope[];
  /** INTERFACE §10.5: the `ok` entry of an audited tool's action, for the transaction that does it to write. */
  stamp(action: string, target: string | null): AuditStamp;
}

/** An audited tool (INTERFACE §10.5): the route's action, and what a call acts on from its arguments. */
interface ToolAudit {
  action: string;
  target(args: unknown): string | null;
}

export interface Tool<I extends z.ZodObject = z.ZodObject, O extends z.ZodObject = z.ZodObject> {
  name: string;
  title: string;
  description: string;
  /** INTERFACE §10.4: a key without it gets the call refused with `forbidden`. */
  scope: ApiScope;
  input: I;
  output: O;
  annotations: ToolAnnotations;
  /** Absent: a read, not audited (as its route). */
  audit?: ToolAudit;
  run(call: ToolCall, input: z.output<I>): Promise<z.input<O>>;
}

/** Keeps each tool's own types while the table holds them all. */
const tool = <I extends z.ZodObject, O extends z.ZodObject>(t: Tool<I, O>): Tool => t as unknown as Tool;

const READ: ToolAnnotations = { readOnlyHint: true, openWorldHint: false };

const NodeId = z.object({ id: z.string().min(1).max(100).describe('A graph node id (a uuid)') }).strict();

/** `act_on_node`'s input: the node, then the body of `POST /api/v1/graph/nodes/{id}/actions`, flat. */
const ActInput = NodeId.extend({
  action: z.enum(['reply', 'react', 'label']).describe('reply: `text`; react: `name`; label: `labels`'),
  text: ReplyAction.shape.text.optional().describe('reply: the text (in the thread of a chat message)'),
  name: ReactAction.shape.name.optional().describe('react: the emoji name, without colons'),
  labels: LabelAction.shape.labels.optional().describe('label: the labels to add to a pull request or issue'),
  idempotency_key: z
    .string()
    .regex(IDEMPOTENCY_KEY)
    .optional()
    .describe('As the Idempotency-Key header: the same key and input within 24 h answer the first receipt again'),
}).strict();

export const TOOLS: readonly Tool[] = [
  tool({
    name: 'search_nodes',
    title: 'Search the graph',
    description:
      "List or search the tenant's graph nodes, newest first (as GET /api/v1/graph/nodes): `q` is a full-text " +
      'match on the node\'s text (words, "phrases", or, -not); pass `next_cursor` as `cursor` for the next page.',
    scope: 'graph:read',
    input: NodesQuery,
    output: NodePageAnswer,
    annotations: READ,
    run: ({ ctx, tenantId }, input) => searchNodes(ctx.db, tenantId, input),
  }),
  tool({
    name: 'get_node',
    title: 'Read a node and its edges',
    description:
      'One node with its props and the edges touching it (as GET /api/v1/graph/nodes/{id}); the edges name ' +
      'the node ids at their other ends.',
    scope: 'graph:read',
    input: NodeId,
    output: NodeWithEdges,
    annotations: READ,
    run: ({ ctx, tenantId }, { id }) => readNode(ctx.db, tenantId, id),
  }),
  tool({
    name: 'list_changes',
    title: 'Read the graph changes',
    description:
      "The tenant's graph changes after a cursor, oldest first (as GET /api/v1/graph/changes): pass `next_cursor` " +
      'as `cursor` to read what committed after, with no gap; no cursor reads from the oldest kept change, ' +
      '`latest` answers none and the head as `next_cursor`. An expired cursor fails with `cursor_expired`.',
    scope: 'graph:read',
    input: ChangesQuery.pick({ cursor: true, limit: true }),
    output: ChangesPage,
    annotations: READ,
    run: async ({ ctx, tenantId }, { cursor, limit }) =>
      changesAnswer(
        await readChanges(ctx.db, tenantId, { cursor, limit, retentionDays: ctx.config.follow.changesRetentionDays }),
      ),
  }),
  tool({
    name: 'list_installs',
    title: 'List the installs',
    description: "The tenant's installs, newest first, with their status (as GET /api/v1/connectors/installs).",
    scope: 'installs:read',
    input: z.object({}).strict(),
    output: InstallList,
    annotations: READ,
    run: async ({ ctx, tenantId }) => ({ installs: await listInstalls(ctx.db, tenantId) }),
  }),
  tool({
    name: 'act_on_node',
    title: 'Reply, react or label',
    description:
      'Act on a node (as POST /api/v1/graph/nodes/{id}/actions): reply to a chat message (in its thread), a pull ' +
      'request or an issue; react to a chat message; label a pull request or issue. Answers the emit receipt.',
    scope: 'graph:write',
    input: ActInput,
    output: EmitReceipt,
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    // As POST /api/v1/graph/nodes/{id}/actions: a node action, whatever its outcome.
    audit: {
      action: AUDITED.nodeAction.action,
      target: (args) => {
        const id = (args as { id?: unknown } | null)?.id;
        return typeof id === 'string' ? `node/${id.toLowerCase()}` : null;
      },
    },
    run: async ({ ctx, tenantId, stamp }, { id, idempotency_key, ...body }) => {
      const node = await ownNode(ctx.db, tenantId, id);
      const given = Object.fromEntries(Object.entries(body).filter(([, v]) => v !== undefined));
      const action = parseOrBadRequest(NodeAction, given, 'arguments');
      const audit = stamp(AUDITED.nodeAction.action, `node/${node.id}`);
      return actOnNode(ctx, tenantId, node, action, { key: idempotency_key, audit });
    },
  }),
];
