/**
 * The OpenAPI description of `POST /api/v1/connectors/chatapp/events` (INTERFACE §9.3).
 * Documentation only (doc-only-schema.ts): the route checks the Slack signature on the raw
 * bytes before it parses anything, so neither headers nor body are validated from here.
 */
import { z } from 'zod';
import { documentationOnly } from '../../doc-only-schema.js';
import { operation } from '../../operation.js';

const UrlVerification = z.looseObject({
  type: z.literal('url_verification'),
  token: z.string().optional(),
  challenge: z.string().describe('echoed back as `{"challenge"}`'),
});

const EventCallback = z.looseObject({
  type: z.literal('event_callback'),
  team_id: z.string().describe('the workspace; picks the install'),
  api_app_id: z.string().optional(),
  event_id: z.string().describe('the event id: Slack retries carry the same one, ingested once'),
  event_time: z.number().int().optional(),
  event: z.looseObject({ type: z.string().describe('e.g. `message`, `reaction_added`, `app_uninstalled`') }),
  authorizations: z.array(z.looseObject({})).optional(),
});

const AppRateLimited = z.looseObject({
  type: z.literal('app_rate_limited'),
  team_id: z.string(),
  minute_rate_limited: z.number().int().optional(),
});

export const EVENTS_SCHEMA = operation({
  operationId: 'receiveChatappEvents',
  tag: 'chatapp',
  summary: 'Slack Events API receiver (HTTP transport): signed JSON events',
  description:
    'Body: a Slack `url_verification` or `event_callback` envelope (or `app_rate_limited`, logged), ' +
    'signed with X-Slack-Signature (v0) over X-Slack-Request-Timestamp and the raw body. ' +
    '`url_verification` answers its challenge; `event_callback` answers 200 once the event is durably stored. ' +
    'A missing, stale or wrong signature is 401 before the body is read as JSON. Mounted only with the HTTP ' +
    'transport (a signing secret set, Socket Mode off).',
  auth: 'public',
  headers: documentationOnly(
    z.looseObject({
      'x-slack-signature': z.string().describe('v0=<hex hmac_sha256 of "v0:<timestamp>:<raw body>">'),
      'x-slack-request-timestamp': z.string().describe('Unix seconds; older than 5 minutes is refused'),
      'x-slack-retry-num': z.string().optional().describe("Slack's retry counter (retries are ingested once)"),
    }),
  ),
  body: documentationOnly(z.discriminatedUnion('type', [UrlVerification, EventCallback, AppRateLimited])),
  responses: {
    200: {
      description: 'Stored (or nothing to store); `challenge` answers a `url_verification`',
      schema: z.union([z.object({ challenge: z.string() }), z.object({ ok: z.literal(true) })]),
    },
  },
  errors: ['unauthorized', 'unavailable'],
});
