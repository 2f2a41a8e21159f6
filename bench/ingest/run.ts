/**
 * bench/ingest (README "Performance"): signed GitHub webhooks → edge → JetStream →
 * shard consumer → Postgres, on one node and on two, against the baseline of a minimal
 * Fastify route that verifies the signature and awaits one JetStream publish. `alone` is
 * the edge-only node with no consumer running, the apples-to-apples comparison with the
 * baseline (edge-alone.ts).
 *
 *   npm run bench -- [--duration 15] [--connections 64] [--only baseline,alone,edge1,edge2,split]
 *                    [--shards 16] [--keep-db] [--cpu-prof DIR] [--rate N] [--installs 1,32]
 *
 * `--rate N` sets the paced runs' rate (default: half of what accepting and committing
 * sustain), to compare two versions at the same load. `--cpu-prof DIR` runs every node and
 * the baseline under `node --cpu-prof`, writing `.cpuprofile` files into DIR when they stop
 * (open them in Chrome DevTools).
 *
 * Needs Postgres (BENCH_ADMIN_DATABASE_URL, default postgres://postgres@127.0.0.1:5432/postgres;
 * a fresh database is created and dropped) and nats-server with JetStream (NATS_URL, default
 * nats://127.0.0.1:4222; a fresh namespace, its streams deleted at the end). Prints the
 * figures as a table and as one JSON line.
 */
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { analyzePeriodically, createBenchDb, seedChatInstalls, seedInstalls } from './bench-db.js';
import { runDrain } from './drain.js';
import { runEdgeAlone } from './edge-alone.js';
import { describeMachine } from './machine.js';
import { shardsOwned, startBaseline, startNode, stop, waitFor, type Child } from './processes.js';
import { printFigures, type BenchFigures } from './report.js';
import { runBaseline, runEdge, type ScenarioSettings } from './scenario.js';

const { values: args } = parseArgs({
  options: {
    duration: { type: 'string', default: '20' },
    connections: { type: 'string', default: '64' },
    only: { type: 'string', default: 'baseline,alone,drain,edge1,edge2,split' },
    shards: { type: 'string', default: '16' },
    'keep-db': { type: 'boolean', default: false },
    'cpu-prof': { type: 'string' },
    rate: { type: 'string' },
    installs: { type: 'string', default: '1,32' },
    paced: { type: 'string', default: '50,90' },
    'drain-events': { type: 'string', default: '20000' },
  },
});
const nodeFlags = args['cpu-prof'] ? ['--cpu-prof', `--cpu-prof-dir=${resolve(args['cpu-prof'])}`] : [];
const durationS = Number(args.duration);
const connections = Number(args.connections);
const shards = Number(args.shards);
const only = new Set(args.only.split(','));
// The installs the load spreads over: 1 is the big tenant (every event on one install's shard).
const installCounts = args.installs.split(',').map(Number);
if (!installCounts.every((n) => Number.isInteger(n) && n >= 1 && n <= 32))
  throw new Error('--installs takes counts 1-32, e.g. 1,32');
if (
  !(durationS > 0 && durationS <= 120) ||
  !(connections > 0 && connections <= 512) ||
  !(shards >= 1 && shards <= 256)
) {
  throw new Error('--duration must be 1-120 s, --connections 1-512, --shards 1-256');
}

const adminUrl = process.env.BENCH_ADMIN_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const natsUrl = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
const runId = randomBytes(3).toString('hex');
const masterKey = randomBytes(32).toString('base64url');
const secret = randomBytes(20).toString('hex');
const installationIds = Array.from({ length: 32 }, (_, i) => 91_000_001 + i);
const pacedRate = args.rate === undefined ? undefined : Number(args.rate);
if (pacedRate !== undefined && !(pacedRate >= 1 && pacedRate <= 100_000))
  throw new Error('--rate must be 1-100000 per second');
const pacedPercents = args.paced === '' ? [] : args.paced.split(',').map(Number);
if (!pacedPercents.every((p) => p > 0 && p <= 100)) throw new Error('--paced takes percentages 1-100, e.g. 50,90');
const drainEvents = Number(args['drain-events']);
if (!(Number.isInteger(drainEvents) && drainEvents >= 1 && drainEvents <= 1_000_000))
  throw new Error('--drain-events must be 1-1000000');
const settings: ScenarioSettings = {
  pacedPercents,
  secret,
  installationIds,
  connections,
  durationS,
  drainTimeoutS: 120,
  ...(pacedRate === undefined ? {} : { pacedRate }),
};

const db = await createBenchDb(adminUrl, args['keep-db']);
const nc = await connect({ servers: natsUrl, name: 'bench-ingest' });
const namespaces: string[] = [];
const children: Child[] = [];

/** A fresh namespace (streams, buckets) for one topology, and its nodes' environment. */
function deployment(tag: string): Record<string, string> {
  const namespace = `bench_${runId}_${tag}`;
  namespaces.push(namespace);
  return nodeEnv(namespace);
}

async function node(name: string, env: Record<string, string>, roles: string): Promise<Child> {
  const n = await startNode(name, env, roles, nodeFlags);
  children.push(n);
  return n;
}

function nodeEnv(namespace: string): Record<string, string> {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return {
    DATABASE_URL: db.url,
    NATS_URL: natsUrl,
    SERVICE_NAMESPACE: namespace,
    SERVICE_MASTER_KEY: masterKey,
    SERVICE_SHARDS: String(shards),
    LOG_LEVEL: 'warn',
    // The five code-host settings (spec §8); the API and indexer URLs point at a closed
    // local port: `issues` webhooks make no upstream call, and nothing may leave the host.
    CODEHOST_CONNECTOR_ENABLED: 'true',
    CODEHOST_APP_ID: '424242',
    CODEHOST_APP_PRIVATE_KEY_PEM: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    CODEHOST_WEBHOOK_SECRET: secret,
    CODEHOST_API_URL: 'http://127.0.0.1:9',
    SERVICE_INDEXER_DAEMON_URL_TEMPLATE: 'http://127.0.0.1:9/indexer/{install}/{repo}',
  };
}

/**
 * Start one node per entry of `roles` (`edge,actors`, `edge` or `actors`), wait until the
 * edges are ready and every shard has an owner; with several actor hosts, until the shards
 * are evenly shared. Returns the nodes that serve HTTP (the load's targets) and all nodes.
 */
async function cluster(tag: string, roles: string[]): Promise<{ edges: Child[]; all: Child[] }> {
  const env = deployment(tag);
  const all: Child[] = [];
  for (const [i, r] of roles.entries()) all.push(await node(`bench-${tag}-${i + 1}`, env, r));
  const edges = all.filter((_, i) => roles[i]!.includes('edge'));
  // /readyz: NATS and Postgres reachable and every shard of the deployment owned.
  await Promise.all(edges.map((n) => waitFor(n, '/readyz', 60_000)));
  const hosts = all.filter((_, i) => roles[i] === 'edge,actors');
  const end = Date.now() + 60_000;
  while (hosts.length > 1) {
    const owned = await Promise.all(hosts.map(shardsOwned));
    const known = owned.filter((o): o is number => o !== null);
    if (
      known.length === hosts.length &&
      known.reduce((a, b) => a + b, 0) === shards &&
      Math.max(...known) - Math.min(...known) <= 1
    )
      break;
    if (Date.now() > end) throw new Error(`shards not balanced across ${hosts.length} nodes: ${owned.join(', ')}`);
    await new Promise((r) => setTimeout(r, 250));
  }
  return { edges, all };
}

async function cleanup(): Promise<void> {
  await Promise.all(children.map((c) => stop(c).catch(() => undefined)));
  const jsm = await jetstreamManager(nc);
  for await (const s of jsm.streams.list()) {
    const name = s.config.name;
    if (namespaces.some((ns) => name.startsWith(`${ns}_`) || name.startsWith(`KV_${ns}_`)))
      await jsm.streams.delete(name).catch(() => false);
  }
  await nc.close();
  await db.drop();
}

const figures: BenchFigures = {
  machine: await describeMachine(db.pool, (nc as NatsConnection).info?.version ?? 'unknown'),
  settings: { durationS, connections, shards, installs: installationIds.length },
  topologies: [],
  drains: [],
};
const stopAnalyze = analyzePeriodically(db.pool);
try {
  await seedInstalls(db.pool, masterKey, installationIds);
  if (only.has('baseline')) {
    const namespace = `bench_${runId}_base`;
    namespaces.push(namespace);
    const b = await startBaseline(
      { NATS_URL: natsUrl, SERVICE_NAMESPACE: namespace, CODEHOST_WEBHOOK_SECRET: secret },
      nodeFlags,
    );
    children.push(b);
    await waitFor(b, '/healthz', 30_000);
    figures.baseline = await runBaseline(settings, b);
    await stop(b);
  }
  if (only.has('alone')) {
    const env = deployment('alone');
    const edge = await node('bench-alone-edge', env, 'edge');
    // /readyz wants every shard owned, and no actors node runs yet: liveness is what is left.
    await waitFor(edge, '/healthz', 60_000);
    const started: Child[] = [edge];
    const startActors = async () => {
      const a = await node('bench-alone-actors', env, 'actors');
      started.push(a);
      return a;
    };
    figures.alone = await runEdgeAlone(settings, edge, startActors, db.pool, 'alone');
    await Promise.all(started.map((n) => stop(n)));
  }
  if (only.has('drain')) {
    for (const installs of installCounts) {
      const tag = `D${runId.toUpperCase()}I${installs}X`;
      const teams = await seedChatInstalls(
        db.pool,
        masterKey,
        Array.from({ length: installs }, (_, i) => `T${tag}N${i}`),
      );
      const env = deployment(`drain${installs}`);
      const run = await runDrain({
        nc,
        pool: db.pool,
        namespace: env.SERVICE_NAMESPACE!,
        masterKey,
        shards,
        installs: teams,
        events: drainEvents,
        tag,
        startActors: () => node(`bench-drain${installs}-actors`, env, 'actors'),
      });
      figures.drains.push({ installs, figures: run });
      await Promise.all(children.map((n) => stop(n)));
    }
  }
  const topologies = [
    ['edge1', '1 node', ['edge,actors']],
    ['edge2', '2 nodes', ['edge,actors', 'edge,actors']],
    // An edge-only node in front of an actors-only node (`serve --roles`, INTERFACE §1).
    ['split', 'edge|actors', ['edge', 'actors']],
  ] as const;
  for (const installs of installCounts) {
    for (const [tag, label, roles] of topologies) {
      if (!only.has(tag)) continue;
      const { edges, all } = await cluster(`${tag}i${installs}`, [...roles]);
      const s = { ...settings, installationIds: installationIds.slice(0, installs) };
      const run = await runEdge(s, edges, all, db.pool, `${tag}i${installs}`);
      figures.topologies.push({ label, installs, figures: run });
      await Promise.all(all.map((n) => stop(n)));
    }
  }
  printFigures(figures);
} finally {
  stopAnalyze();
  await cleanup();
}
