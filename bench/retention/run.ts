/**
 * bench/retention (docs/performance.md "Ingest while retention purges"): does ingest keep its
 * pace while a large purge runs (INTERFACE §10.5: deletion runs in bounded batches and never
 * blocks ingest)? One node (`serve`, edge and actors) takes signed GitHub `issues` webhooks as
 * in `npm run bench` (bench/ingest), on an install whose events table also holds `--expired`
 * events past SERVICE_EVENTS_RETENTION_DAYS (default 500 000, about 1.3 KB of payload each).
 * Each round measures a closed loop (accepted and committed events/s) and a paced run at
 * `--rate` (acknowledgement and event-to-committed latency) twice: quiet, and while the purge
 * runs; the two phases alternate their order round by round, since the machine is shared.
 *
 * The purge is the housekeeping actor's own pass (src/graph/housekeeping-pass.ts, its batch
 * size, pause and batches per pass), run from the bench process on a pool of its own, one pass
 * after another for as long as the load lasts (harsher than the service, whose passes are ten
 * minutes apart); before each load of a purging phase the backlog is topped up to `--expired`
 * rows and the purge started, so it has work from the load's first second to its last. The
 * node's own retention is set to 100 years so that its pass leaves the seeded rows to the
 * bench's.
 *
 *   npm run bench:retention -- [--expired 500000] [--rounds 3] [--duration 20] [--rate 300]
 *                              [--connections 32] [--shards 16] [--results bench/results/retention.jsonl]
 *                              [--note TEXT]
 *
 * Needs Postgres (BENCH_ADMIN_DATABASE_URL, default postgres://postgres@127.0.0.1:5432/postgres;
 * a fresh database, dropped at the end) and nats-server with JetStream (NATS_URL). Prints the
 * figures and one JSON line; `--results FILE` appends it (bench/results/retention-result.ts),
 * which `npm run docs:figures` renders. No figure is asserted.
 */
import { appendFileSync } from 'node:fs';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { createPool } from '../../src/store/db.js';
import { analyzePeriodically, createBenchDb, seedInstalls } from '../ingest/bench-db.js';
import { describeMachine } from '../ingest/machine.js';
import { startNode, stop, waitFor, type Child } from '../ingest/processes.js';
import { trafficFor } from '../ingest/route-traffic.js';
import { drain, load, WARMUP_S, type ScenarioSettings } from '../ingest/scenario.js';
import { machineOf } from '../results/ingest-result.js';
import type { RetentionResult, RetentionRow } from '../results/retention-result.js';
import { startPurge, seedExpired, expiredLeft, PURGE } from './purge.js';

const { values: a } = parseArgs({
  options: {
    expired: { type: 'string', default: '500000' },
    rounds: { type: 'string', default: '3' },
    duration: { type: 'string', default: '20' },
    rate: { type: 'string', default: '300' },
    connections: { type: 'string', default: '32' },
    shards: { type: 'string', default: '16' },
    results: { type: 'string' },
    note: { type: 'string' },
  },
});
const int = (v: string | undefined, name: string) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`--${name} takes a positive whole number, not ${v}`);
  return n;
};
const expired = int(a.expired, 'expired');
const rounds = int(a.rounds, 'rounds');
const durationS = int(a.duration, 'duration');
const rate = int(a.rate, 'rate');
const connections = int(a.connections, 'connections');
const shards = int(a.shards, 'shards');
const given = process.argv
  .slice(2)
  .filter((x, i, all) => !['--results', '--note'].includes(x) && !['--results', '--note'].includes(all[i - 1] ?? ''))
  .join(' ');
const command = given === '' ? 'npm run bench:retention' : `npm run bench:retention -- ${given}`;

const adminUrl = process.env.BENCH_ADMIN_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const natsUrl = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
const startedAt = new Date();
const runId = randomBytes(3).toString('hex');
const masterKey = randomBytes(32).toString('base64url');
const secret = randomBytes(20).toString('hex');
const installationId = 92_000_001;
const namespace = `bench_${runId}_ret`;

const db = await createBenchDb(adminUrl, false);
const purgePool = createPool(db.url, { max: 2 });
const nc = await connect({ servers: natsUrl, name: 'bench-retention' });
const stopAnalyze = analyzePeriodically(db.pool);
let node: Child | null = null;

const settings: ScenarioSettings = {
  traffic: trafficFor('github', { github: secret, slack: '' }, { github: [installationId], slack: [] }, 1),
  pacedPercents: [],
  connections,
  durationS,
  drainTimeoutS: 120,
};

/** One load of a phase: the run's figures, and what the purge deleted meanwhile. */
async function measure(tag: string, loadKind: 'saturated' | 'paced'): Promise<Omit<RetentionRow, 'round' | 'phase'>> {
  const prefix = `${tag}-`;
  const r = await load(settings, [node!.url], prefix, loadKind === 'paced' ? { rate } : {});
  const d = await drain(db.pool, settings.traffic, prefix, r.accepted, settings.drainTimeoutS);
  const spanS =
    d.stats.firstCommit && d.stats.lastCommit
      ? (d.stats.lastCommit.getTime() - d.stats.firstCommit.getTime()) / 1000
      : 0;
  const round1 = (v: number | null) => (v === null ? null : Math.round(v * 10) / 10);
  return {
    load: loadKind,
    rate: loadKind === 'paced' ? rate : null,
    accepted_per_s: round1(r.acceptedPerS),
    ack_p50_ms: round1(r.ackP50Ms),
    ack_p99_ms: round1(r.ackP99Ms),
    committed_per_s: round1(spanS > 0 ? d.stats.committed / spanS : null),
    e2c_p50_ms: round1(d.stats.e2cP50Ms),
    e2c_p99_ms: round1(d.stats.e2cP99Ms),
    purged_rows: null,
    purged_per_s: null,
    backlog_left: null,
  };
}

const rows: RetentionRow[] = [];
try {
  const [tenant] = await seedInstalls(db.pool, masterKey, [installationId]);
  const { rows: inst } = await db.pool.query<{ install_id: string }>(
    `SELECT install_id FROM installs WHERE tenant_id = $1`,
    [tenant!.tenantId],
  );
  const installId = inst[0]!.install_id;
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  node = await startNode(
    'bench-retention-1',
    {
      DATABASE_URL: db.url,
      NATS_URL: natsUrl,
      SERVICE_NAMESPACE: namespace,
      SERVICE_MASTER_KEY: masterKey,
      SERVICE_SHARDS: String(shards),
      LOG_LEVEL: 'warn',
      // The node's own housekeeping leaves the seeded rows to the bench's purge.
      SERVICE_EVENTS_RETENTION_DAYS: '36500',
      CODEHOST_CONNECTOR_ENABLED: 'true',
      CODEHOST_APP_ID: '424242',
      CODEHOST_APP_PRIVATE_KEY_PEM: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
      CODEHOST_WEBHOOK_SECRET: secret,
      CODEHOST_API_URL: 'http://127.0.0.1:9',
      SERVICE_INDEXER_DAEMON_URL_TEMPLATE: 'http://127.0.0.1:9/indexer/{install}/{repo}',
    },
    'edge,actors',
  );
  await waitFor(node, '/readyz', 60_000);
  const warm = await load(settings, [node.url], 'rw-', { durationS: WARMUP_S });
  await drain(db.pool, settings.traffic, 'rw-', warm.accepted, settings.drainTimeoutS);

  for (let round = 1; round <= rounds; round++) {
    const phases = round % 2 === 1 ? (['quiet', 'purging'] as const) : (['purging', 'quiet'] as const);
    for (const phase of phases) {
      if (phase === 'quiet') {
        for (const kind of ['saturated', 'paced'] as const)
          rows.push({ round, phase, ...(await measure(`r${round}q${kind[0]}`, kind)) });
        continue;
      }
      for (const kind of ['saturated', 'paced'] as const) {
        // Seeded before the purge starts, so the load begins with the whole backlog to purge.
        const seeded = await seedExpired(db.pool, installId, tenant!.tenantId, expired);
        process.stdout.write(`round ${round}, ${kind}: ${seeded} expired events added, ${expired} in the backlog\n`);
        const before = await expiredLeft(db.pool);
        const purge = startPurge(purgePool);
        const t0 = Date.now();
        const row = await measure(`r${round}p${kind[0]}`, kind);
        const left = await expiredLeft(db.pool);
        const s = (Date.now() - t0) / 1000;
        await purge.stop();
        // Autovacuum's part (it may be off on a bench machine): the purged rows' space, outside the measure.
        await db.pool.query('VACUUM events');
        rows.push({
          round,
          phase,
          ...row,
          purged_rows: before - left,
          purged_per_s: Math.round((before - left) / s),
          backlog_left: left,
        });
      }
    }
  }

  const machine = machineOf(await describeMachine(db.pool, nc.info?.version ?? 'unknown'));
  const result: RetentionResult = {
    bench: 'retention',
    started_at: startedAt.toISOString(),
    ended_at: new Date().toISOString(),
    machine,
    command,
    note: a.note ?? null,
    source: 'bench',
    settings: { expired, rounds, duration_s: durationS, rate, connections, shards, ...PURGE },
    rows,
  };
  const head = [
    'round',
    'phase',
    'load',
    'acc/s',
    'ack p50',
    'ack p99',
    'com/s',
    'e2c p50',
    'e2c p99',
    'purged/s',
    'left',
  ];
  process.stdout.write(`${head.join('\t')}\n`);
  for (const r of rows) {
    const cells: Array<string | number | null> = [r.round, r.phase, r.load, r.accepted_per_s, r.ack_p50_ms];
    cells.push(
      r.ack_p99_ms,
      r.committed_per_s,
      r.e2c_p50_ms,
      r.e2c_p99_ms,
      r.purged_per_s ?? '-',
      r.backlog_left ?? '-',
    );
    process.stdout.write(`${cells.join('\t')}\n`);
  }
  process.stdout.write(`${JSON.stringify(result)}\n`);
  if (a.results) {
    appendFileSync(a.results, `${JSON.stringify(result)}\n`);
    process.stdout.write(`appended this run to ${a.results}\n`);
  }
} finally {
  stopAnalyze();
  if (node) await stop(node);
  const jsm = await jetstreamManager(nc);
  for await (const s of jsm.streams.list()) {
    const name = s.config.name;
    if (name.startsWith(`${namespace}_`) || name.startsWith(`KV_${namespace}_`))
      await jsm.streams.delete(name).catch(() => false);
  }
  await nc.close();
  await purgePool.end();
  await db.drop();
}
