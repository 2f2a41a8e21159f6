/**
 * `GET /api/v1/dead-letters` and `POST /api/v1/dead-letters/{id}/replay` (INTERFACE §9.3):
 * the caller's dead letters (those of its installs), and the replay of one of them.
 * Another tenant's id answers 404 exactly like an unknown one (INTERFACE §2).
 */
import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { NotFound } from '../../errors.js';
import { listDeadLetters } from '../../store/dead-letter-list.js';
import type { AuditStamp } from '../../store/audit-log.js';
import { AUDITED, auditStamp } from '../audit.js';
import type { EdgeContext } from '../context.js';
import { operation } from '../operation.js';
import { validInput } from '../params.js';
import { limitParam, nextCursor } from '../schemas.js';

const DEAD_LETTER_ID = /^\d{1,18}$/;

const ListQuery = z
  .object({
    install_id: z.uuid({ message: 'must be an install id' }).optional(),
    limit: limitParam(500, 50),
    cursor: z.string().regex(DEAD_LETTER_ID, { message: 'must be a cursor from next_cursor' }).optional(),
  })
  .strict();

const DeadLetter = z
  .object({
    id: z.string().regex(DEAD_LETTER_ID),
    tenant_id: z.uuid(),
    install_id: z.uuid(),
    event_id: z.string().nullable().describe('null when the stored message cannot be read'),
    kind: z.string().nullable().describe('null when the stored message cannot be read'),
    error: z.string().describe('the real cause of the failure to store the event'),
    dead_lettered_at: z.iso.datetime({ offset: true }),
  })
  .meta({ id: 'DeadLetter' });

const tag = 'dead-letters';
const LIST = operation({
  operationId: 'listDeadLetters',
  tag,
  summary: "The caller's dead letters: events that could not be stored, newest first",
  auth: 'bearer',
  scope: 'installs:read',
  querystring: ListQuery,
  responses: {
    200: {
      description: 'A page of dead letters',
      schema: z.object({ dead_letters: z.array(DeadLetter), next_cursor: nextCursor }),
    },
  },
  errors: ['bad_request'],
});
const REPLAY = operation({
  operationId: 'replayDeadLetter',
  tag,
  summary: 'Put one dead letter back on the durable ingest path (it is ingested once)',
  auth: 'bearer',
  scope: 'installs:write',
  params: z.object({ id: z.string().regex(DEAD_LETTER_ID, { message: 'must be a dead letter id' }) }).strict(),
  responses: {
    200: { description: 'Replayed and removed from the dead letters', schema: z.object({ replayed: z.literal(1) }) },
  },
  errors: ['bad_request', 'not_found'],
});

/** Tenant routes: authenticated by the Bearer key, run in the tenant's scope (tenant-guard.ts). */
const TENANT = { tenant: true };

/**
 * `replay` puts the tenant's dead letter back on the ingest path, writing `audit` with its
 * removal (INTERFACE §10.5); 0 when it is not the tenant's.
 */
export function deadLetterRoutes(
  replay: (sel: { id: string; tenantId: string; audit: AuditStamp }) => Promise<{ replayed: number }>,
): FastifyPluginAsync<EdgeContext> {
  return async (plugin, ctx) => {
    const app = plugin.withTypeProvider<ZodTypeProvider>();
    app.get('/api/v1/dead-letters', { schema: LIST, attachValidation: true, config: TENANT }, async (req) => {
      const q = validInput<z.output<typeof ListQuery>>(req, 'querystring');
      const filter = {
        tenantId: req.tenantId,
        installId: q.install_id?.toLowerCase(),
        limit: q.limit ?? 50,
        cursor: q.cursor,
      };
      // Read as the tenant login when there is one (migration 013), like the other tenant routes.
      // A tenant's dead letters are those of its installs: tenant and install are always set here.
      const page = await listDeadLetters(ctx.tenantDb ?? ctx.db, filter);
      return page as { dead_letters: Array<z.output<typeof DeadLetter>>; next_cursor: string | null };
    });
    app.post(
      '/api/v1/dead-letters/:id/replay',
      { schema: REPLAY, attachValidation: true, config: { ...TENANT, audit: AUDITED.deadLetterReplay } },
      async (req) => {
        validInput(req, 'params');
        const { replayed } = await replay({ id: req.params.id, tenantId: req.tenantId, audit: auditStamp(req) });
        if (replayed === 0) throw new NotFound('dead letter not found');
        return { replayed: 1 as const };
      },
    );
  };
}
