/**
 * The code-host module's routes on a real edge (buildEdge + inject) and the run's real
 * Postgres, with in-memory ports for what the routes hand to the runtime (publish, actor
 * asks, KV): for route-level tests that need no NATS, e.g. every admin-install gate under
 * each configuration. Upstream is the fake GitHub, spoken to by the real Octokit.
 */
import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { loadConfig, type Config } from '../../src/config.js';
import { Unavailable } from '../../src/errors.js';
import { codehostModule } from '../../src/wiring/codehost.js';
import type { ModuleDeps } from '../../src/wiring/module.js';
import { type ActorAsk, type IngestEvent, type KvPort } from '../../src/runtime/ports.js';
import { buildEdge } from '../../src/edge/app.js';
import { createEdgeMetrics, createMetricsRegistry } from '../../src/edge/metrics.js';
import { shardOf, type ActorKey } from '../../src/runtime/names.js';
import { CredentialCipher } from '../../src/store/credential-cipher.js';
import { createPool } from '../../src/store/db.js';
import { findTenantByApiKey } from '../../src/store/tenants.js';
import { TEST_MASTER_KEY, testDatabaseUrl } from './env.js';

/** A KV port in memory, with the CAS semantics of the real one. */
export function memoryKv(): KvPort & { entries: Map<string, { value: Uint8Array; revision: number }> } {
  const entries = new Map<string, { value: Uint8Array; revision: number }>();
  let rev = 0;
  return {
    entries,
    get: async (k) => entries.get(k) ?? null,
    async create(k, value) {
      if (entries.has(k)) return null;
      entries.set(k, { value, revision: ++rev });
      return rev;
    },
    async update(k, value, revision) {
      if (entries.get(k)?.revision !== revision) return null;
      entries.set(k, { value, revision: ++rev });
      return rev;
    },
    async put(k, value) {
      entries.set(k, { value, revision: ++rev });
      return rev;
    },
    async delete(k) {
      entries.delete(k);
    },
  };
}

export interface CodehostEdge {
  app: FastifyInstance;
  config: Readonly<Config>;
  pool: ReturnType<typeof createPool>;
  published: IngestEvent[];
  /** While set, a publish of an event for these installs fails as the real publisher does (no stream ack). */
  failPublishFor: Set<string>;
  /** While set, runs before each publish is acknowledged (what other paths do meanwhile). */
  beforePublish: ((event: IngestEvent) => Promise<void>) | null;
  asked: Array<{ key: ActorKey; msg: { type: string } & Record<string, unknown> }>;
  close(): Promise<void>;
}

export async function codehostEdge(env: Record<string, string>): Promise<CodehostEdge> {
  const config = loadConfig({ SERVICE_MASTER_KEY: TEST_MASTER_KEY, SERVICE_TENANT_RATE_PER_S: '100000', ...env });
  const pool = createPool(testDatabaseUrl(), { max: 4 });
  const log = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });
  const published: IngestEvent[] = [];
  const failPublishFor = new Set<string>();
  const asked: CodehostEdge['asked'] = [];
  const hooks: Pick<CodehostEdge, 'beforePublish'> = { beforePublish: null };
  const actors: ActorAsk = {
    async ask<T>(key: ActorKey, msg: { type: string } & Record<string, unknown>) {
      asked.push({ key, msg });
      return { ok: true } as T;
    },
  };
  const deps: ModuleDeps = {
    config,
    log,
    pool,
    requestPool: pool,
    cipher: CredentialCipher.fromMasterKey(TEST_MASTER_KEY),
    actors,
    publish: async (event) => {
      await hooks.beforePublish?.(event);
      if (failPublishFor.has(event.installId)) throw new Unavailable('the ingest stream did not acknowledge the event');
      published.push(event);
      return { duplicate: false };
    },
    cursors: memoryKv(),
    dedup: memoryKv(),
    shardOf: (key) => shardOf(key, 4),
  };
  const module = codehostModule(deps);
  const app = await buildEdge({
    config,
    log,
    db: pool,
    actors,
    resolveTenant: (raw) => findTenantByApiKey(pool, TEST_MASTER_KEY, raw),
    ready: async () => ({ ready: true, checks: {} }),
    metrics: createEdgeMetrics(createMetricsRegistry()),
    plugins: module.routes ? [{ plugin: module.routes }] : [],
  });
  return {
    app,
    config,
    pool,
    published,
    failPublishFor,
    get beforePublish() {
      return hooks.beforePublish;
    },
    set beforePublish(f) {
      hooks.beforePublish = f;
    },
    asked,
    async close() {
      await app.close();
      await pool.end();
    },
  };
}
