/**
 * Slack request signing (INTERFACE §3 `chatapp/events`): `X-Slack-Signature` is
 * `v0=` + hex HMAC-SHA256 of `v0:{X-Slack-Request-Timestamp}:{raw body}` under the
 * signing secret. The timestamp must be within 5 minutes of now in either direction
 * (a replayed or pre-dated request is refused), and the comparison is constant-time
 * behind a length guard (timingSafeEqual throws on unequal lengths).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

const SIGNATURE_TOLERANCE_S = 5 * 60;

export interface SignedRequest {
  timestamp: string | undefined;
  signature: string | undefined;
  rawBody: Buffer;
}

export type SignatureVerdict = { ok: true } | { ok: false; reason: 'missing' | 'stale' | 'mismatch' };

export function signSlackRequest(secret: string, timestamp: string, rawBody: Buffer | string): string {
  return `v0=${createHmac('sha256', secret).update(`v0:${timestamp}:`).update(rawBody).digest('hex')}`;
}

export function verifySlackSignature(
  secret: string,
  req: SignedRequest,
  nowS = Math.floor(Date.now() / 1000),
): SignatureVerdict {
  const { timestamp, signature } = req;
  if (!timestamp || !signature) return { ok: false, reason: 'missing' };
  if (!/^\d{1,12}$/.test(timestamp)) return { ok: false, reason: 'stale' };
  if (Math.abs(nowS - Number(timestamp)) > SIGNATURE_TOLERANCE_S) return { ok: false, reason: 'stale' };
  const expected = Buffer.from(signSlackRequest(secret, timestamp, req.rawBody), 'utf8');
  const given = Buffer.from(signature, 'utf8');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return { ok: false, reason: 'mismatch' };
  return { ok: true };
}
