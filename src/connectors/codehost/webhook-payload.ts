/**
 * Reads a verified webhook body. GitHub sends JSON, or, when the hook is set to
 * `application/x-www-form-urlencoded`, the JSON in a `payload` form field; the signature
 * covers the raw bytes either way.
 */
import { BadRequest } from '../../errors.js';

export function parseWebhookPayload(raw: Buffer, contentType: string | undefined): Record<string, unknown> {
  let text = raw.toString('utf8');
  if (contentType?.toLowerCase().startsWith('application/x-www-form-urlencoded')) {
    const field = new URLSearchParams(text).get('payload');
    if (field === null) throw new BadRequest('form-encoded webhook without a payload field');
    text = field;
  }
  let payload: unknown;
  try {
    payload = JSON.parse(text);
  } catch {
    throw new BadRequest('webhook body is not JSON');
  }
  if (payload === null || typeof payload !== 'object' || Array.isArray(payload)) throw new BadRequest('webhook payload must be a JSON object');
  return payload as Record<string, unknown>;
}
