/**
 * `connectors dev` (INTERFACE §1, §9.1): the whole service on one machine with nothing to
 * provision by hand — an embedded Postgres and a nats-server child with JetStream, both
 * keeping their data under `SERVICE_DEV_DIR` (default `.data/dev`), a master key generated
 * once and kept there (mode 0600), and a demo tenant with a demo user whose API key is
 * kept there too so every start prints a key that works. Development only: production
 * runs `serve`.
 *
 * stdout carries one line, the ready line (§9.1): `{"url", "tenant_id", "api_key",
 * "user_id", "database_url", "nats_url"}` (+ `"sandbox"`), printed once the node listens
 * and the sandbox installs exist. Logs go to stderr, so a script can read the line alone.
 *
 * The line also carries `env`: the settings an operator command needs against this dev
 * (`DATABASE_URL` as the owner, `NATS_URL`, `SERVICE_NAMESPACE`, `SERVICE_MASTER_KEY`), so
 * `tenants create` or `api-keys create` run with exactly what the line gives (issue 34).
 * `--ready-file PATH` writes the same JSON to a file that exists only while dev is ready.
 *
 * `--sandbox` also runs the service's own fakes (sandbox.ts) and installs both connectors
 * against them. Its data lives in `<SERVICE_DEV_DIR>/sandbox`, started afresh each time:
 * the fakes keep their state in memory, so yesterday's installs would point at nothing.
 *
 * Like a server (issue 34): one `dev` per data directory (dev-lock.ts: a second one refuses
 * and deletes nothing, the sandbox's included); SIGINT or SIGTERM, or the end of the npm that
 * launched it (launcher-watch.ts), stops the node and then its Postgres and nats-server, which
 * also stop by themselves if this process is killed outright (orphan-guard.ts, nats-child.ts).
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pino } from 'pino';
import { loadConfig } from '../config.js';
import { createLogger } from '../log.js';
import { startNode, type RunningNode } from '../node.js';
import { limitHeapGrowth } from '../node/heap-growth.js';
import { ensureAppRole } from '../store/app-role.js';
import { createPool, type Queryable } from '../store/db.js';
import { migrate } from '../store/migrate.js';
import { createTenant, findTenantByApiKey } from '../store/tenants.js';
import { createUser } from '../store/users.js';
import { stopSignal } from '../signals.js';
import { acquireDevLock, LOCK_FILE } from './dev-lock.js';
import { startEmbeddedPostgres } from './embedded-postgres.js';
import { watchLauncher } from './launcher-watch.js';
import { startNatsChild } from './nats-child.js';
import { prepareReadyFile, type ReadyFile } from './ready-file.js';
import { startSandbox, type Sandbox } from './sandbox.js';

interface DemoTenant {
  tenant_id: string;
  api_key: string;
  user_id?: string;
}

const DEMO_EMAIL = 'demo@example.com';

export interface DevOptions {
  sandbox?: boolean;
  /** Also write the ready line to this file (atomically), removed when the stop begins. */
  readyFile?: string;
  /** Resolves when the process should stop (default: SIGINT/SIGTERM, or npm gone). */
  until?: () => Promise<unknown>;
}

export async function runDev(env: NodeJS.ProcessEnv, opts: DevOptions = {}): Promise<void> {
  // Listen for the stop signal before starting anything (see signals.ts).
  const launcher = watchLauncher(env);
  const stopped = Promise.race([(opts.until ?? stopSignal)(), launcher.gone]);
  const home = resolve(env.SERVICE_DEV_DIR ?? '.data/dev');
  const dir = opts.sandbox ? join(home, 'sandbox') : home;
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  // Nothing is read, written or deleted in the directory before it is ours.
  const lock = await acquireDevLock(dir);
  process.once('exit', lock.release);
  let readyFile: ReadyFile | null = null;
  try {
    readyFile = opts.readyFile === undefined ? null : prepareReadyFile(opts.readyFile);
    if (opts.sandbox) emptyDir(dir, LOCK_FILE);
    await serveDev(env, dir, opts, stopped, {
      ready: (line) => readyFile?.write(line),
      stopping: () => {
        readyFile?.remove();
        lock.stopping();
      },
    });
  } finally {
    readyFile?.remove();
    launcher.stop();
    lock.release();
    process.removeListener('exit', lock.release);
  }
}

interface Milestones {
  ready(line: Record<string, unknown>): void;
  stopping(): void;
}

async function serveDev(
  env: NodeJS.ProcessEnv,
  dir: string,
  opts: DevOptions,
  stopped: Promise<unknown>,
  on: Milestones,
): Promise<void> {
  const masterKey =
    env.SERVICE_MASTER_KEY ?? readOrCreate(join(dir, 'master.key'), () => randomBytes(32).toString('base64url'));
  // Validate the caller's settings before starting anything (same refusals as `serve`).
  loadConfig({ ...env, SERVICE_MASTER_KEY: masterKey });
  const log = createLogger({ level: env.LOG_LEVEL ?? 'info', node: env.NODE_ID ?? 'dev' }, pino.destination(2));

  const sandbox: Sandbox | null = opts.sandbox ? await startSandbox() : null;
  const pg = await startEmbeddedPostgres({ dataDir: join(dir, 'pg'), log }).catch(async (err: unknown) => {
    await sandbox?.stop();
    throw err;
  });
  const nats = await startNatsChild({ storeDir: join(dir, 'nats'), log }).catch(async (err: unknown) => {
    await pg.stop();
    await sandbox?.stop();
    throw err;
  });
  const cleanup = async () => {
    await nats.stop().catch(() => undefined);
    await pg.stop().catch(() => undefined);
    await sandbox?.stop();
  };
  let node: RunningNode | null = null;
  try {
    const tenant = await demoTenant(pg.url, masterKey, join(dir, 'demo-tenant.json'));
    // Both roles, as in production: migrations as the owner, the node as the plain
    // application role that row-level security binds (README "Security model").
    const appPassword = readOrCreate(join(dir, 'app-role.password'), () => randomBytes(18).toString('base64url'));
    const appUrl = await ensureAppRole(pg.url, 'connectors_dev_app', appPassword);
    const config = loadConfig(
      {
        // INTERFACE §10.2: `dev` takes webhooks to http and local URLs (a receiver on this machine).
        SERVICE_WEBHOOKS_ALLOW_HTTP: '1',
        SERVICE_WEBHOOKS_ALLOW_PRIVATE: '1',
        ...env,
        ...sandbox?.env,
        DATABASE_URL: appUrl,
        DATABASE_MIGRATE_URL: pg.url,
        NATS_URL: nats.url,
        SERVICE_MASTER_KEY: masterKey,
        NODE_ID: env.NODE_ID ?? 'dev',
      },
      { requireDatabase: true, requireMasterKey: true },
    );
    limitHeapGrowth(config.heapGrowingPercent);
    node = await startNode(config, { roles: ['edge', 'actors'], log });
    const ready: Record<string, unknown> = {
      url: node.url,
      tenant_id: tenant.tenant_id,
      api_key: tenant.api_key,
      user_id: tenant.user_id,
      database_url: pg.url,
      nats_url: nats.url,
    };
    if (sandbox) ready.sandbox = await sandbox.install(node.url!, tenant.api_key, tenant.user_id!);
    // What operator commands need against this dev (the owner's URL: they work across tenants).
    ready.env = {
      DATABASE_URL: pg.url,
      NATS_URL: nats.url,
      SERVICE_NAMESPACE: config.namespace,
      SERVICE_MASTER_KEY: masterKey,
    };
    on.ready(ready);
    process.stdout.write(`${JSON.stringify(ready)}\n`);
    await stopped;
  } finally {
    // Also when the start failed or a signal cut it short: waiters learn we are going.
    on.stopping();
    try {
      await node?.stop();
    } finally {
      await cleanup();
    }
  }
}

/** Everything in `dir` but `keep` (the sandbox starts afresh; its lock stays in place). */
function emptyDir(dir: string, keep: string): void {
  for (const name of readdirSync(dir)) {
    if (name !== keep) rmSync(join(dir, name), { recursive: true, force: true });
  }
}

async function demoTenant(url: string, masterKey: string, file: string): Promise<Required<DemoTenant>> {
  const pool = createPool(url);
  try {
    await migrate(pool);
    let t: DemoTenant | null = null;
    if (existsSync(file)) {
      const saved = JSON.parse(readFileSync(file, 'utf8')) as DemoTenant;
      if (await findTenantByApiKey(pool, masterKey, saved.api_key)) t = saved;
    }
    t ??= await createTenant(pool, masterKey, 'demo');
    const userId = t.user_id ?? (await demoUser(pool, t.tenant_id));
    const full = { tenant_id: t.tenant_id, api_key: t.api_key, user_id: userId };
    writeFileSync(file, JSON.stringify(full), { mode: 0o600 });
    return full;
  } finally {
    await pool.end();
  }
}

/** The demo user of the demo tenant (the admin install body's `user_id`). */
async function demoUser(q: Queryable, tenantId: string): Promise<string> {
  const { rows } = await q.query<{ user_id: string }>(
    `SELECT user_id FROM users WHERE tenant_id = $1 AND lower(email) = $2`,
    [tenantId, DEMO_EMAIL],
  );
  return rows[0]?.user_id ?? (await createUser(q, tenantId, DEMO_EMAIL)).user_id;
}

function readOrCreate(file: string, make: () => string): string {
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  const v = make();
  writeFileSync(file, v, { mode: 0o600 });
  return v;
}
