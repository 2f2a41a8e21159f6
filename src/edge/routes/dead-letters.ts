/**
 * `GET /api/v1/dead-letters` and `POST /api/v1/dead-letters/{id}/replay` (INTERFACE §9.3):
 * the caller's dead letters (those of its installs), and the replay of one of them.
 * Another tenant's id answers 404 exactly like an unknown one (INTERFACE §2).
 */
import type { FastifyPluginAsync } from 'fastify';
import { z } from 'zod';
import { NotFound } from '../../errors.js';
import { listDeadLetters } from '../../store/dead-letter-list.js';
import { runInTenantScope } from '../../store/tenant-scope.js';
import type { EdgeContext } from '../context.js';
import { validInput } from '../params.js';

const ListQuery = z
  .object({
    install_id: z.uuid({ message: 'must be an install id' }).optional(),
    limit: z
      .string()
      .regex(/^\d+$/, { message: 'must be a whole number' })
      .transform(Number)
      .pipe(z.number().int().min(1).max(500))
      .optional(),
    cursor: z
      .string()
      .regex(/^\d{1,18}$/, { message: 'must be a cursor from next_cursor' })
      .optional(),
  })
  .strict();

const DeadLetter = z.object({
  id: z.string(),
  tenant_id: z.string(),
  install_id: z.string(),
  event_id: z.string(),
  kind: z.string(),
  error: z.string().describe('the real cause of the failure to store the event'),
  dead_lettered_at: z.string(),
});

const LIST_SCHEMA = {
  summary: "The caller's dead letters: events that could not be stored, newest first",
  tags: ['dead-letters'],
  querystring: ListQuery,
  response: { 200: z.object({ dead_letters: z.array(DeadLetter), next_cursor: z.string().nullable() }) },
};

const REPLAY_SCHEMA = {
  summary: 'Put one dead letter back on the durable ingest path (it is ingested once)',
  tags: ['dead-letters'],
  params: z.object({ id: z.string().regex(/^\d{1,18}$/, { message: 'must be a dead letter id' }) }),
  response: { 200: z.object({ replayed: z.literal(1) }) },
};

/** `replay` puts the tenant's dead letter back on the ingest path; 0 when it is not the tenant's. */
export function deadLetterRoutes(
  replay: (sel: { id: string; tenantId: string }) => Promise<{ replayed: number }>,
): FastifyPluginAsync<EdgeContext> {
  return async (app, ctx) => {
    app.addHook('onRequest', async (req) => {
      await ctx.authenticate(req);
    });
    app.get('/api/v1/dead-letters', { schema: LIST_SCHEMA, attachValidation: true }, async (req) => {
      const q = validInput<z.output<typeof ListQuery>>(req, 'querystring');
      const filter = {
        tenantId: req.tenantId,
        installId: q.install_id?.toLowerCase(),
        limit: q.limit ?? 50,
        cursor: q.cursor,
      };
      // Read as the tenant login when there is one (migration 013), like the other tenant routes.
      const db = ctx.tenantDb;
      return db ? runInTenantScope(req.tenantId, () => listDeadLetters(db, filter)) : listDeadLetters(ctx.db, filter);
    });
    app.post<{ Params: { id: string } }>(
      '/api/v1/dead-letters/:id/replay',
      { schema: REPLAY_SCHEMA, attachValidation: true },
      async (req) => {
        validInput(req, 'params');
        const { replayed } = await replay({ id: req.params.id, tenantId: req.tenantId });
        if (replayed === 0) throw new NotFound('dead letter not found');
        return { replayed };
      },
    );
  };
}
