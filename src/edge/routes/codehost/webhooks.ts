/**
 * `POST /api/v1/connectors/codehost/webhooks` (INTERFACE §3): GitHub App webhooks in.
 *
 * Its own plugin context (fastify: webhook routes get their own context): a 25 MiB body
 * limit (GitHub's cap) and a parser that keeps the raw bytes, so the signature is checked
 * on exactly what arrived before anything is parsed. Order: 501 until the connector is on
 * (before reading the body) → signature 401 → headers and JSON 400 → `ping` 200 → one
 * durable publish per active install bound to `installation.id` (fan-out across tenants)
 * → 202 once every publish was acknowledged (ARCHITECTURE "Inbound" 1).
 *
 * A redelivery carries the same `X-GitHub-Delivery`, which is the event id: JetStream's
 * duplicate window and the events table's unique key each absorb it.
 *
 * The fan-out list comes from `installs` (bound-installs-cache.ts); while the connector is
 * on, this plugin keeps that cache hearing install changes, from start to `close()`.
 */
import type { FastifyPluginAsync } from 'fastify';
import type pg from 'pg';
import type { Config } from '../../../config.js';
import { WEBHOOK_BODY_LIMIT, type EdgeContext } from '../../context.js';
import { jsonTooDeep, MAX_JSON_DEPTH } from '../../json-depth.js';
import { rawBodyUnderBudget } from '../../raw-body.js';
import { DOCUMENTATION_ONLY } from '../../openapi.js';
import { BadRequest, NotConfigured, Unauthorized } from '../../../errors.js';
import type { Logger } from '../../../log.js';
import type { IngestEvent } from '../../../runtime/ports.js';
import type { BoundInstallsCache } from '../../../connectors/codehost/bound-installs-cache.js';
import { listenInstallChanges } from '../../../connectors/codehost/listen-install-changes.js';
import { findCodehostInstalls } from '../../../store/installs.js';
import { setSuspended } from './suspend-installs.js';
import { uninstallLocally } from './uninstall-locally.js';
import { verifySignature } from '../../../connectors/codehost/verify-signature.js';
import { installationIdOf, toIngestEvent, type WebhookDelivery } from '../../../connectors/codehost/webhook-event.js';
import { parseWebhookJson, webhookJsonText } from '../../../connectors/codehost/webhook-payload.js';
import { DELIVERY_ID, EVENT_NAME, WEBHOOK_SCHEMA } from './webhooks-schema.js';

export const CODEHOST_WEBHOOK_PATH = '/api/v1/connectors/codehost/webhooks';

export interface WebhookRouteDeps {
  config: Readonly<Config>;
  log: Logger;
  pool: pg.Pool;
  publish(event: IngestEvent): Promise<unknown>;
  installs: BoundInstallsCache;
}

function header(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

export function webhookRoutes(deps: WebhookRouteDeps): FastifyPluginAsync<EdgeContext> {
  const { config, pool, installs: bound } = deps;
  const log = deps.log.child({ component: 'codehost-webhooks' });
  return async (app, ctx) => {
    if (config.codehost.enabled) {
      const listener = listenInstallChanges(pool, log, {
        changed: (connectorId) => {
          if (connectorId === 'codehost') bound.invalidate();
        },
        live: (listening) => bound.setLive(listening),
      });
      app.addHook('onClose', () => listener.stop());
    }

    // Encapsulated: JSON parsing stays as it is for every other route. Unsigned bytes are
    // held under the node's budget (INTERFACE §9.3).
    rawBodyUnderBudget(app, ctx.unverifiedBytes, WEBHOOK_BODY_LIMIT);

    app.post(
      CODEHOST_WEBHOOK_PATH,
      {
        bodyLimit: WEBHOOK_BODY_LIMIT,
        schema: WEBHOOK_SCHEMA,
        validatorCompiler: DOCUMENTATION_ONLY,
        onRequest: async () => {
          // spec §8: 501 until enabled and all five settings are present.
          if (!config.codehost.enabled)
            throw new NotConfigured('the code-host connector is not enabled and fully configured');
        },
      },
      async (req, reply) => {
        const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
        if (!(await verifySignature(config.codehost.webhookSecret ?? '', raw, req.headers['x-hub-signature-256']))) {
          throw new Unauthorized('X-Hub-Signature-256 is missing or does not match the body');
        }
        const event = header(req.headers['x-github-event']);
        const deliveryId = header(req.headers['x-github-delivery']);
        if (!event || !EVENT_NAME.test(event)) throw new BadRequest('X-GitHub-Event header is missing or malformed');
        if (!deliveryId || !DELIVERY_ID.test(deliveryId))
          throw new BadRequest('X-GitHub-Delivery header is missing or malformed');
        // INTERFACE §9.3: refused before parsing, so nothing further on can overflow its stack.
        // Judged on the JSON itself: a form-encoded body's brackets are percent-encoded.
        const json = webhookJsonText(raw, header(req.headers['content-type']));
        if (jsonTooDeep(json)) throw new BadRequest(`webhook JSON nested deeper than ${MAX_JSON_DEPTH} levels`);
        const payload = parseWebhookJson(json);
        // INTERFACE §8.19: ping answers 200 {"ok": true}; nothing is stored.
        if (event === 'ping') return reply.code(200).send({ ok: true });

        const installationId = installationIdOf(payload);
        const action = payload.action;
        const lifecycle = event === 'installation' ? action : null;
        if (lifecycle === 'unsuspend' && installationId !== null) {
          // INTERFACE §9.4: the same installs become active again, before the event is fanned out to them.
          const suspended = await findCodehostInstalls(pool, installationId, ['suspended']);
          await setSuspended(pool, ctx.actors, suspended, false, log);
          bound.invalidate();
        }
        const installs = installationId === null ? [] : await bound.lookup(installationId);
        if (lifecycle === 'deleted' && installationId !== null) {
          // Deleted while suspended: those installs end too (they receive no event).
          const suspended = await findCodehostInstalls(pool, installationId, ['suspended']);
          await uninstallLocally(pool, ctx.actors, suspended, log);
        }
        if (installs.length === 0) {
          log.info(
            { event, deliveryId, installationId },
            'webhook for an installation with no active install; not stored',
          );
          return reply.code(202).send({ ok: true, installs: 0 });
        }
        const delivery: WebhookDelivery = { event, deliveryId, payload, json };
        await Promise.all(installs.map((install) => deps.publish(toIngestEvent(delivery, install))));

        if (lifecycle === 'deleted') {
          await uninstallLocally(pool, ctx.actors, installs, log);
          bound.invalidate(); // at once here; the announcement reaches the other edges
        } else if (lifecycle === 'suspend') {
          await setSuspended(pool, ctx.actors, installs, true, log);
          bound.invalidate();
        }
        return reply.code(202).send({ ok: true, installs: installs.length });
      },
    );
  };
}
