/**
 * Webhooks to tenants (INTERFACE §10.2): create, list, read, change, delete, rotate the
 * secret, and read the deliveries log. Delivery itself is the webhook's actor
 * (actors/webhooks/webhook-actor.ts), which a create or an enable wakes through `resume`.
 * Tenant routes: the Bearer key authenticates them and they run fenced to its tenant.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { z } from 'zod';
import { NotFound } from '../../errors.js';
import type { Logger } from '../../log.js';
import type { CredentialCipher } from '../../store/credential-cipher.js';
import type pg from 'pg';
import { recordAuditOk } from '../../store/audit-log.js';
import { withTx, type Queryable } from '../../store/db.js';
import { listDeliveries } from '../../store/webhook-deliveries.js';
import * as store from '../../store/webhooks.js';
import { checkWebhookUrl, type Resolver, type WebhookUrlPolicy } from '../../webhook-url.js';
import { AUDITED, auditStamp } from '../audit.js';
import type { EdgeContext } from '../context.js';
import { operation } from '../operation.js';
import { validInput } from '../params.js';
import {
  CreateWebhookBody,
  DeliveriesPage,
  DeliveriesQuery,
  PatchWebhookBody,
  WebhookIdParams,
  WebhookList,
  WebhookSchema,
  WebhookWithSecret,
} from '../webhook-schemas.js';

export interface WebhookRoutePorts {
  cipher: CredentialCipher;
  policy: WebhookUrlPolicy;
  resolve?: Resolver;
  /** Wakes the webhook's delivery actor (created, enabled); a failure is logged, the resume sweep retries. */
  resume(webhookId: string): Promise<unknown>;
}

/** INTERFACE §10.2: the previous secret signs too, this long after a rotation. */
const SECRET_OVERLAP_HOURS = 24;

const tag = 'webhooks';
const auth = 'bearer';
// INTERFACE §10.4: every webhook route needs webhooks:write.
const scope = 'webhooks:write';
const params = WebhookIdParams;
const CREATE = operation({
  operationId: 'createWebhook',
  tag,
  summary: "Send the tenant's graph changes to a URL, signed (Standard Webhooks)",
  description:
    'Deliveries start with the changes committed after this call: `POST` of `{"type": "graph.changed", ' +
    '"webhook_id", "changes", "next_cursor"}` with `webhook-id`, `webhook-timestamp` and `webhook-signature`.',
  auth,
  scope,
  body: CreateWebhookBody,
  responses: { 201: { description: 'The webhook, with its secret (shown only now)', schema: WebhookWithSecret } },
  errors: ['bad_config'],
});
const LIST = operation({
  operationId: 'listWebhooks',
  tag,
  summary: "The tenant's webhooks, newest first",
  auth,
  scope,
  responses: { 200: { description: 'The webhooks', schema: WebhookList } },
  errors: [],
});
const GET = operation({
  operationId: 'getWebhook',
  tag,
  summary: 'One webhook',
  auth,
  scope,
  params,
  responses: { 200: { description: 'The webhook', schema: WebhookSchema } },
  errors: ['not_found'],
});
const PATCH = operation({
  operationId: 'updateWebhook',
  tag,
  summary: 'Change a webhook: its URL, kinds, description, or enable or disable it',
  auth,
  scope,
  params,
  body: PatchWebhookBody,
  responses: { 200: { description: 'The webhook as it is now', schema: WebhookSchema } },
  errors: ['not_found', 'bad_config'],
});
const DELETE = operation({
  operationId: 'deleteWebhook',
  tag,
  summary: 'Delete a webhook and its deliveries log',
  auth,
  scope,
  params,
  responses: { 204: { description: 'Deleted; no body' } },
  errors: ['not_found'],
});
const ROTATE = operation({
  operationId: 'rotateWebhookSecret',
  tag,
  summary: 'A new secret; the previous one keeps signing (a second signature) for 24 hours',
  auth,
  scope,
  params,
  responses: { 200: { description: 'The webhook with its new secret', schema: WebhookWithSecret } },
  errors: ['not_found'],
});
const DELIVERIES = operation({
  operationId: 'listWebhookDeliveries',
  tag,
  summary: "A webhook's delivery attempts, newest first",
  auth,
  scope,
  params,
  querystring: DeliveriesQuery,
  responses: { 200: { description: 'A page of attempts', schema: DeliveriesPage } },
  errors: ['not_found', 'bad_request'],
});

/** A row as the document says it (the store names kinds as plain strings). */
const shown = (w: store.Webhook) => w as z.input<typeof WebhookSchema>;

/** INTERFACE §10.5: every webhook change is in the audit log. */
const AUDIT = { audit: AUDITED.webhookChange };

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function webhookRoutes(ports: WebhookRoutePorts): FastifyPluginAsync<EdgeContext> {
  return async (plugin, ctx) => {
    const app = plugin.withTypeProvider<ZodTypeProvider>();
    const db = (): Queryable => ctx.tenantDb ?? ctx.db;
    const own = async (tenantId: string, id: string) => {
      const w = UUID.test(id) ? await store.getWebhook(db(), tenantId, id.toLowerCase()) : null;
      if (!w) throw new NotFound('webhook not found');
      return w;
    };
    const checked = async (url: string) => (await checkWebhookUrl(url, ports.policy, ports.resolve)).url.href;
    const wake = (id: string) => resume(ports, id, ctx.log);
    /** A webhook change and its audit entry (INTERFACE §10.5), one transaction. */
    const audited = <T>(req: FastifyRequest, target: string, change: (tx: Queryable) => Promise<T>): Promise<T> =>
      withTx(db() as pg.Pool, async (tx) => {
        const out = await change(tx);
        await recordAuditOk(tx, req.tenantId, auditStamp(req, target));
        return out;
      });

    app.post('/api/v1/webhooks', { schema: CREATE, attachValidation: true, config: AUDIT }, async (req, reply) => {
      const body = validInput<z.output<typeof CreateWebhookBody>>(req, 'body');
      const id = randomUUID();
      const secret = store.newWebhookSecret();
      const url = await checked(body.url);
      const created = await audited(req, `webhook/${id}`, (tx) =>
        store.createWebhook(tx, {
          id,
          tenantId: req.tenantId,
          url,
          kinds: body.kinds ?? [],
          description: body.description ?? null,
          secret: store.sealSecret(ports.cipher, req.tenantId, id, secret),
        }),
      );
      await wake(id);
      return reply.code(201).send({ ...shown(created), secret });
    });

    app.get('/api/v1/webhooks', { schema: LIST }, async (req) => ({
      webhooks: (await store.listWebhooks(db(), req.tenantId)).map(shown),
    }));

    app.get('/api/v1/webhooks/:webhookId', { schema: GET }, async (req) =>
      shown(await own(req.tenantId, req.params.webhookId)),
    );

    app.patch('/api/v1/webhooks/:webhookId', { schema: PATCH, attachValidation: true, config: AUDIT }, async (req) => {
      const w = await own(req.tenantId, req.params.webhookId);
      const body = validInput<z.output<typeof PatchWebhookBody>>(req, 'body');
      const patch: store.WebhookPatch = {
        ...body,
        ...(body.url === undefined ? {} : { url: await checked(body.url) }),
      };
      const updated = await audited(req, `webhook/${w.id}`, async (tx) => {
        const changed = await store.updateWebhook(tx, req.tenantId, w.id, patch);
        if (!changed) throw new NotFound('webhook not found');
        return changed;
      });
      if (updated.status !== 'disabled') await wake(updated.id);
      return shown(updated);
    });

    app.delete('/api/v1/webhooks/:webhookId', { schema: DELETE, config: AUDIT }, async (req, reply) => {
      const w = await own(req.tenantId, req.params.webhookId);
      await audited(req, `webhook/${w.id}`, async (tx) => {
        if (!(await store.deleteWebhook(tx, req.tenantId, w.id))) throw new NotFound('webhook not found');
      });
      return reply.code(204).send();
    });

    app.post('/api/v1/webhooks/:webhookId/rotate-secret', { schema: ROTATE, config: AUDIT }, async (req) => {
      const w = await own(req.tenantId, req.params.webhookId);
      const secret = store.newWebhookSecret();
      const sealed = store.sealSecret(ports.cipher, req.tenantId, w.id, secret);
      const rotated = await audited(req, `webhook/${w.id}`, async (tx) => {
        const done = await store.rotateWebhookSecret(tx, req.tenantId, w.id, sealed, SECRET_OVERLAP_HOURS);
        if (!done) throw new NotFound('webhook not found');
        return done;
      });
      return { ...shown(rotated), secret };
    });

    app.get('/api/v1/webhooks/:webhookId/deliveries', { schema: DELIVERIES, attachValidation: true }, async (req) => {
      const w = await own(req.tenantId, req.params.webhookId);
      const q = validInput<z.output<typeof DeliveriesQuery>>(req, 'querystring');
      return listDeliveries(db(), req.tenantId, w.id, q.limit ?? 50, q.cursor ?? null);
    });
  };
}

async function resume(ports: WebhookRoutePorts, id: string, log: Logger): Promise<void> {
  await ports.resume(id).catch((err: unknown) => {
    log.warn({ err, webhookId: id }, 'webhook actor not woken; the resume sweep starts it within a minute');
  });
}
