/**
 * The MCP server of one request (INTERFACE §10.3), on the official SDK's low-level
 * `Server`: it lists the tools of tools.ts with JSON Schemas made from their zod schemas
 * (draft-07, what the SDK's own clients validate with), and calls one with its input
 * parsed by that same schema, once the key is found to hold the tool's scope (INTERFACE
 * §10.4; the route itself takes any valid key, and every tool is listed). Every failure of
 * a call, a missing scope and bad input included, is a tool result with `isError: true`
 * whose text is the route's §2 error body, so an agent reads the same `code` an HTTP
 * client gets.
 *
 * The transport is stateless (no sessions): every POST builds a server for the caller's
 * tenant, answers it, and drops it, so any node answers any request and nothing of a
 * tenant outlives its request.
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema,
  type CallToolResult,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
  type Tool as ListedTool,
} from '@modelcontextprotocol/sdk/types.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import { z } from 'zod';
import { requireScope } from '../../api-scopes.js';
import type { AppError } from '../../errors.js';
import { toAppError } from '../../errors-wire.js';
import { errorBody, STATUS_OF } from '../error-map.js';
import { parseOrBadRequest } from '../params.js';
import { TOOLS, type Tool, type ToolCall } from './tools.js';

/**
 * MCP wants an object at the top: a schema registered under an id (`.meta({ id })`, for the
 * OpenAPI document) comes out as a `$ref` to its definition, which is put back on top (and
 * kept among the definitions, so a reference to it still resolves).
 */
function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): ListedTool['inputSchema'] {
  const out = z.toJSONSchema(schema, { target: 'draft-7', io }) as Record<string, unknown>;
  const { $ref: ref, ...rest } = out;
  const definitions = (out.definitions ?? {}) as Record<string, Record<string, unknown>>;
  const top = typeof ref === 'string' ? definitions[ref.replace('#/definitions/', '')] : undefined;
  return (top === undefined ? out : { ...rest, ...top }) as ListedTool['inputSchema'];
}

/** What `tools/list` answers: the same for every tenant and key (§10.3 lists every tool). */
const LISTED: ListedTool[] = TOOLS.map((t) => ({
  name: t.name,
  title: t.title,
  description: `${t.description} Needs the scope \`${t.scope}\`.`,
  inputSchema: jsonSchema(t.input, 'input'),
  outputSchema: jsonSchema(t.output, 'output'),
  annotations: { title: t.title, ...t.annotations },
}));

const BY_NAME = new Map<string, Tool>(TOOLS.map((t) => [t.name, t]));

/** Used only for elicitation, which this server never asks for; one for the process, not one per request. */
const VALIDATOR = new AjvJsonSchemaValidator();

export interface McpCall extends ToolCall {
  /** INTERFACE §9.3: error bodies carry the request's id. */
  requestId: string;
  /** Records an audited tool's failed call (INTERFACE §10.5); never fails the call. */
  audit(entry: { action: string; target: string | null; outcome: string }): Promise<void>;
}

export function mcpServer(call: McpCall, version: string): Server {
  const server = new Server(
    { name: 'connector-service', title: 'connector-service knowledge graph', version },
    {
      capabilities: { tools: {} },
      instructions:
        "Search and read this tenant's knowledge graph of chat workspaces and code hosts, and reply, react " +
        'or label through it. A failed call answers a JSON error body whose `error.code` says why.',
      jsonSchemaValidator: VALIDATOR,
    },
  );
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: LISTED }));
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const tool = BY_NAME.get(request.params.name);
    // MCP: an unknown tool is a protocol error, not a tool result.
    if (tool === undefined) throw new McpError(ErrorCode.InvalidParams, `no tool named ${request.params.name}`);
    return callTool(tool, call, request.params.arguments ?? {});
  });
  return server;
}

async function callTool(tool: Tool, call: McpCall, args: unknown): Promise<CallToolResult> {
  let result: CallToolResult;
  let outcome = 'ok';
  try {
    requireScope(call.scopes, tool.scope);
    const input = parseOrBadRequest(tool.input, args, 'arguments');
    // The answer leaves through the route's response schema, as the route's does (openapi.ts).
    const out = tool.output.parse(await tool.run(call, input)) as Record<string, unknown>;
    result = { structuredContent: out, content: [{ type: 'text', text: JSON.stringify(out) }] };
  } catch (thrown) {
    const err = toAppError(thrown);
    outcome = err.code;
    result = toolError(err, thrown, call, tool.name);
  }
  // A failure's entry is written before the answer leaves, as the routes' are (audit.ts); a
  // done action's was committed with it (ToolCall.stamp).
  if (tool.audit && outcome !== 'ok') {
    await call.audit({ action: tool.audit.action, target: tool.audit.target(args), outcome });
  }
  return result;
}

function toolError(err: AppError, thrown: unknown, call: McpCall, name: string): CallToolResult {
  if (STATUS_OF[err.kind] >= 500) {
    // As the edge's error handler: a 5xx's cause is logged (the line carries the request's id), never told.
    call.ctx.log.error({ err: thrown, tool: name }, 'MCP tool call failed');
  }
  const body = errorBody(err, call.requestId);
  // No Retry-After header reaches an agent: the wait rides in the body.
  if (err.retryAfterS !== undefined) body.error.retry_after_s = Math.max(1, Math.ceil(err.retryAfterS));
  return { isError: true, content: [{ type: 'text', text: JSON.stringify(body) }] };
}
