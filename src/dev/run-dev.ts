/**
 * `connectors dev` (INTERFACE §1): the whole service on one machine with nothing to
 * provision by hand — an embedded Postgres and a nats-server child with JetStream, both
 * keeping their data under `SERVICE_DEV_DIR` (default `.data/dev`), a master key generated
 * once and kept there (mode 0600), and a demo tenant whose API key is kept there too so
 * every start prints a key that works. Development only: production runs `serve`.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { loadConfig } from '../config.js';
import { createLogger } from '../log.js';
import { startNode } from '../node.js';
import { ensureAppRole } from '../store/app-role.js';
import { createPool } from '../store/db.js';
import { migrate } from '../store/migrate.js';
import { createTenant, findTenantByApiKey } from '../store/tenants.js';
import { startEmbeddedPostgres } from './embedded-postgres.js';
import { startNatsChild } from './nats-child.js';
import { stopSignal } from '../signals.js';

interface DemoTenant {
  tenant_id: string;
  api_key: string;
}

export async function runDev(env: NodeJS.ProcessEnv, until: () => Promise<unknown> = stopSignal): Promise<void> {
  // Listen for the stop signal before starting anything (see signals.ts).
  const stopped = until();
  const dir = resolve(env.SERVICE_DEV_DIR ?? '.data/dev');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const masterKey =
    env.SERVICE_MASTER_KEY ?? readOrCreate(join(dir, 'master.key'), () => randomBytes(32).toString('base64url'));
  // Validate the caller's settings before starting anything (same refusals as `serve`).
  loadConfig({ ...env, SERVICE_MASTER_KEY: masterKey });
  const log = createLogger({ level: env.LOG_LEVEL ?? 'info', node: env.NODE_ID ?? 'dev' });

  const pg = await startEmbeddedPostgres({ dataDir: join(dir, 'pg'), log });
  const nats = await startNatsChild({ storeDir: join(dir, 'nats'), log }).catch(async (err: unknown) => {
    await pg.stop();
    throw err;
  });
  const cleanup = async () => {
    await nats.stop().catch(() => undefined);
    await pg.stop().catch(() => undefined);
  };
  try {
    const tenant = await demoTenant(pg.url, masterKey, join(dir, 'demo-tenant.json'));
    // Both roles, as in production: migrations as the owner, the node as the plain
    // application role that row-level security binds (README "Security model").
    const appPassword = readOrCreate(join(dir, 'app-role.password'), () => randomBytes(18).toString('base64url'));
    const appUrl = await ensureAppRole(pg.url, 'connectors_dev_app', appPassword);
    const config = loadConfig(
      {
        ...env,
        DATABASE_URL: appUrl,
        DATABASE_MIGRATE_URL: pg.url,
        NATS_URL: nats.url,
        SERVICE_MASTER_KEY: masterKey,
        NODE_ID: env.NODE_ID ?? 'dev',
      },
      { requireDatabase: true, requireMasterKey: true },
    );
    const node = await startNode(config, { roles: ['edge', 'actors'], log });
    process.stdout.write(
      `${JSON.stringify({ url: node.url, tenant_id: tenant.tenant_id, api_key: tenant.api_key, data_dir: dir })}\n`,
    );
    await stopped;
    await node.stop();
  } finally {
    await cleanup();
  }
}

async function demoTenant(url: string, masterKey: string, file: string): Promise<DemoTenant> {
  const pool = createPool(url, { scope: 'system' });
  try {
    await migrate(pool);
    if (existsSync(file)) {
      const saved = JSON.parse(readFileSync(file, 'utf8')) as DemoTenant;
      if (await findTenantByApiKey(pool, masterKey, saved.api_key)) return saved;
    }
    const created = await createTenant(pool, masterKey, 'demo');
    writeFileSync(file, JSON.stringify(created), { mode: 0o600 });
    return created;
  } finally {
    await pool.end();
  }
}

function readOrCreate(file: string, make: () => string): string {
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  const v = make();
  writeFileSync(file, v, { mode: 0o600 });
  return v;
}
