/** Unit: GitHub webhook signatures and the admin token comparison (INTERFACE §3; spec §5). */
import { describe, expect, it } from 'vitest';
import { adminTokenMatches } from '../../src/edge/routes/codehost/check-admin-token.js';
import { verifySignature } from '../../src/connectors/codehost/verify-signature.js';

// GitHub's published test vector ("Validating webhook deliveries").
const SECRET = "It's a Secret to Everybody";
const PAYLOAD = Buffer.from('Hello, World!');
const SIGNATURE = 'sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17';

describe('verifySignature', () => {
  it('accepts GitHub’s published test vector', async () => {
    expect(await verifySignature(SECRET, PAYLOAD, SIGNATURE)).toBe(true);
  });

  it('refuses a wrong secret, a changed body, and malformed or wrong-length headers', async () => {
    const refused: Array<[string, Buffer, unknown]> = [
      ['It’s a Secret to Everybody', PAYLOAD, SIGNATURE],
      [SECRET, Buffer.from('Hello, World?'), SIGNATURE],
      [SECRET, PAYLOAD, SIGNATURE.toUpperCase()],
      [SECRET, PAYLOAD, SIGNATURE.slice(0, -1)],
      [SECRET, PAYLOAD, `${SIGNATURE}0`],
      [SECRET, PAYLOAD, SIGNATURE.replace('sha256=', 'sha1=')],
      [SECRET, PAYLOAD, SIGNATURE.slice(7)],
      [SECRET, PAYLOAD, undefined],
      [SECRET, PAYLOAD, [SIGNATURE]],
      ['', PAYLOAD, SIGNATURE],
      [SECRET, Buffer.alloc(0), SIGNATURE],
    ];
    for (const [secret, body, header] of refused) expect(await verifySignature(secret, body, header)).toBe(false);
  });

  it('refuses bytes that are not UTF-8, even correctly signed, since the check could not be over the same bytes', async () => {
    const { createHmac } = await import('node:crypto');
    const body = Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0xe9, 0x7d]);
    const sig = `sha256=${createHmac('sha256', SECRET).update(body).digest('hex')}`;
    expect(await verifySignature(SECRET, body, sig)).toBe(false);
  });
});

describe('adminTokenMatches', () => {
  it('matches only the exact token, whatever the length of a wrong one', () => {
    expect(adminTokenMatches('s3cret-token', 's3cret-token')).toBe(true);
    for (const given of ['s3cret-toke', 's3cret-tokenn', 'S3cret-token', '', undefined, 42, ['x']]) {
      expect(adminTokenMatches(given, 's3cret-token')).toBe(false);
    }
    expect(adminTokenMatches(['s3cret-token'], 's3cret-token')).toBe(true);
    expect(adminTokenMatches('', '')).toBe(false);
  });
});
