/**
 * Reads a verified webhook body. GitHub sends JSON, or, when the hook is set to
 * `application/x-www-form-urlencoded`, the JSON in a `payload` form field; the signature
 * covers the raw bytes either way. Two steps, so the caller can judge the JSON text itself
 * (its depth, INTERFACE §9.3) before anything parses it: `webhookJsonText` finds the JSON
 * as delivered (the publisher stores it as it came instead of encoding the parsed object
 * again), `parseWebhookJson` reads it.
 */
import { BadRequest } from '../../errors.js';

/** UTF-8 JSON text of the delivery: the body itself, or its decoded `payload` form field. */
export function webhookJsonText(raw: Buffer, contentType: string | undefined): Buffer {
  if (!contentType?.toLowerCase().startsWith('application/x-www-form-urlencoded')) return raw;
  const field = new URLSearchParams(raw.toString('utf8')).get('payload');
  if (field === null) throw new BadRequest('form-encoded webhook without a payload field');
  return Buffer.from(field, 'utf8');
}

export function parseWebhookJson(json: Buffer): Record<string, unknown> {
  let payload: unknown;
  try {
    payload = JSON.parse(json.toString('utf8'));
  } catch {
    throw new BadRequest('webhook body is not JSON');
  }
  if (payload === null || typeof payload !== 'object' || Array.isArray(payload))
    throw new BadRequest('webhook payload must be a JSON object');
  return payload as Record<string, unknown>;
}
