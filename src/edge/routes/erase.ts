/**
 * `POST /api/v1/graph/erase` (INTERFACE §10.5): a platform user of one of the tenant's
 * installs forgotten (src/graph/erase-user.ts), with its audit entry, in one transaction.
 * Mounted with `config: { tenant: true }` on the service's own login (the feed's change log
 * is written by that login only); every statement names the caller's tenant.
 */
import type { FastifyPluginAsync } from 'fastify';
import type pg from 'pg';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { NotFound } from '../../errors.js';
import { eraseUser } from '../../graph/erase-user.js';
import { recordAuditOk } from '../../store/audit-log.js';
import { withTx } from '../../store/db.js';
import { getInstall } from '../../store/installs.js';
import { AUDITED, auditStamp } from '../audit.js';
import type { EdgeContext } from '../context.js';
import { operation } from '../operation.js';
import { validInput } from '../params.js';

const EraseBody = z
  .object({
    install_id: z.uuid({ message: 'must be an install id' }),
    user_external_id: z
      .string()
      .min(1)
      .max(255)
      .describe('As in INTERFACE §5: `{team_id}:{user_id}` of a chat user, or a code-host `{login}`'),
  })
  .strict();

const ERASE = operation({
  operationId: 'eraseUser',
  tag: 'graph',
  summary: "Forget a platform user: its node's names and the text of everything it authored",
  auth: 'bearer',
  scope: 'graph:write',
  body: EraseBody,
  responses: {
    200: {
      description: 'Forgotten: how many nodes and stored events lost text',
      schema: z.object({ erased: z.object({ nodes: z.number().int(), events: z.number().int() }) }),
    },
  },
  errors: ['bad_request', 'not_found'],
});

export const eraseRoutes: FastifyPluginAsync<EdgeContext> = async (plugin, ctx) => {
  const app = plugin.withTypeProvider<ZodTypeProvider>();
  app.post(
    '/api/v1/graph/erase',
    { schema: ERASE, attachValidation: true, config: { tenant: true, audit: AUDITED.erase } },
    async (req) => {
      const body = validInput<z.output<typeof EraseBody>>(req, 'body');
      const erased = await withTx(ctx.db as pg.Pool, async (tx) => {
        const install = await getInstall(tx, req.tenantId, body.install_id.toLowerCase());
        if (!install) throw new NotFound('install not found');
        const out = await eraseUser(tx, install, body.user_external_id);
        await recordAuditOk(tx, req.tenantId, auditStamp(req));
        return out;
      });
      return { erased: { nodes: erased.nodes, events: erased.events } };
    },
  );
};
