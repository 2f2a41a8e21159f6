/**
 * GitHub webhook signatures (INTERFACE §3): `X-Hub-Signature-256: sha256=<hex
 * hmac_sha256(CODEHOST_WEBHOOK_SECRET, raw body)>`, compared in constant time after a
 * length check.
 *
 * The HMAC is taken over the bytes that arrived, once, synchronously: no copy of the body
 * into a string and back (as @octokit/webhooks-methods' `verify` needs), which was a
 * visible part of the edge's CPU per webhook (issue 12, `--cpu-prof`). A body that is not
 * valid UTF-8 is still refused, as before: GitHub always sends UTF-8, and the payload is
 * read as text afterwards.
 */
import { isUtf8 } from 'node:buffer';
import { createHmac, timingSafeEqual } from 'node:crypto';

const HEADER = /^sha256=[0-9a-f]{64}$/;
const PREFIX_LENGTH = 'sha256='.length;

export function verifySignature(secret: string, rawBody: Buffer, header: unknown): boolean {
  if (typeof header !== 'string' || !HEADER.test(header)) return false;
  if (secret.length === 0 || rawBody.length === 0 || !isUtf8(rawBody)) return false;
  const expected = createHmac('sha256', secret).update(rawBody).digest();
  // The header's shape is checked above: 64 lowercase hex digits, so exactly 32 bytes.
  const given = Buffer.from(header.slice(PREFIX_LENGTH), 'hex');
  return given.length === expected.length && timingSafeEqual(given, expected);
}
