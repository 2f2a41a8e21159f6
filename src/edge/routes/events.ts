/** `GET /api/v1/connectors/installs/{id}/events` — the ingest log, newest first (INTERFACE §3, §8.27). */
import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { listEvents, MAX_EVENTS_LIMIT } from '../../store/events.js';
import type { EdgeContext } from '../context.js';
import { operation } from '../operation.js';
import { ownInstall, validInput } from '../params.js';
import { IngestedEvent, InstallIdParams, limitParam, nextCursor } from '../schemas.js';

const EventsQuery = z
  .object({
    kind: z.string().min(1).max(200).optional(),
    limit: limitParam(MAX_EVENTS_LIMIT, 50),
    cursor: z.string().min(1).max(200).optional().describe("A page's `next_cursor`"),
  })
  .strict();

const LIST = operation({
  operationId: 'listInstallEvents',
  tag: 'installs',
  summary: 'The ingest log of an install, newest stored first',
  auth: 'bearer',
  scope: 'installs:read',
  params: InstallIdParams,
  querystring: EventsQuery,
  responses: {
    200: {
      description: 'A page of stored events',
      schema: z.object({ events: z.array(IngestedEvent), next_cursor: nextCursor }),
    },
  },
  errors: ['not_found', 'bad_request'],
});

export const eventRoutes: FastifyPluginAsync<EdgeContext> = async (plugin, ctx) => {
  const app = plugin.withTypeProvider<ZodTypeProvider>();
  app.get('/connectors/installs/:installId/events', { schema: LIST, attachValidation: true }, async (req) => {
    const install = await ownInstall(ctx.db, req.tenantId, req.params.installId);
    const q = validInput<z.output<typeof EventsQuery>>(req, 'querystring');
    return listEvents(ctx.db, req.tenantId, install.install_id, {
      kind: q.kind,
      limit: q.limit ?? 50,
      cursor: q.cursor,
    });
  });
};
