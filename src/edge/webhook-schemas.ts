/** What the webhook routes (INTERFACE §10.2) take and answer. */
import { z } from 'zod';
import { NODE_KINDS } from '../graph/kinds.js';

const ts = z.iso.datetime({ offset: true }).describe('ISO 8601 UTC');

export const WebhookIdParams = z
  .object({
    webhookId: z
      .string()
      .meta({ format: 'uuid' })
      .describe('A webhook id; anything else answers 404 like an unknown id'),
  })
  .strict();

const url = z
  .string()
  .min(1)
  .max(2048)
  .describe(
    '`https://` (or `http://` with SERVICE_WEBHOOKS_ALLOW_HTTP=1); a host that is or resolves to a loopback, ' +
      'private, link-local or unspecified address is refused unless SERVICE_WEBHOOKS_ALLOW_PRIVATE=1',
  );
const kinds = z
  .array(z.enum(NODE_KINDS))
  .max(NODE_KINDS.length)
  .describe('Only changes of these node kinds; empty or absent: every kind');
const description = z.string().max(500);

export const CreateWebhookBody = z
  .object({ url, kinds: kinds.optional(), description: description.optional() })
  .strict();

export const PatchWebhookBody = z
  .object({
    url: url.optional(),
    kinds: kinds.optional(),
    description: description.nullable().optional(),
    status: z
      .enum(['enabled', 'disabled'])
      .optional()
      .describe('`enabled` again resumes from the last delivered change'),
  })
  .strict();

export const WebhookSchema = z
  .object({
    id: z.uuid(),
    url: z.string(),
    kinds: z.array(z.enum(NODE_KINDS)),
    description: z.string().nullable(),
    status: z
      .enum(['enabled', 'failing', 'disabled'])
      .describe('`failing` after 24 hours of failed deliveries, `disabled` after 72 (or by PATCH)'),
    created_at: ts,
  })
  .meta({ id: 'Webhook' });

export const WebhookWithSecret = WebhookSchema.extend({
  secret: z
    .string()
    .describe('`whsec_` + base64 of 32 random bytes: verify deliveries with it; shown only on create and rotate'),
}).meta({ id: 'WebhookWithSecret' });

export const WebhookList = z.object({ webhooks: z.array(WebhookSchema) });

export const DeliveriesQuery = z
  .object({
    limit: z.int().min(1).max(500).optional().describe('Default 50'),
    cursor: z
      .string()
      .regex(/^[1-9][0-9]{0,18}$/)
      .optional()
      .describe("A page's `next_cursor`"),
  })
  .strict();

export const DeliveriesPage = z.object({
  deliveries: z.array(
    z
      .object({
        id: z.uuid(),
        message_id: z.string().describe('The attempt’s `webhook-id` header, shared by the retries of one message'),
        attempted_at: ts,
        status_code: z.int().nullable().describe('What the endpoint answered; null: no answer'),
        error: z.string().nullable(),
        duration_ms: z.int(),
        changes: z.int().describe('How many changes the message carried'),
      })
      .meta({ id: 'WebhookDelivery' }),
  ),
  next_cursor: z.string().nullable().describe('Pass as `cursor` for the next page; null on the last'),
});
