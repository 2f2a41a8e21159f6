/**
 * GitHub webhook signatures (INTERFACE §3): `X-Hub-Signature-256: sha256=<hex
 * hmac_sha256(CODEHOST_WEBHOOK_SECRET, raw body)>`, compared in constant time after a
 * length check (@octokit/webhooks-methods `verify`).
 *
 * The library signs a string, so the raw bytes must survive bytes → string → bytes: that
 * holds exactly for valid UTF-8 (GitHub always sends UTF-8). Anything else is refused, so
 * the HMAC is in effect over the bytes that arrived.
 */
import { isUtf8 } from 'node:buffer';
import { verify } from '@octokit/webhooks-methods';

const HEADER = /^sha256=[0-9a-f]{64}$/;

export async function verifySignature(secret: string, rawBody: Buffer, header: unknown): Promise<boolean> {
  if (typeof header !== 'string' || !HEADER.test(header)) return false;
  if (secret.length === 0 || rawBody.length === 0 || !isUtf8(rawBody)) return false;
  return verify(secret, rawBody.toString('utf8'), header);
}
