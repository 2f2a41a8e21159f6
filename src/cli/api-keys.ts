/**
 * `connectors api-keys create|revoke` (INTERFACE §9.1). Each takes the loaded config and
 * returns the one JSON object the command prints.
 */
import type { Config } from '../config.js';
import { createApiKey, revokeApiKey, type CreatedApiKey } from '../store/api-keys.js';
import type { MasterKeys } from '../store/credential-cipher.js';
import { createPool } from '../store/db.js';
import { migrate } from '../store/migrate.js';
import type pg from 'pg';

export function masterKeysOf(config: Readonly<Config>): MasterKeys {
  if (!config.masterKey) throw new Error('SERVICE_MASTER_KEY is required');
  return { current: config.masterKey, previous: config.security.previousMasterKeys };
}

export async function withOwnerPool<T>(config: Readonly<Config>, fn: (pool: pg.Pool) => Promise<T>): Promise<T> {
  // Operator commands work across tenants: they run as the schema owner (the migration
  // role) when one is configured, and bring the schema up to date first.
  const pool = createPool(config.security.migrateDatabaseUrl ?? config.databaseUrl!, { max: 2, scope: 'system' });
  try {
    await migrate(pool);
    return await fn(pool);
  } finally {
    await pool.end();
  }
}

export function apiKeysCreate(config: Readonly<Config>, tenantId: string): Promise<CreatedApiKey> {
  return withOwnerPool(config, (pool) => createApiKey(pool, masterKeysOf(config), tenantId));
}

export function apiKeysRevoke(
  config: Readonly<Config>,
  tenantId: string,
  keyId: string,
): Promise<{ key_id: string; revoked: true }> {
  return withOwnerPool(config, (pool) => revokeApiKey(pool, tenantId, keyId));
}
