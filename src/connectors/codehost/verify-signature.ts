/**
 * GitHub webhook signatures (INTERFACE §3): `X-Hub-Signature-256: sha256=<hex
 * hmac_sha256(CODEHOST_WEBHOOK_SECRET, raw body)>`, checked by @octokit/webhooks-methods'
 * `verify` (constant-time, over the body as text). What it would throw on is refused here
 * first: a header not of that shape, an empty secret or body. A body that is not valid
 * UTF-8 is refused too: GitHub always sends UTF-8, and a text made of other bytes would not
 * be the bytes that were signed.
 */
import { isUtf8 } from 'node:buffer';
import { verify } from '@octokit/webhooks-methods';

const HEADER = /^sha256=[0-9a-f]{64}$/;

export async function verifySignature(secret: string, rawBody: Buffer, header: unknown): Promise<boolean> {
  if (typeof header !== 'string' || !HEADER.test(header)) return false;
  if (secret.length === 0 || rawBody.length === 0 || !isUtf8(rawBody)) return false;
  return verify(secret, rawBody.toString('utf8'), header);
}
