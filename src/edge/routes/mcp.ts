/**
 * `POST /mcp` (INTERFACE §10.3): the Model Context Protocol over the Streamable HTTP
 * transport, stateless, for agents. The tenant's API key authenticates it like every tenant
 * route (tenant-guard.ts: 401 before the body is read, the tenant's rate, the tenant's
 * database scope); the tools run on the tenant pool (mcp/tools.ts), and `act_on_node` is
 * audited like the node-action route (INTERFACE §10.5).
 *
 * Answers are JSON, never an event stream (the SDK's `enableJsonResponse`): a call's
 * answer is ready when its tool returns. A JSON-RPC request answers 200 with its JSON-RPC
 * response; a notification 202 with no body. Refusals before the protocol (no key, a body
 * that is not one JSON-RPC message, an unsupported `MCP-Protocol-Version`) have the §2 body
 * like every route. `GET /mcp` (a client asking for a server-to-client stream) answers 405,
 * as MCP says a server without that stream does.
 */
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { BadRequest, Internal, MethodNotAllowed } from '../../errors.js';
import { packageVersion } from '../../version.js';
import type { EdgeContext } from '../context.js';
import { recordAudit } from '../../store/audit-log.js';
import { keyIdOf } from '../audit.js';
import { sendError } from '../error-map.js';
import { mcpServer } from '../mcp/server.js';
import { operation } from '../operation.js';

const MCP_PATH = '/mcp';

const id = z.union([z.string().max(200), z.int()]);

const JsonRpcMessage = z
  .looseObject({
    jsonrpc: z.literal('2.0'),
    id: id.optional().describe('Present on a request; a notification has none'),
    method: z.string().min(1).max(200).optional().describe('e.g. `initialize`, `tools/list`, `tools/call`'),
    params: z.record(z.string(), z.unknown()).optional(),
  })
  .describe('One JSON-RPC 2.0 message of the Model Context Protocol (no batches, MCP 2025-06-18)');

const JsonRpcAnswer = z
  .looseObject({
    jsonrpc: z.literal('2.0'),
    id: id.nullable(),
    result: z.record(z.string(), z.unknown()).optional().describe('A tool failure is a result with `isError: true`'),
    error: z.object({ code: z.int(), message: z.string(), data: z.unknown().optional() }).optional(),
  })
  .meta({ id: 'McpAnswer' });

const MCP = operation({
  operationId: 'mcp',
  tag: 'agents',
  summary: 'Model Context Protocol server: tools to search, read and act on the graph',
  description:
    'Streamable HTTP transport, stateless (no `Mcp-Session-Id`), answers in JSON. Tools: `search_nodes`, ' +
    '`get_node`, `list_changes`, `list_installs`, `act_on_node`; each answers the JSON of its route; ' +
    'a failure is a tool ' +
    'result with `isError: true` whose text is the §2 error body. `GET /mcp` answers 405: no server stream.',
  auth: 'bearer',
  scope: 'any',
  body: JsonRpcMessage,
  responses: {
    200: { description: 'The JSON-RPC response to a request', schema: JsonRpcAnswer },
    202: { description: 'A notification or response was accepted (no body)' },
  },
  errors: ['bad_request'],
});

/** The request as the SDK's web-standard transport reads it: the body is handed over already parsed. */
function asWebRequest(req: FastifyRequest): Request {
  const headers = new Headers({
    'content-type': 'application/json',
    // Every answer here is JSON: a client that takes JSON is served, whatever else it lists.
    accept: 'application/json, text/event-stream',
  });
  const version = req.headers['mcp-protocol-version'];
  if (typeof version === 'string') headers.set('mcp-protocol-version', version);
  return new Request(`http://localhost${MCP_PATH}`, { method: 'POST', headers });
}

export const mcpRoutes: FastifyPluginAsync<EdgeContext> = async (plugin, ctx) => {
  const app = plugin.withTypeProvider<ZodTypeProvider>();
  const version = packageVersion();

  app.post(MCP_PATH, { schema: MCP }, async (req, reply) => {
    const audit = (e: { action: string; target: string | null; outcome: string }) =>
      recordAudit(ctx.db, { ...e, tenantId: req.tenantId, keyId: keyIdOf(req), requestId: req.id }).catch(
        (err: unknown) => req.log.error({ err, action: e.action }, 'audit entry not written'),
      );
    // The tools run on the tenant pool, as the tenant routes do; audit entries on the service's own (audit.ts).
    const tools = { ...ctx, db: ctx.tenantDb ?? ctx.db };
    const stamp = (action: string, target: string | null) => ({
      action,
      keyId: keyIdOf(req),
      requestId: req.id,
      target,
    });
    const call = { ctx: tools, tenantId: req.tenantId, scopes: req.apiKey.scopes, requestId: req.id, audit, stamp };
    const server = mcpServer(call, version);
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    try {
      await server.connect(transport);
      const answer = await transport.handleRequest(asWebRequest(req), { parsedBody: req.body });
      if (answer.status === 202) return reply.code(202).send();
      const body = (await answer.json()) as z.output<typeof JsonRpcAnswer>;
      if (!answer.ok) throw refusal(answer.status, body);
      return body;
    } finally {
      await server.close();
    }
  });

  // MCP (Streamable HTTP): a server that offers no stream at GET answers 405.
  app.get(MCP_PATH, { schema: { hide: true } }, async (_req, reply) =>
    sendError(
      reply.header('allow', 'POST'),
      new MethodNotAllowed('this MCP server answers POST only: it offers no server-to-client stream', {
        details: { allow: ['POST'] },
      }),
    ),
  );
};

/** The transport's own refusal (its JSON-RPC error) as the §2 error it is. */
function refusal(status: number, body: z.output<typeof JsonRpcAnswer>): Error {
  const message = body.error?.message ?? `the MCP transport answered ${status}`;
  return status >= 500 ? new Internal(message) : new BadRequest(message);
}
