/**
 * `connectors api-keys create|revoke` (INTERFACE §9.1). Each takes the loaded config and
 * returns the one JSON object the command prints.
 */
import type { Config } from '../config.js';
import { print, UsageError, UUID, type Command } from './command.js';
import type { CreatedApiKey } from '../store/api-keys.js';
import type { MasterKeys } from '../store/credential-cipher.js';
import type pg from 'pg';

export function masterKeysOf(config: Readonly<Config>): MasterKeys {
  if (!config.masterKey) throw new Error('SERVICE_MASTER_KEY is required');
  return { current: config.masterKey, previous: config.security.previousMasterKeys };
}

export async function withOwnerPool<T>(config: Readonly<Config>, fn: (pool: pg.Pool) => Promise<T>): Promise<T> {
  // Operator commands work across tenants: they run as the schema owner (the migration
  // role) when one is configured, and bring the schema up to date first.
  const [{ createPool }, { migrate }] = await Promise.all([import('../store/db.js'), import('../store/migrate.js')]);
  const pool = createPool(config.security.migrateDatabaseUrl ?? config.databaseUrl!, { max: 2 });
  try {
    await migrate(pool);
    return await fn(pool);
  } finally {
    await pool.end();
  }
}

export async function apiKeysCreate(config: Readonly<Config>, tenantId: string): Promise<CreatedApiKey> {
  const { createApiKey } = await import('../store/api-keys.js');
  return withOwnerPool(config, (pool) => createApiKey(pool, masterKeysOf(config), tenantId));
}

export async function apiKeysRevoke(
  config: Readonly<Config>,
  tenantId: string,
  keyId: string,
): Promise<{ key_id: string; revoked: true }> {
  const { revokeApiKey } = await import('../store/api-keys.js');
  return withOwnerPool(config, (pool) => revokeApiKey(pool, tenantId, keyId));
}

export const apiKeysCreateCommand: Command = {
  name: 'api-keys create',
  summary: 'another API key of a tenant; prints {"key_id", "api_key"} (the key is shown once)',
  options: { tenant: { type: 'string', required: true, value: 'TENANT_ID', description: 'the tenant (uuid)' } },
  async run(values, env) {
    const tenant = values.tenant as string;
    if (!UUID.test(tenant)) throw new UsageError('--tenant must be a tenant id (uuid)', apiKeysCreateCommand);
    const { loadConfig } = await import('../config.js');
    const config = loadConfig(env, { requireDatabase: true, requireMasterKey: true });
    print(await apiKeysCreate(config, tenant.toLowerCase()));
  },
};

export const apiKeysRevokeCommand: Command = {
  name: 'api-keys revoke',
  summary: 'revoke an API key; every node refuses it within 5 s; prints {"key_id", "revoked": true}',
  options: {
    tenant: { type: 'string', required: true, value: 'TENANT_ID', description: 'the tenant (uuid)' },
    'key-id': { type: 'string', required: true, value: 'KEY_ID', description: 'the key to revoke (uuid)' },
  },
  async run(values, env) {
    const tenant = values.tenant as string;
    const keyId = values['key-id'] as string;
    if (!UUID.test(tenant)) throw new UsageError('--tenant must be a tenant id (uuid)', apiKeysRevokeCommand);
    if (!UUID.test(keyId)) throw new UsageError('--key-id must be a key id (uuid)', apiKeysRevokeCommand);
    const { loadConfig } = await import('../config.js');
    const config = loadConfig(env, { requireDatabase: true, requireMasterKey: true });
    print(await apiKeysRevoke(config, tenant.toLowerCase(), keyId.toLowerCase()));
  },
};
