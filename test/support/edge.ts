/**
 * Builds a real edge on the run's test database with an in-memory actor port. Its tenant
 * routes run as a node's do: on the tenant login, through the fenced pool (migration 030),
 * so a route that forgot its tenant filter, or a tenant route that lost its scope, fails here too.
 */
import { pino } from 'pino';
import type { FastifyInstance } from 'fastify';
import { loadConfig } from '../../src/config.js';
import { buildEdge } from '../../src/edge/app.js';
import { type EdgeDeps } from '../../src/edge/context.js';
import { type ActorAsk } from '../../src/runtime/ports.js';
import { createEdgeMetrics, createMetricsRegistry } from '../../src/edge/metrics.js';
import type { ActorKey } from '../../src/runtime/names.js';
import { createPool } from '../../src/store/db.js';
import { tenantRoleUrl } from '../../src/store/tenant-role.js';
import { readTenantFenceKey, tenantScopedPool } from '../../src/store/tenant-scope.js';
import { createInstall, type Install } from '../../src/store/installs.js';
import { createApiKey, type ApiKeyOptions } from '../../src/store/api-keys.js';
import { createTenant, findTenantByApiKey } from '../../src/store/tenants.js';
import { TEST_MASTER_KEY, testAppDatabaseUrl, testDatabaseUrl } from './env.js';

export interface Asked {
  key: ActorKey;
  msg: { type: string } & Record<string, unknown>;
}

export async function edgeFixture(
  answer: (a: Asked) => unknown = () => ({ ok: true }),
  plugins?: EdgeDeps['plugins'],
  env: Record<string, string> = {},
  log: EdgeDeps['log'] = pino({ level: 'silent' }),
) {
  const pool = createPool(testDatabaseUrl());
  const tenantDb = tenantScopedPool(
    createPool(tenantRoleUrl(testAppDatabaseUrl()), { max: 5 }),
    await readTenantFenceKey(pool),
  );
  const asked: Asked[] = [];
  const actors: ActorAsk = {
    async ask<T>(key: ActorKey, msg: { type: string } & Record<string, unknown>) {
      asked.push({ key, msg });
      return (await answer({ key, msg })) as T;
    },
  };
  const config = loadConfig({ SERVICE_MASTER_KEY: TEST_MASTER_KEY, SERVICE_TENANT_RATE_PER_S: '100000', ...env });
  let ready = true;
  const app: FastifyInstance = await buildEdge({
    config,
    log,
    db: pool,
    tenantDb,
    actors,
    resolveTenant: (raw) => findTenantByApiKey(pool, TEST_MASTER_KEY, raw),
    ready: async () => ({ ready, checks: { nats: ready, postgres: true, shards: ready } }),
    metrics: createEdgeMetrics(createMetricsRegistry()),
    plugins,
  });
  const tenant = async (name = 'acme') => {
    const t = await createTenant(pool, TEST_MASTER_KEY, name);
    return { ...t, auth: { authorization: `Bearer ${t.api_key}` } };
  };
  /** Another key of `tenantId` with these scopes, label or expiry (INTERFACE §10.4). */
  const key = async (tenantId: string, opts: ApiKeyOptions = {}) => {
    const k = await createApiKey(pool, TEST_MASTER_KEY, tenantId, opts);
    return { ...k, auth: { authorization: `Bearer ${k.api_key}` } };
  };
  const install = (
    tenantId: string,
    connectorId: 'chatapp' | 'codehost' = 'chatapp',
    externalId = `T${Math.random().toString(36).slice(2, 10)}`,
  ): Promise<Install> => createInstall(pool, { tenantId, connectorId, externalId, displayName: 'Acme workspace' });
  return {
    app,
    pool,
    asked,
    tenant,
    key,
    install,
    setReady: (v: boolean) => (ready = v),
    close: async () => {
      await app.close();
      await tenantDb.end();
      await pool.end();
    },
  };
}
