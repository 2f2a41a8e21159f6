/**
 * The OpenAPI description of `POST /api/v1/connectors/codehost/webhooks` (INTERFACE §9.3).
 * Documentation only (doc-only-schema.ts): the route checks X-Hub-Signature-256 on the raw
 * bytes before anything is parsed, then the event and delivery headers itself (400), so
 * neither headers nor body are validated from here.
 */
import { z } from 'zod';
import { documentationOnly } from '../../doc-only-schema.js';

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

export const WEBHOOK_SCHEMA = {
  summary: 'GitHub App webhook receiver',
  description:
    'Body: the GitHub webhook payload (a JSON object), signed with X-Hub-Signature-256 over the raw body. ' +
    'A missing or wrong signature is 401 before the body is parsed; a missing or malformed X-GitHub-Event ' +
    'or X-GitHub-Delivery is 400. 202 once durably stored (fanned out to every active install bound to ' +
    '`installation.id`); `ping` 200. 501 until the code-host connector is enabled and fully configured.',
  tags: ['codehost'],
  security: [],
  headers: documentationOnly(
    z.looseObject({
      'x-hub-signature-256': z.string().describe('sha256=<hex hmac_sha256 of the raw body with the webhook secret>'),
      'x-github-event': z
        .string()
        .regex(/^[a-z_]{1,100}$/)
        .describe('the event name, e.g. `pull_request`'),
      'x-github-delivery': z
        .string()
        .regex(/^[A-Za-z0-9._:-]{1,200}$/)
        .describe('the delivery id: the event id, so a redelivery is ingested once'),
    }),
  ),
  body: documentationOnly(Payload),
  response: {
    200: z.object({ ok: z.literal(true) }),
    202: z.object({ ok: z.literal(true), installs: z.number().int() }),
  },
};
