/**
 * `GET /api/v1/export` (INTERFACE §10.5): the tenant's graph as NDJSON, every node then every
 * edge (src/graph/export-lines.ts), streamed from server-side cursors on a connection of the
 * tenant's fenced pool held for the whole export, so row-level security confines it to the
 * caller's rows. A reader that reads slowly holds the cursor (nothing is fetched ahead of
 * it); one that goes away ends the transaction and gives the connection back.
 *
 * Bounds: a reader that takes nothing for `EXPORT_STALL_MS` loses its connection (the
 * socket's idle timeout), which ends the export the same way; Postgres ends a transaction
 * left idle past `EXPORT_STALL_MS` + 30 s (a backstop); each FETCH runs under the tenant
 * pool's statement timeout; and a node streams at most `MAX_OPEN_EXPORTS` at once (the
 * tenant pool has 5 connections and the other routes need theirs): the next answers 429.
 */
import type { FastifyPluginAsync } from 'fastify';
import type pg from 'pg';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { RateLimited } from '../../errors.js';
import { openExport } from '../../graph/export-lines.js';
import { recordAuditOk } from '../../store/audit-log.js';
import { AUDITED, auditStamp } from '../audit.js';
import type { EdgeContext } from '../context.js';
import { operation } from '../operation.js';
import { ownInstall, validInput } from '../params.js';
import { installIdFilter } from '../schemas.js';

const EXPORT_STALL_MS = 30_000;
const MAX_OPEN_EXPORTS = 2;
const NDJSON = 'application/x-ndjson';

const ExportQuery = z.object({ install_id: installIdFilter('nodes and the edges touching them') }).strict();

const EXPORT = operation({
  operationId: 'exportData',
  tag: 'graph',
  summary: "All of the tenant's graph as NDJSON: every node, then every edge, streamed",
  description:
    'One JSON object per line: `{"type": "node", "node": {...}}` for each node, then `{"type": "edge", ' +
    '"edge": {...}}` for each edge, in the shapes of `GET /api/v1/graph/nodes/{id}` (a node with all its props). ' +
    'Read from one snapshot and streamed as the reader takes it; a reader that takes nothing for 30 s is ' +
    'disconnected. A response that ends without its last line break was cut short: start again. At most ' +
    `${MAX_OPEN_EXPORTS} exports stream from one node at once (429 past that).`,
  auth: 'bearer',
  scope: 'graph:read',
  querystring: ExportQuery,
  responses: {
    200: {
      description: 'The NDJSON lines',
      contentType: NDJSON,
      schema: z
        .string()
        .describe('`{"type": "node", "node": GraphNode}` lines, then `{"type": "edge", "edge": GraphEdge}`'),
    },
  },
  errors: ['bad_request', 'not_found'],
});

export const exportRoutes: FastifyPluginAsync<EdgeContext> = async (plugin, ctx) => {
  const app = plugin.withTypeProvider<ZodTypeProvider>();
  let open = 0;
  app.get(
    '/export',
    { schema: EXPORT, attachValidation: true, config: { audit: AUDITED.export } },
    async (req, reply) => {
      const q = validInput<z.output<typeof ExportQuery>>(req, 'querystring');
      const install = q.install_id === undefined ? null : await ownInstall(ctx.db, req.tenantId, q.install_id);
      if (open >= MAX_OPEN_EXPORTS) throw new RateLimited('this node is streaming as many exports as it can', 5);
      // INTERFACE §10.5: committed before the first line leaves, so no export is ever read without
      // its entry (an entry that cannot be written fails the export).
      await recordAuditOk(ctx.db, req.tenantId, auditStamp(req));
      open += 1;
      let client: pg.PoolClient;
      try {
        client = await (ctx.db as pg.Pool).connect();
      } catch (err) {
        open -= 1;
        throw err;
      }
      // What this export holds in the node: its stream's buffer and the response's (metrics.ts).
      function held(): number {
        return stream.readableLength + reply.raw.writableLength;
      }
      const stream = await openExport(
        client,
        { tenantId: req.tenantId, installId: install?.install_id, idleInTransactionMs: EXPORT_STALL_MS + 30_000 },
        (broken) => {
          open -= 1;
          ctx.metrics.exports.delete(held);
          client.release(broken);
        },
      );
      ctx.metrics.exports.add(held);
      // A reader that takes nothing leaves the socket idle: Node destroys it, which ends the export.
      req.raw.socket?.setTimeout(EXPORT_STALL_MS);
      // A stream leaves as it is (fastify serializes no stream); the schema documents its lines.
      return reply.type(NDJSON).send(stream as never);
    },
  );
};
