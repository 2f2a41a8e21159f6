/** `GET /api/v1/connectors/installs/{id}/events` — the ingest log, newest first (INTERFACE §3, §8.27). */
import type { FastifyPluginAsync } from 'fastify';
import { z } from 'zod';
import { listEvents } from '../../store/events.js';
import type { EdgeContext } from '../context.js';
import { ownInstall, parseOrBadRequest } from '../params.js';

const EventsQuery = z
  .object({
    kind: z.string().min(1).max(200).optional(),
    limit: z
      .string()
      .regex(/^\d+$/, { message: 'must be a whole number' })
      .transform(Number)
      .pipe(z.number().int().min(1).max(500))
      .optional(),
    cursor: z.string().min(1).max(200).optional(),
  })
  .strict();

export const eventRoutes: FastifyPluginAsync<EdgeContext> = async (app, ctx) => {
  app.get<{ Params: { installId: string } }>('/connectors/installs/:installId/events', async (req) => {
    const install = await ownInstall(ctx.db, req.tenantId, req.params.installId);
    const q = parseOrBadRequest(EventsQuery, req.query, 'query');
    return listEvents(ctx.db, req.tenantId, install.install_id, {
      kind: q.kind,
      limit: q.limit ?? 50,
      cursor: q.cursor,
    });
  });
};
