/**
 * `connectors api-keys create|list|revoke` (INTERFACE §9.1, §10.4). Each takes the loaded
 * config and returns what the command prints.
 */
import { randomUUID } from 'node:crypto';
import { API_SCOPES, isApiScope, type ApiScope } from '../api-scopes.js';
import type { Config } from '../config.js';
import { print, UsageError, UUID, type Command } from './command.js';
import type { ApiKeyListing, ApiKeyOptions, CreatedApiKey } from '../store/api-keys.js';
import type { MasterKeys } from '../store/credential-cipher.js';
import type pg from 'pg';
import type { Queryable } from '../store/db.js';

type Values = Record<string, string | boolean | undefined>;

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

/**
 * INTERFACE §10.5: an operator's key change is audited in the transaction that makes it; no
 * API key did it (`key_id` null), and the command's run is its request (`cli-<uuid>`).
 */
async function audited<T>(
  pool: pg.Pool,
  tenantId: string,
  action: 'api_key_create' | 'api_key_revoke',
  change: (tx: Queryable) => Promise<T & { key_id: string }>,
): Promise<T & { key_id: string }> {
  const [{ withTx }, { recordAuditOk }] = await Promise.all([
    import('../store/db.js'),
    import('../store/audit-log.js'),
  ]);
  return withTx(pool, async (tx) => {
    const done = await change(tx);
    const stamp = { action, keyId: null, requestId: `cli-${randomUUID()}`, target: `api-key/${done.key_id}` };
    await recordAuditOk(tx, tenantId, stamp);
    return done;
  });
}

async function apiKeysCreate(
  config: Readonly<Config>,
  tenantId: string,
  opts: ApiKeyOptions = {},
): Promise<CreatedApiKey> {
  const { createApiKey } = await import('../store/api-keys.js');
  return withOwnerPool(config, (pool) =>
    audited(pool, tenantId, 'api_key_create', (tx) => createApiKey(tx, masterKeysOf(config), tenantId, opts)),
  );
}

async function apiKeysList(config: Readonly<Config>, tenantId: string): Promise<ApiKeyListing[]> {
  const { listApiKeys } = await import('../store/api-keys.js');
  return withOwnerPool(config, (pool) => listApiKeys(pool, tenantId));
}

async function apiKeysRevoke(
  config: Readonly<Config>,
  tenantId: string,
  keyId: string,
): Promise<{ key_id: string; revoked: true }> {
  const { revokeApiKey } = await import('../store/api-keys.js');
  return withOwnerPool(config, (pool) =>
    audited(pool, tenantId, 'api_key_revoke', (tx) => revokeApiKey(tx, tenantId, keyId)),
  );
}

const tenantOf = (values: Values, command: Command): string => {
  const tenant = values.tenant as string;
  if (!UUID.test(tenant)) throw new UsageError('--tenant must be a tenant id (uuid)', command);
  return tenant.toLowerCase();
};

/** `--scopes a,b`, `--expires-in DAYS`, `--label L` as the store takes them; a bad one is a usage error. */
function keyOptions(values: Values, command: Command): ApiKeyOptions {
  const opts: ApiKeyOptions = {};
  if (typeof values.scopes === 'string') {
    const named = values.scopes.split(',').map((s) => s.trim());
    const unknown = named.filter((s) => !isApiScope(s));
    if (unknown.length > 0) {
      throw new UsageError(`--scopes: unknown scope ${unknown.join(',')}; known: ${API_SCOPES.join(',')}`, command);
    }
    opts.scopes = [...new Set(named as ApiScope[])];
  }
  if (typeof values['expires-in'] === 'string') {
    const days = Number(values['expires-in']);
    if (!/^\d+(\.\d+)?$/.test(values['expires-in']) || !(days > 0 && days <= 36_500)) {
      throw new UsageError('--expires-in must be a number of days above 0, at most 36500', command);
    }
    opts.expiresInDays = days;
  }
  if (typeof values.label === 'string') {
    if (values.label.trim().length === 0 || values.label.length > 200) {
      throw new UsageError('--label must be 1-200 characters', command);
    }
    opts.label = values.label;
  }
  return opts;
}

export const apiKeysCreateCommand: Command = {
  name: 'api-keys create',
  summary: 'another API key of a tenant; prints {"key_id", "api_key"} (the key is shown once)',
  options: {
    tenant: { type: 'string', required: true, value: 'TENANT_ID', description: 'the tenant (uuid)' },
    scopes: {
      type: 'string',
      value: 'SCOPES',
      description: `what the key may do, comma-separated (default: all of ${API_SCOPES.join(',')})`,
    },
    'expires-in': { type: 'string', value: 'DAYS', description: 'the key answers 401 after this many days' },
    label: { type: 'string', value: 'LABEL', description: 'a name for the key, shown by api-keys list' },
  },
  async run(values, env) {
    const tenant = tenantOf(values, apiKeysCreateCommand);
    const opts = keyOptions(values, apiKeysCreateCommand);
    const { loadConfig } = await import('../config.js');
    const config = loadConfig(env, { requireDatabase: true, requireMasterKey: true });
    print(await apiKeysCreate(config, tenant, opts));
  },
};

export const apiKeysListCommand: Command = {
  name: 'api-keys list',
  summary:
    'a tenant\'s keys, one JSON line each: {"key_id", "label", "scopes", "created_at", "expires_at", ' +
    '"last_used_at", "revoked"} (never the key)',
  options: { tenant: { type: 'string', required: true, value: 'TENANT_ID', description: 'the tenant (uuid)' } },
  async run(values, env) {
    const tenant = tenantOf(values, apiKeysListCommand);
    const { loadConfig } = await import('../config.js');
    const config = loadConfig(env, { requireDatabase: true });
    for (const key of await apiKeysList(config, tenant)) print(key);
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
    const tenant = tenantOf(values, apiKeysRevokeCommand);
    const keyId = values['key-id'] as string;
    if (!UUID.test(keyId)) throw new UsageError('--key-id must be a key id (uuid)', apiKeysRevokeCommand);
    const { loadConfig } = await import('../config.js');
    const config = loadConfig(env, { requireDatabase: true, requireMasterKey: true });
    print(await apiKeysRevoke(config, tenant, keyId.toLowerCase()));
  },
};
