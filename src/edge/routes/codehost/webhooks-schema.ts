/**
 * The OpenAPI description of `POST /api/v1/connectors/codehost/webhooks` (INTERFACE §9.3).
 * Documentation only (doc-only-schema.ts): the route checks X-Hub-Signature-256 on the raw
 * bytes before anything is parsed, then the event and delivery headers itself (400), so
 * neither headers nor body are validated from here.
 */
import { z } from 'zod';
import { documentationOnly } from '../../doc-only-schema.js';
import { operation } from '../../operation.js';

/** What the route accepts in `X-GitHub-Event` and `X-GitHub-Delivery` (checked after the signature). */
export const EVENT_NAME = /^[a-z_]{1,100}$/;
export const DELIVERY_ID = /^[A-Za-z0-9._:-]{1,200}$/;

const Payload = z
  .looseObject({
    action: z.string().optional().describe('e.g. `opened`, `created`; absent on `push` and `ping`'),
    installation: z
      .looseObject({ id: z.number().int().describe('the GitHub App installation; picks the installs fanned out to') })
      .optional(),
    repository: z.looseObject({ id: z.number().int(), full_name: z.string() }).optional(),
    sender: z.looseObject({ login: z.string(), type: z.string().optional() }).optional(),
  })
  .describe('The GitHub webhook payload of the event named by X-GitHub-Event, as GitHub sent it');

export const WEBHOOK_SCHEMA = operation({
  operationId: 'receiveCodehostWebhook',
  tag: 'codehost',
  summary: 'GitHub App webhook receiver',
  description:
    'Body: the GitHub webhook payload (a JSON object), signed with X-Hub-Signature-256 over the raw body. ' +
    'A missing or wrong signature is 401 before the body is parsed; a missing or malformed X-GitHub-Event ' +
    'or X-GitHub-Delivery is 400. 202 once durably stored (fanned out to every active install bound to ' +
    '`installation.id`); `ping` 200. 501 until the code-host connector is enabled and fully configured.',
  auth: 'public',
  headers: documentationOnly(
    z.looseObject({
      'x-hub-signature-256': z.string().describe('sha256=<hex hmac_sha256 of the raw body with the webhook secret>'),
      'x-github-event': z.string().regex(EVENT_NAME).describe('the event name, e.g. `pull_request`'),
      'x-github-delivery': z
        .string()
        .regex(DELIVERY_ID)
        .describe('the delivery id: the event id, so a redelivery is ingested once'),
    }),
  ),
  body: documentationOnly(Payload),
  responses: {
    200: { description: '`ping` answered; nothing stored', schema: z.object({ ok: z.literal(true) }) },
    202: {
      description: 'Stored for every active install bound to the installation (`installs`: how many; 0 if none)',
      schema: z.object({ ok: z.literal(true), installs: z.int().min(0) }),
    },
  },
  errors: ['unauthorized', 'not_configured', 'unavailable'],
});
