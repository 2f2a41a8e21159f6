/**
 * Data keys (migration 036): the keys credentials are encrypted with and the hash keys of API
 * keys made before SHA-256, each stored wrapped by a master key, so that what a node writes
 * does not depend on which master key it runs with (issue 32 item 1). During a rolling change
 * of SERVICE_MASTER_KEY a node on K2 (K1 previous) and a node on K1 unwrap the same data key
 * (wrapped under K1) and read each other's credentials; `keys rotate` rewraps every data key
 * under K2; then K1 can go.
 *
 * A node loads them once at start (`loadKeyring`): it makes the credential key if there is
 * none yet (the first node or command of a deployment), and keeps the API-key hash key of each
 * master key it is given, so keys hashed under those stay findable once the master key is gone.
 */
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { apiKeyHashKey, keyVersionOf, LEGACY_KEY_VERSION, type MasterKeys } from './credential-cipher.js';
import type { Queryable } from './db.js';

const WRAP_INFO = 'connector-service/data-keys/v1';
const CREDENTIALS_KEY = 'credentials';
const HMAC_PREFIX = 'api-key-hmac:';

/** The master keys and what they unwrap: the credential key and the kept API-key hash keys. */
export interface Keyring extends MasterKeys {
  /** Encrypts credentials and webhook secrets (CredentialCipher's version 0). */
  dataKey?: Buffer;
  /** HMAC keys of API keys hashed before SHA-256 (api-keys.ts tries each on a lookup). */
  legacyApiKeyHashKeys?: readonly Buffer[];
}

interface Row {
  name: string;
  master_version: number;
  nonce: Buffer;
  ciphertext: Buffer;
  tag: Buffer;
}

const wrappingKey = (masterKey: string) =>
  Buffer.from(hkdfSync('sha256', Buffer.from(masterKey, 'utf8'), 'connector-service', WRAP_INFO, 32));
const aad = (name: string, version: number) => Buffer.from(JSON.stringify([WRAP_INFO, name, version]), 'utf8');

function wrap(masterKey: string, name: string, plain: Buffer): Omit<Row, 'name'> {
  const version = keyVersionOf(masterKey);
  const nonce = randomBytes(12);
  const c = createCipheriv('aes-256-gcm', wrappingKey(masterKey), nonce).setAAD(aad(name, version));
  const ciphertext = Buffer.concat([c.update(plain), c.final()]);
  return { master_version: version, nonce, ciphertext, tag: c.getAuthTag() };
}

/** The row's key, or null when no configured master key wrapped it (or it was altered). */
function unwrap(keys: MasterKeys, row: Row): Buffer | null {
  const masterKey = [keys.current, ...keys.previous].find((k) => keyVersionOf(k) === row.master_version);
  if (masterKey === undefined) return null;
  try {
    const d = createDecipheriv('aes-256-gcm', wrappingKey(masterKey), row.nonce);
    d.setAAD(aad(row.name, row.master_version)).setAuthTag(row.tag);
    return Buffer.concat([d.update(row.ciphertext), d.final()]);
  } catch {
    return null;
  }
}

async function insertIfAbsent(q: Queryable, keys: MasterKeys, name: string, plain: Buffer): Promise<void> {
  const w = wrap(keys.current, name, plain);
  await q.query(
    `INSERT INTO data_keys (name, master_version, nonce, ciphertext, tag) VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (name) DO NOTHING`,
    [name, w.master_version, w.nonce, w.ciphertext, w.tag],
  );
}

/**
 * The deployment's data keys under `keys`. Throws when the credential key exists but no
 * configured master key unwraps it (the setting that wrapped it is missing): naming what to set.
 */
export async function loadKeyring(q: Queryable, keys: MasterKeys): Promise<Keyring> {
  // Several nodes may start at once: the first insert wins and every node reads that one.
  await insertIfAbsent(q, keys, CREDENTIALS_KEY, randomBytes(32));
  // Only a master key that may have hashed API keys the old way (its fingerprint, or 1 from
  // before fingerprints) has its hash key kept.
  const { rows: legacyVersions } = await q.query<{ key_version: number }>(
    'SELECT DISTINCT key_version FROM api_keys WHERE key_version <> 0',
  );
  const hashed = new Set(legacyVersions.map((r) => r.key_version));
  for (const k of [keys.current, ...keys.previous]) {
    if (hashed.has(keyVersionOf(k)) || hashed.has(LEGACY_KEY_VERSION)) {
      await insertIfAbsent(q, keys, `${HMAC_PREFIX}${keyVersionOf(k)}`, apiKeyHashKey(k));
    }
  }
  const { rows } = await q.query<Row>('SELECT name, master_version, nonce, ciphertext, tag FROM data_keys');
  const dataKey = unwrapNamed(keys, rows, CREDENTIALS_KEY);
  if (dataKey === null) {
    throw new Error(
      'the credential data key is wrapped by a master key not configured: set it in SERVICE_MASTER_KEY_PREVIOUS',
    );
  }
  const legacy = rows.filter((r) => r.name.startsWith(HMAC_PREFIX)).map((r) => unwrap(keys, r));
  return { ...keys, dataKey, legacyApiKeyHashKeys: legacy.filter((k): k is Buffer => k !== null) };
}

function unwrapNamed(keys: MasterKeys, rows: Row[], name: string): Buffer | null {
  const row = rows.find((r) => r.name === name);
  return row ? unwrap(keys, row) : null;
}

/**
 * `keys rotate`: every data key wrapped by another master key than the current one is rewrapped
 * under it (each row guarded on its old wrapping, so two runs at once write it once). Returns
 * how many were rewrapped; a row no configured key unwraps is left and counted in `unreadable`.
 */
export async function rewrapDataKeys(
  q: Queryable,
  keys: MasterKeys,
): Promise<{ rewrapped: number; unreadable: number }> {
  const current = keyVersionOf(keys.current);
  const { rows } = await q.query<Row>(
    'SELECT name, master_version, nonce, ciphertext, tag FROM data_keys WHERE master_version <> $1',
    [current],
  );
  let rewrapped = 0;
  let unreadable = 0;
  for (const row of rows) {
    const plain = unwrap(keys, row);
    if (plain === null) {
      unreadable++;
      continue;
    }
    const w = wrap(keys.current, row.name, plain);
    const { rowCount } = await q.query(
      `UPDATE data_keys SET master_version = $2, nonce = $3, ciphertext = $4, tag = $5, rewrapped_at = now()
       WHERE name = $1 AND master_version = $6 AND nonce = $7`,
      [row.name, w.master_version, w.nonce, w.ciphertext, w.tag, row.master_version, row.nonce],
    );
    rewrapped += rowCount ?? 0;
  }
  return { rewrapped, unreadable };
}

/** Once no API key is hashed the old way, the kept hash keys are not needed: `keys rotate` drops them. */
export async function dropUnusedApiKeyHashKeys(q: Queryable): Promise<number> {
  const { rowCount } = await q.query(
    `DELETE FROM data_keys WHERE name LIKE '${HMAC_PREFIX}%'
     AND NOT EXISTS (SELECT 1 FROM api_keys WHERE key_version <> 0)`,
  );
  return rowCount ?? 0;
}
