import { describe, expect, it } from 'vitest';
import { apiKeyDisplayPrefix, apiKeyHasher, generateApiKey, hashApiKey } from '../../src/store/credential-cipher.js';
import { TEST_MASTER_KEY } from '../support/env.js';

describe('API key hashing', () => {
  it('is deterministic for one master key', () => {
    const key = generateApiKey();
    const h = hashApiKey(TEST_MASTER_KEY, key);
    expect(h).toHaveLength(32);
    expect(hashApiKey(TEST_MASTER_KEY, key)).toEqual(h);
    expect(apiKeyHasher(TEST_MASTER_KEY)(key)).toEqual(h);
  });

  it('differs across master keys and across keys', () => {
    const key = generateApiKey();
    expect(hashApiKey(`${TEST_MASTER_KEY}-2`, key)).not.toEqual(hashApiKey(TEST_MASTER_KEY, key));
    expect(hashApiKey(TEST_MASTER_KEY, generateApiKey())).not.toEqual(hashApiKey(TEST_MASTER_KEY, key));
  });

  it('is not a plain SHA-256 of the key', async () => {
    const { createHash } = await import('node:crypto');
    const key = generateApiKey();
    expect(hashApiKey(TEST_MASTER_KEY, key)).not.toEqual(createHash('sha256').update(key).digest());
  });
});

describe('generateApiKey', () => {
  it('has the csk_ prefix and 32 random bytes in base64url', () => {
    const key = generateApiKey();
    expect(key).toMatch(/^csk_[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(key.slice(4), 'base64url')).toHaveLength(32);
    expect(apiKeyDisplayPrefix(key)).toBe(key.slice(0, 12));
  });

  it('never repeats', () => {
    const keys = new Set(Array.from({ length: 10_000 }, generateApiKey));
    expect(keys.size).toBe(10_000);
  });
});
