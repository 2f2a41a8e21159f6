/** `GET /api/v1/audit` (INTERFACE §10.5): the tenant's audit log, newest first. */
import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { listAudit } from '../../store/audit-log.js';
import type { EdgeContext } from '../context.js';
import { operation } from '../operation.js';
import { validInput } from '../params.js';
import { limitParam, nextCursor } from '../schemas.js';

const AuditQuery = z
  .object({
    limit: limitParam(500, 50),
    cursor: z
      .string()
      .regex(/^[1-9]\d{0,18}$/, { message: 'must be a cursor from next_cursor' })
      .optional(),
  })
  .strict();

const AuditEntry = z
  .object({
    id: z.string(),
    at: z.iso.datetime({ offset: true }),
    action: z.string().describe('install, uninstall, emit, node_action, dead_letter_replay, erase, export, ...'),
    key_id: z.uuid().nullable().describe('the API key that did it; null for an operator or a browser (OAuth)'),
    request_id: z.string().nullable().describe("the request's X-Request-Id"),
    target: z.string().nullable().describe('what it was done to, e.g. install/<id>, node/<id>'),
    outcome: z.string().describe('ok, or the error code it answered'),
  })
  .meta({ id: 'AuditEntry' });

const LIST = operation({
  operationId: 'listAudit',
  tag: 'audit',
  summary: "The tenant's audit log: who did what with its keys, newest first (append-only)",
  auth: 'bearer',
  scope: 'audit:read',
  querystring: AuditQuery,
  responses: {
    200: {
      description: 'A page of audit entries',
      schema: z.object({ entries: z.array(AuditEntry), next_cursor: nextCursor }),
    },
  },
  errors: ['bad_request'],
});

export const auditRoutes: FastifyPluginAsync<EdgeContext> = async (plugin, ctx) => {
  const app = plugin.withTypeProvider<ZodTypeProvider>();
  app.get('/audit', { schema: LIST, attachValidation: true }, async (req) => {
    const q = validInput<z.output<typeof AuditQuery>>(req, 'querystring');
    return listAudit(ctx.db, req.tenantId, { limit: q.limit ?? 50, cursor: q.cursor });
  });
};
