/**
 * Credential encryption and API-key hashing, both keyed from SERVICE_MASTER_KEY
 * (ARCHITECTURE "Storage"; INTERFACE §8.17: the key's UTF-8 bytes are the HKDF input).
 *
 * Credentials: AES-256-GCM with a fresh 12-byte nonce per write. The associated data
 * binds tenant id, install id and key version, so a row copied to another install or
 * tenant, or relabelled with another key version, fails authentication. Several key
 * versions may be configured at once for rotation: new writes use `current`, reads use
 * the row's version. A deployment's versions are fingerprints of its master keys
 * (`keyVersionOf`), so SERVICE_MASTER_KEY and SERVICE_MASTER_KEY_PREVIOUS need no numbering
 * (INTERFACE §9.2); version 1 is the label of rows written before fingerprints, readable
 * under whichever configured key made them.
 *
 * Since migration 036 new writes use the deployment's data key (version 0, `DATA_KEY_VERSION`;
 * data-keys.ts), wrapped by the master key, so nodes on different master keys read each
 * other's writes during a rotation; rows under a master key's version stay readable while that
 * key is configured, and `keys rotate` moves them to the data key.
 *
 * API keys: a SHA-256 of the key (they are 256-bit random), which no master key changes. Keys
 * hashed before that carry an HMAC-SHA256 under a second HKDF-derived key (a separate label);
 * those hash keys are kept as data keys until every such key has been used once.
 */
import { createCipheriv, createDecipheriv, createHash, createHmac, hkdfSync, randomBytes } from 'node:crypto';
import { ErrorCodes, Internal } from '../errors.js';

const SALT = 'connector-service';
const CREDENTIALS_INFO = 'connector-service/credentials/v1';
const API_KEYS_INFO = 'connector-service/api-keys/v1';
const KEY_ID_INFO = 'connector-service/key-id/v1';
/** The version of rows written before versions were key fingerprints. */
export const LEGACY_KEY_VERSION = 1;
/** The version of rows written under the data key (migration 036), whatever the master key. */
export const DATA_KEY_VERSION = 0;
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

/** The configured master keys (INTERFACE §9.2): new writes use `current`; `previous` stay readable. */
export interface MasterKeys {
  current: string;
  previous: readonly string[];
}

/**
 * A master key's version: 31 bits of an HKDF output under its own label, never 1 (the
 * legacy label). Stable across restarts and nodes, and reveals nothing usable of the key.
 */
export function keyVersionOf(masterKey: string): number {
  const v = deriveKey(masterKey, KEY_ID_INFO).readUInt32BE(0) & 0x7fffffff;
  return v < 2 ? v + 2 : v;
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
  #current: number;
  /** Versions whose keys may have written legacy-version rows (fromMasterKeys only). */
  #legacy: number[] = [];

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

  /** One master key (no rotation under way). */
  static fromMasterKey(masterKey: string): CredentialCipher {
    return CredentialCipher.fromMasterKeys({ current: masterKey, previous: [] });
  }

  /**
   * The deployment's keys, each under its fingerprint version. Rows of the legacy version
   * are tried under every configured key (each try is an authenticated decryption, so a
   * wrong key fails cleanly and never yields garbage).
   */
  static fromMasterKeys(keys: MasterKeys & { dataKey?: Buffer }): CredentialCipher {
    const map = new Map<number, string>();
    for (const k of [keys.current, ...keys.previous]) {
      const v = keyVersionOf(k);
      if (map.has(v) && map.get(v) !== k) throw new Error('two master keys share a version; generate another key');
      if (!map.has(v)) map.set(v, k);
    }
    const cipher = new CredentialCipher({ keys: map, current: keyVersionOf(keys.current) });
    cipher.#legacy = [...map.keys()];
    if (keys.dataKey !== undefined) {
      if (keys.dataKey.length !== 32) throw new Error('the data key must be 32 bytes');
      cipher.#keys.set(DATA_KEY_VERSION, keys.dataKey);
      cipher.#current = DATA_KEY_VERSION;
    }
    return cipher;
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
    const candidates = key
      ? [key]
      : sealed.keyVersion === LEGACY_KEY_VERSION
        ? this.#legacy.map((v) => this.#keys.get(v)!)
        : [];
    if (candidates.length === 0) {
      throw unreadable(
        `key version ${sealed.keyVersion} is not configured (set the key that wrote it in SERVICE_MASTER_KEY_PREVIOUS)`,
      );
    }
    if (sealed.nonce.length !== NONCE_BYTES || sealed.tag.length !== TAG_BYTES) {
      throw unreadable('the stored nonce or tag has the wrong length');
    }
    let last: unknown;
    for (const k of candidates) {
      try {
        const decipher = createDecipheriv('aes-256-gcm', k, sealed.nonce, { authTagLength: TAG_BYTES });
        decipher.setAAD(associatedData(binding, sealed.keyVersion));
        decipher.setAuthTag(sealed.tag);
        return Buffer.concat([decipher.update(sealed.ciphertext), decipher.final()]);
      } catch (err) {
        last = err;
      }
    }
    throw unreadable('wrong SERVICE_MASTER_KEY, or the row was altered or moved', last);
  }
}

/** The HMAC key with which a master key hashed API keys before SHA-256 (kept as a data key). */
export function apiKeyHashKey(masterKey: string): Buffer {
  return deriveKey(masterKey, API_KEYS_INFO);
}

/** The stored form of an API key: its SHA-256 (the key is 256-bit random; no master key involved). */
export function hashApiKey(rawKey: string): Buffer {
  return createHash('sha256').update(rawKey, 'utf8').digest();
}

/** The form a master key's HMAC gave an API key before SHA-256 (found, then moved to SHA-256 on use). */
export function legacyApiKeyHash(hashKey: Buffer, rawKey: string): Buffer {
  return createHmac('sha256', hashKey).update(rawKey, 'utf8').digest();
}

const API_KEY_PREFIX = 'csk_';

/** A new tenant API key: `csk_` + 32 random bytes, base64url (43 characters). */
export function generateApiKey(): string {
  return `${API_KEY_PREFIX}${randomBytes(32).toString('base64url')}`;
}

/** What operators see of a key: the prefix and 8 characters, far too few to guess the rest. */
export function apiKeyDisplayPrefix(rawKey: string): string {
  return rawKey.slice(0, API_KEY_PREFIX.length + 8);
}
