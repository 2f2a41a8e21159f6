/**
 * Reads a verified webhook body. GitHub sends JSON, or, when the hook is set to
 * `application/x-www-form-urlencoded`, the JSON in a `payload` form field; the signature
 * covers the raw bytes either way. Also returns the payload's JSON text as delivered, so
 * the publisher can store it as it came instead of encoding the parsed object again.
 */
import { BadRequest } from '../../errors.js';

export interface WebhookPayload {
  payload: Record<string, unknown>;
  /** UTF-8 JSON text that parses to `payload`: the body itself, or the form field. */
  json: Uint8Array;
}

export function parseWebhookPayload(raw: Buffer, contentType: string | undefined): WebhookPayload {
  let text = raw.toString('utf8');
  let json: Uint8Array = raw;
  if (contentType?.toLowerCase().startsWith('application/x-www-form-urlencoded')) {
    const field = new URLSearchParams(text).get('payload');
    if (field === null) throw new BadRequest('form-encoded webhook without a payload field');
    text = field;
    json = Buffer.from(field, 'utf8');
  }
  let payload: unknown;
  try {
    payload = JSON.parse(text);
  } catch {
    throw new BadRequest('webhook body is not JSON');
  }
  if (payload === null || typeof payload !== 'object' || Array.isArray(payload))
    throw new BadRequest('webhook payload must be a JSON object');
  return { payload: payload as Record<string, unknown>, json };
}
