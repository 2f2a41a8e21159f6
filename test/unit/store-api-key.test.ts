import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  apiKeyDisplayPrefix,
  apiKeyHashKey,
  generateApiKey,
  hashApiKey,
  legacyApiKeyHash,
} from '../../src/store/credential-cipher.js';
import { TEST_MASTER_KEY } from '../support/env.js';

describe('API key hashing', () => {
  it('is the SHA-256 of the key, whatever the master key (issue 32: rotation never re-hashes)', () => {
    const key = generateApiKey();
    expect(hashApiKey(key)).toEqual(createHash('sha256').update(key).digest());
    expect(hashApiKey(generateApiKey())).not.toEqual(hashApiKey(key));
  });

  it("finds keys hashed the old way by their master key's hash key only", () => {
    const key = generateApiKey();
    const old = legacyApiKeyHash(apiKeyHashKey(TEST_MASTER_KEY), key);
    expect(old).toHaveLength(32);
    expect(legacyApiKeyHash(apiKeyHashKey(`${TEST_MASTER_KEY}-2`), key)).not.toEqual(old);
    expect(old).not.toEqual(hashApiKey(key));
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
