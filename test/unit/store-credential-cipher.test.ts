import { describe, expect, it } from 'vitest';
import { CredentialCipher, keyVersionOf, type SealedCredential } from '../../src/store/credential-cipher.js';
import { TEST_MASTER_KEY } from '../support/env.js';

const A = { tenantId: '11111111-1111-4111-8111-111111111111', installId: '22222222-2222-4222-8222-222222222222' };
const OTHER_INSTALL = { ...A, installId: '33333333-3333-4333-8333-333333333333' };
const OTHER_TENANT = { ...A, tenantId: '44444444-4444-4444-8444-444444444444' };
const SECRET = '{"bot_token":"xoxb-very-secret"}';

const cipher = CredentialCipher.fromMasterKey(TEST_MASTER_KEY);

function flipped(buf: Buffer, at = 0): Buffer {
  const copy = Buffer.from(buf);
  copy[at] = copy[at]! ^ 0x01;
  return copy;
}

function expectUnreadable(fn: () => unknown): void {
  let caught: unknown;
  try {
    fn();
  } catch (err) {
    caught = err;
  }
  expect(caught).toMatchObject({ code: 'credentials_unreadable' });
  // The message tells the operator what to check and never carries the secret.
  expect(String((caught as Error).message)).not.toContain('xoxb');
}

describe('CredentialCipher', () => {
  it('round-trips strings and buffers', () => {
    const sealed = cipher.encrypt(SECRET, A);
    expect(sealed.keyVersion).toBe(keyVersionOf(TEST_MASTER_KEY));
    expect(sealed.nonce).toHaveLength(12);
    expect(sealed.tag).toHaveLength(16);
    expect(sealed.ciphertext.toString('utf8')).not.toContain('xoxb');
    expect(cipher.decrypt(sealed, A).toString('utf8')).toBe(SECRET);
    const bin = Buffer.from([0, 1, 2, 255]);
    expect(cipher.decrypt(cipher.encrypt(bin, A), A)).toEqual(bin);
  });

  it('decrypts with another instance built from the same master key', () => {
    const sealed = cipher.encrypt(SECRET, A);
    expect(CredentialCipher.fromMasterKey(TEST_MASTER_KEY).decrypt(sealed, A).toString()).toBe(SECRET);
  });

  it('refuses a tampered ciphertext, tag or nonce', () => {
    const sealed = cipher.encrypt(SECRET, A);
    expectUnreadable(() => cipher.decrypt({ ...sealed, ciphertext: flipped(sealed.ciphertext, 5) }, A));
    expectUnreadable(() => cipher.decrypt({ ...sealed, tag: flipped(sealed.tag) }, A));
    expectUnreadable(() => cipher.decrypt({ ...sealed, nonce: flipped(sealed.nonce) }, A));
    expectUnreadable(() => cipher.decrypt({ ...sealed, tag: sealed.tag.subarray(0, 8) }, A));
  });

  it('refuses a row transplanted to another install or tenant', () => {
    const sealed = cipher.encrypt(SECRET, A);
    expectUnreadable(() => cipher.decrypt(sealed, OTHER_INSTALL));
    expectUnreadable(() => cipher.decrypt(sealed, OTHER_TENANT));
  });

  it('refuses the wrong master key', () => {
    const sealed = cipher.encrypt(SECRET, A);
    const other = CredentialCipher.fromMasterKey(`${TEST_MASTER_KEY}-other`);
    expectUnreadable(() => other.decrypt(sealed, A));
  });

  it('refuses an unknown or relabelled key version', () => {
    const rotating = new CredentialCipher({
      keys: new Map([
        [1, TEST_MASTER_KEY],
        [2, `${TEST_MASTER_KEY}-v2`],
      ]),
      current: 2,
    });
    const v2 = rotating.encrypt(SECRET, A);
    expect(v2.keyVersion).toBe(2);
    expect(rotating.decrypt(v2, A).toString()).toBe(SECRET);
    // Old rows (version 1) still read after rotation.
    const v1 = new CredentialCipher({ keys: new Map([[1, TEST_MASTER_KEY]]), current: 1 });
    expect(rotating.decrypt(v1.encrypt(SECRET, A), A).toString()).toBe(SECRET);
    // Version 2 unknown to the single-key cipher; relabelling a row's version fails too.
    expectUnreadable(() => cipher.decrypt(v2, A));
    const relabelled: SealedCredential = { ...v2, keyVersion: 1 };
    expectUnreadable(() => rotating.decrypt(relabelled, A));
  });

  it('reads rows of a previous master key and of the legacy version during a rotation (INTERFACE §9.2)', () => {
    const K2 = `${TEST_MASTER_KEY}-second`;
    const legacy = new CredentialCipher({ keys: new Map([[1, TEST_MASTER_KEY]]), current: 1 }).encrypt(SECRET, A);
    const underK1 = cipher.encrypt(SECRET, A);
    const rotating = CredentialCipher.fromMasterKeys({ current: K2, previous: [TEST_MASTER_KEY] });
    expect(rotating.currentVersion).toBe(keyVersionOf(K2));
    expect(rotating.currentVersion).not.toBe(keyVersionOf(TEST_MASTER_KEY));
    expect(rotating.decrypt(legacy, A).toString()).toBe(SECRET);
    expect(rotating.decrypt(underK1, A).toString()).toBe(SECRET);
    const underK2 = rotating.encrypt(SECRET, A);
    expect(underK2.keyVersion).toBe(keyVersionOf(K2));
    // K1 removed: what it wrote is unreadable, what K2 wrote still reads.
    const after = CredentialCipher.fromMasterKey(K2);
    expectUnreadable(() => after.decrypt(underK1, A));
    expectUnreadable(() => after.decrypt(legacy, A));
    expect(after.decrypt(underK2, A).toString()).toBe(SECRET);
    // The legacy fallback still authenticates the binding.
    expectUnreadable(() => rotating.decrypt(legacy, OTHER_TENANT));
  });

  it('refuses a short master key and a current version without a key', () => {
    expect(() => CredentialCipher.fromMasterKey('short')).toThrow(/32 bytes/);
    expect(() => new CredentialCipher({ keys: new Map([[1, TEST_MASTER_KEY]]), current: 2 })).toThrow();
  });

  it('uses a fresh nonce for each of 100 000 encryptions', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 100_000; i++) seen.add(cipher.encrypt('x', A).nonce.toString('base64'));
    expect(seen.size).toBe(100_000);
  });

  it('shows no key material when inspected or serialised', () => {
    expect(JSON.stringify(cipher)).toBe('{}');
    expect(Object.keys(cipher)).toEqual([]);
  });
});
