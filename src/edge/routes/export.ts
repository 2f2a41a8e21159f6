/**
 * `GET /api/v1/export[?install_id=]` (INTERFACE §10.5): the tenant's graph as NDJSON
 * (src/graph/export-lines.ts), streamed: the answer is a stream that pulls the next batch of
 * rows only when the socket has taken the last (Node's stream backpressure), so a slow reader
 * holds one batch in memory, not the graph. Read on the tenant's login, in one transaction.
 * Audited when the answer starts.
 */
import { Readable } from 'node:stream';
import type { FastifyPluginAsync } from 'fastify';
import type pg from 'pg';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { exportLines } from '../../graph/export-lines.js';
import { AUDITED } from '../audit.js';
import type { EdgeContext } from '../context.js';
import { operation } from '../operation.js';
import { ownInstall, validInput } from '../params.js';
import { installIdFilter } from '../schemas.js';

const ExportQuery = z
  .object({ install_id: installIdFilter('Only this install’s nodes, and the edges from them') })
  .strict();

const EXPORT = operation({
  operationId: 'exportGraph',
  tag: 'graph',
  summary: "The tenant's whole graph as NDJSON: every node, then every edge (streamed)",
  auth: 'bearer',
  scope: 'graph:read',
  querystring: ExportQuery,
  responses: {
    200: {
      description:
        'One JSON document per line: `{"type": "node", "node": {...}}` for each node, then `{"type": "edge", ' +
        '"edge": {...}}` for each edge, in the shapes of GET /api/v1/graph/nodes/{id}',
      contentType: 'application/x-ndjson',
      schema: z.string(),
    },
  },
  errors: ['bad_request', 'not_found'],
});

export const exportRoutes: FastifyPluginAsync<EdgeContext> = async (plugin, ctx) => {
  const app = plugin.withTypeProvider<ZodTypeProvider>();
  app.get(
    '/export',
    { schema: EXPORT, attachValidation: true, config: { audit: AUDITED.export } },
    async (req, reply) => {
      const q = validInput<z.output<typeof ExportQuery>>(req, 'querystring');
      const installId = q.install_id ? (await ownInstall(ctx.db, req.tenantId, q.install_id)).install_id : null;
      // Checked out here, inside the tenant's scope: the transaction it begins is bound to the tenant.
      const client = await (ctx.db as pg.Pool).connect();
      async function* lines() {
        try {
          yield* exportLines(client, req.tenantId, installId);
        } finally {
          client.release();
        }
      }
      // Fastify pipes a stream body to the socket with backpressure; the serializer is not used.
      const body = Readable.from(lines(), { objectMode: false, highWaterMark: 64 * 1024 });
      // The document types the answer as text (its lines); the body sent is the stream of them.
      void reply.type('application/x-ndjson').send(body as unknown as string);
      return reply;
    },
  );
};
