/**
 * Credential encryption and API-key hashing, both keyed from SERVICE_MASTER_KEY
 * (ARCHITECTURE "Storage"; INTERFACE §8.17: the key's UTF-8 bytes are the HKDF input).
 *
 * Credentials: AES-256-GCM with a fresh 12-byte nonce per write. The associated data
 * binds tenant id, install id and key version, so a row copied to another install or
 * tenant, or relabelled with another key version, fails authentication. Several key
 * versions may be configured at once for rotation: new writes use `current`, reads use
 * the row's version.
 *
 * API keys: HMAC-SHA256 under a second HKDF-derived key (a separate label), so the stored
 * hash is useless without the master key and the two uses never share key material.
 */
import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes } from 'node:crypto';
import { ErrorCodes, Internal } from '../errors.js';

const SALT = 'connector-service';
const CREDENTIALS_INFO = 'connector-service/credentials/v1';
const API_KEYS_INFO = 'connector-service/api-keys/v1';
const NONCE_BYTES = 12;
const TAG_BYTES = 16;

/** A credential as stored: every field is needed to decrypt it. */
export interface SealedCredential {
  keyVersion: number;
  nonce: Buffer;
  ciphertext: Buffer;
  tag: Buffer;
}

/** Who a credential belongs to; part of the associated data. */
export interface CredentialBinding {
  tenantId: string;
  installId: string;
}

export interface CredentialCipherOptions {
  /** Key version → master key string. */
  keys: Map<number, string>;
  /** The version new writes use. */
  current: number;
}

function deriveKey(masterKey: string, info: string): Buffer {
  const ikm = Buffer.from(masterKey, 'utf8');
  if (ikm.length < 32) throw new Error('master key must be at least 32 bytes (INTERFACE §8.17)');
  return Buffer.from(hkdfSync('sha256', ikm, SALT, info, 32));
}

function associatedData(binding: CredentialBinding, keyVersion: number): Buffer {
  // JSON of a fixed-shape array: unambiguous however the ids are spelled. Ids are
  // lower-cased so the same uuid written in either case binds the same.
  return Buffer.from(
    JSON.stringify([CREDENTIALS_INFO, binding.tenantId.toLowerCase(), binding.installId.toLowerCase(), keyVersion]),
    'utf8',
  );
}

/** Thrown on any failure to decrypt; says what to check, never what the secret is. */
function unreadable(reason: string, cause?: unknown): Internal {
  return new Internal(`stored credentials cannot be decrypted: ${reason}`, {
    code: ErrorCodes.credentialsUnreadable,
    cause,
  });
}

export class CredentialCipher {
  // Private fields: a logged or inspected cipher shows no key material.
  readonly #keys: Map<number, Buffer>;
  readonly #current: number;

  constructor(opts: CredentialCipherOptions) {
    if (!opts.keys.has(opts.current)) throw new Error(`current key version ${opts.current} has no key`);
    this.#keys = new Map();
    for (const [version, masterKey] of opts.keys) {
      if (!Number.isInteger(version) || version < 1 || version > 0x7fffffff) {
        throw new Error(`key version ${version} must be a positive 32-bit integer`);
      }
      this.#keys.set(version, deriveKey(masterKey, CREDENTIALS_INFO));
    }
    this.#current = opts.current;
  }

  /** The usual deployment: one master key, version 1. */
  static fromMasterKey(masterKey: string): CredentialCipher {
    return new CredentialCipher({ keys: new Map([[1, masterKey]]), current: 1 });
  }

  get currentVersion(): number {
    return this.#current;
  }

  encrypt(plaintext: Buffer | string, binding: CredentialBinding): SealedCredential {
    const keyVersion = this.#current;
    const nonce = randomBytes(NONCE_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.#keys.get(keyVersion)!, nonce, { authTagLength: TAG_BYTES });
    cipher.setAAD(associatedData(binding, keyVersion));
    const data = typeof plaintext === 'string' ? Buffer.from(plaintext, 'utf8') : plaintext;
    const ciphertext = Buffer.concat([cipher.update(data), cipher.final()]);
    return { keyVersion, nonce, ciphertext, tag: cipher.getAuthTag() };
  }

  decrypt(sealed: SealedCredential, binding: CredentialBinding): Buffer {
    const key = this.#keys.get(sealed.keyVersion);
    if (!key) throw unreadable(`key version ${sealed.keyVersion} is not configured`);
    if (sealed.nonce.length !== NONCE_BYTES || sealed.tag.length !== TAG_BYTES) {
      throw unreadable('the stored nonce or tag has the wrong length');
    }
    try {
      const decipher = createDecipheriv('aes-256-gcm', key, sealed.nonce, { authTagLength: TAG_BYTES });
      decipher.setAAD(associatedData(binding, sealed.keyVersion));
      decipher.setAuthTag(sealed.tag);
      return Buffer.concat([decipher.update(sealed.ciphertext), decipher.final()]);
    } catch (err) {
      throw unreadable('wrong SERVICE_MASTER_KEY, or the row was altered or moved', err);
    }
  }
}

/** A hasher bound to one master key (derives the HMAC key once). */
export function apiKeyHasher(masterKey: string): (rawKey: string) => Buffer {
  const key = deriveKey(masterKey, API_KEYS_INFO);
  return (rawKey) => createHmac('sha256', key).update(rawKey, 'utf8').digest();
}

/** The stored form of an API key: HMAC-SHA256 under a key derived from the master key. */
export function hashApiKey(masterKey: string, rawKey: string): Buffer {
  return apiKeyHasher(masterKey)(rawKey);
}

export const API_KEY_PREFIX = 'csk_';

/** A new tenant API key: `csk_` + 32 random bytes, base64url (43 characters). */
export function generateApiKey(): string {
  return `${API_KEY_PREFIX}${randomBytes(32).toString('base64url')}`;
}

/** What operators see of a key: the prefix and 8 characters, far too few to guess the rest. */
export function apiKeyDisplayPrefix(rawKey: string): string {
  return rawKey.slice(0, API_KEY_PREFIX.length + 8);
}
