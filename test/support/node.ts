/**
 * A real node in this test process: the run's Postgres database, the shared NATS with a
 * fresh SERVICE_NAMESPACE, and a free port. `stop()` stops the node and deletes every
 * stream and KV bucket of the namespace, so nothing is left on the shared server.
 */
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { pino } from 'pino';
import { loadConfig, type Config } from '../../src/config.js';
import { createLogger } from '../../src/log.js';
import { startNode, type RunningNode, type Role } from '../../src/node.js';
import { createPool } from '../../src/store/db.js';
import { createTenant } from '../../src/store/tenants.js';
import { TEST_MASTER_KEY, freshNamespace, testDatabaseUrl, testNatsUrl } from './env.js';
import type { LogCapture } from './log-capture.js';

export interface TestNode {
  node: RunningNode;
  config: Readonly<Config>;
  url: string;
  namespace: string;
  pool: ReturnType<typeof createPool>;
  /** A new tenant with its API key and ready-made auth header. */
  tenant(name?: string): Promise<{ tenant_id: string; api_key: string; auth: { authorization: string } }>;
  stop(): Promise<void>;
}

/**
 * `logs`: keep the node's log lines (info and above, or LOG_LEVEL if lower) in memory instead of printing them.
 * `resumeSweepMs`: the node's resume sweep period (src/node/resume-sweep.ts; default a minute).
 */
export async function startTestNode(
  env: Record<string, string> = {},
  roles: Role[] = ['edge', 'actors'],
  opts: { logs?: LogCapture; resumeSweepMs?: number } = {},
): Promise<TestNode> {
  const namespace = env.SERVICE_NAMESPACE ?? freshNamespace('node');
  const config = loadConfig(
    {
      DATABASE_URL: testDatabaseUrl(),
      NATS_URL: testNatsUrl(),
      SERVICE_NAMESPACE: namespace,
      SERVICE_MASTER_KEY: TEST_MASTER_KEY,
      SERVICE_SHARDS: '4',
      SERVICE_LEASE_TTL_S: '3',
      PORT: '0',
      LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
      // Tests drive bursts of hundreds of requests on purpose (rate buckets, pacing); the
      // per-tenant limit has its own test (test/edge/security-limits.test.ts).
      SERVICE_TENANT_RATE_PER_S: '100000',
      ...env,
    },
    { requireDatabase: true, requireMasterKey: true },
  );
  // The service's own root logger (src/log.ts: redaction, level names, request ids).
  const log = opts.logs
    ? createLogger(
        {
          level: pino.levels.values[config.logLevel]! < pino.levels.values.info! ? config.logLevel : 'info',
          node: config.nodeId,
        },
        opts.logs.stream,
      )
    : createLogger({ level: config.logLevel, node: config.nodeId });
  const node = await startNode(config, {
    roles,
    log,
    ...(opts.resumeSweepMs === undefined ? {} : { resumeSweepMs: opts.resumeSweepMs }),
  });
  const pool = createPool(testDatabaseUrl(), { max: 4 });
  return {
    node,
    config,
    url: node.url ?? '',
    namespace,
    pool,
    async tenant(name = 'acme') {
      const t = await createTenant(pool, TEST_MASTER_KEY, name);
      return { ...t, auth: { authorization: `Bearer ${t.api_key}` } };
    },
    async stop() {
      await node.stop();
      await pool.end();
      await cleanNamespace(namespace);
    },
  };
}

/** Deletes every stream (KV buckets are streams named KV_<bucket>) of a namespace. */
export async function cleanNamespace(namespace: string): Promise<void> {
  const nc = await connect({ servers: testNatsUrl() });
  try {
    const jsm = await jetstreamManager(nc);
    for await (const s of jsm.streams.list()) {
      const name = s.config.name;
      if (name.startsWith(`${namespace}_`) || name.startsWith(`KV_${namespace}_`)) await jsm.streams.delete(name);
    }
  } finally {
    await nc.close();
  }
}
