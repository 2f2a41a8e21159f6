/**
 * bench/ingest (docs/performance.md): signed webhooks → edge → JetStream → shard
 * consumer → Postgres, on one node and on two, against the baseline of a minimal Fastify
 * route that verifies the signature and awaits one JetStream publish. Every topology that
 * takes webhooks runs once per route (`--route`, route-traffic.ts): GitHub `issues`
 * deliveries and Slack `event_callback` messages. `alone` is the edge-only node with no
 * consumer running, the apples-to-apples comparison with the baseline (edge-alone.ts).
 *
 *   npm run bench -- [--duration 20] [--connections 64] [--only baseline,alone,drain,edge1,edge2,split]
 *                    [--route github,slack] [--installs 1,32] [--paced 50,90] [--rate N]
 *                    [--drain-events 20000] [--shards 16] [--keep-db] [--cpu-prof DIR]
 *                    [--node-flags=--max-semi-space-size=8] [--max-in-flight N] [--max-in-flight-bytes N]
 *                    [--drain-text CHARS] [--drain-stall SECONDS [--drain-cut]] [--tracing none|otlp]
 *                    [--results bench/results/ingest.jsonl [--session NAME] [--note TEXT]]
 *
 * `--rate N` sets the paced runs' rate (default: half of what accepting and committing
 * sustain), to compare two versions at the same load. `--cpu-prof DIR` runs every node and
 * the baseline under `node --cpu-prof`, writing `.cpuprofile` files into DIR when they stop
 * (open them in Chrome DevTools). `--drain-stall S` puts a pausable proxy between the drain's
 * node and Postgres and stops it answering for S seconds once a fifth of the backlog is
 * committed (no reset, no error: a stalled database; with `--drain-cut`, every connection reset
 * and new ones refused instead: a restart or failover), then reports how the rest was committed.
 * `--tracing otlp` has every node trace (INTERFACE §10.7) and export its spans over OTLP/HTTP
 * to a receiver in the bench process (otlp-receiver.ts); the default `none` is the service's.
 *
 * Needs Postgres (BENCH_ADMIN_DATABASE_URL, default postgres://postgres@127.0.0.1:5432/postgres;
 * a fresh database is created and dropped) and nats-server with JetStream (NATS_URL, default
 * nats://127.0.0.1:4222; a fresh namespace, its streams deleted at the end). Prints the
 * figures as a table and as one JSON line; `--results FILE` also appends the run's line
 * (bench/results/ingest-result.ts) to FILE, grouped with the other runs of its `--session`
 * (default: the UTC date it started), which `npm run docs:figures` renders into
 * docs/performance.md. `BENCH_MACHINE` names the machine there (default: CPUs and model).
 */
import { appendFileSync } from 'node:fs';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { readBenchArgs } from './bench-args.js';
import { analyzePeriodically, createBenchDb, seedChatInstalls, seedInstalls } from './bench-db.js';
import { runDrain } from './drain.js';
import { startFollow } from './follow.js';
import { startStallingProxy } from '../chaos/tcp-proxy.js';
import { runEdgeAlone } from './edge-alone.js';
import { describeMachine } from './machine.js';
import { shardsOwned, startBaseline, startNode, stop, waitFor, type Child } from './processes.js';
import { printFigures, type BenchFigures } from './report.js';
import { ingestResultOf } from '../results/ingest-result.js';
import { startOtlpReceiver } from './otlp-receiver.js';
import { trafficFor, type Route } from './route-traffic.js';
import { runBaseline, runEdge, type ScenarioSettings } from './scenario.js';

const args = readBenchArgs();
const startedAt = new Date();
const { durationS, connections, shards, only, routes, installCounts, nodeFlags } = args;

const adminUrl = process.env.BENCH_ADMIN_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const natsUrl = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
const runId = randomBytes(3).toString('hex');
const masterKey = randomBytes(32).toString('base64url');
const secrets = { github: randomBytes(20).toString('hex'), slack: randomBytes(16).toString('hex') };
const MAX_INSTALLS = 32;
const installs = {
  github: Array.from({ length: MAX_INSTALLS }, (_, i) => 91_000_001 + i),
  // Slack team ids: upper-case alphanumerics, one chat install (and workspace claim) each.
  slack: Array.from({ length: MAX_INSTALLS }, (_, i) => `TB${runId.toUpperCase()}N${i}`),
};
/** The run settings for `route`, its load spread over the first `n` installs. */
/** The tenants of the GitHub installations, in order: `--follow` follows the first (every installs count has it). */
let githubTenants: Array<{ tenantId: string; apiKey: string }> = [];
const followFor = (route: Route): Pick<ScenarioSettings, 'follow'> => {
  const first = githubTenants[0];
  if (!args.follow || route !== 'github' || !first) return {};
  return { follow: (edgeUrl) => startFollow(db.pool, edgeUrl, first.apiKey, first.tenantId) };
};
const settingsFor = (route: Route, n = MAX_INSTALLS): ScenarioSettings => ({
  ...followFor(route),
  traffic: trafficFor(route, secrets, installs, n),
  pacedPercents: args.pacedPercents,
  connections,
  durationS,
  drainTimeoutS: 120,
  ...(args.pacedRate === undefined ? {} : { pacedRate: args.pacedRate }),
});

const db = await createBenchDb(adminUrl, args.keepDb);
const receiver = args.tracing === 'otlp' ? await startOtlpReceiver() : null;
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
    ...(args.maxInFlight === null ? {} : { SERVICE_INGEST_MAX_IN_FLIGHT: String(args.maxInFlight) }),
    ...(args.maxInFlightBytes === null ? {} : { SERVICE_INGEST_MAX_IN_FLIGHT_BYTES: String(args.maxInFlightBytes) }),
    LOG_LEVEL: 'warn',
    // The five code-host settings (spec §8); the API and indexer URLs point at a closed
    // local port: `issues` webhooks make no upstream call, and nothing may leave the host.
    CODEHOST_CONNECTOR_ENABLED: 'true',
    CODEHOST_APP_ID: '424242',
    CODEHOST_APP_PRIVATE_KEY_PEM: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    CODEHOST_WEBHOOK_SECRET: secrets.github,
    CODEHOST_API_URL: 'http://127.0.0.1:9',
    SERVICE_INDEXER_DAEMON_URL_TEMPLATE: 'http://127.0.0.1:9/indexer/{install}/{repo}',
    // The signing secret mounts the Slack events route (HTTP transport, INTERFACE §3). No
    // client id/secret: the chat driver stays off (no name lookups at Slack), as in `drain`.
    CHATAPP_SIGNING_SECRET: secrets.slack,
    CHATAPP_API_URL: 'http://127.0.0.1:9/api/',
    // `--follow`: the bench's webhook receiver is on this machine, over http.
    ...(args.follow ? { SERVICE_WEBHOOKS_ALLOW_HTTP: '1', SERVICE_WEBHOOKS_ALLOW_PRIVATE: '1' } : {}),
    ...(receiver ? { OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url } : {}),
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
  if (receiver) {
    const { exports, bytes } = receiver.stats();
    process.stdout.write(`otlp receiver: ${exports} exports, ${(bytes / 2 ** 20).toFixed(1)} MiB of spans\n`);
    await receiver.close();
  }
}

const figures: BenchFigures = {
  machine: await describeMachine(db.pool, (nc as NatsConnection).info?.version ?? 'unknown'),
  settings: { durationS, connections, shards, installs: installCounts, routes },
  baselines: [],
  alones: [],
  topologies: [],
  drains: [],
};
const stopAnalyze = analyzePeriodically(db.pool);
try {
  if (routes.includes('github')) githubTenants = await seedInstalls(db.pool, masterKey, installs.github);
  if (routes.includes('slack')) await seedChatInstalls(db.pool, masterKey, installs.slack);
  if (only.has('baseline')) {
    const namespace = `bench_${runId}_base`;
    namespaces.push(namespace);
    const b = await startBaseline(
      {
        NATS_URL: natsUrl,
        SERVICE_NAMESPACE: namespace,
        CODEHOST_WEBHOOK_SECRET: secrets.github,
        CHATAPP_SIGNING_SECRET: secrets.slack,
      },
      nodeFlags,
    );
    children.push(b);
    await waitFor(b, '/healthz', 30_000);
    for (const route of routes) figures.baselines.push({ route, ...(await runBaseline(settingsFor(route), b)) });
    await stop(b);
  }
  for (const route of only.has('alone') ? routes : []) {
    const env = deployment(`alone${route[0]}`);
    const edge = await node(`bench-alone-${route}-edge`, env, 'edge');
    // /readyz wants every shard owned, and no actors node runs yet: liveness is what is left.
    await waitFor(edge, '/healthz', 60_000);
    const started: Child[] = [edge];
    const startActors = async () => {
      const a = await node(`bench-alone-${route}-actors`, env, 'actors');
      started.push(a);
      return a;
    };
    const run = await runEdgeAlone(settingsFor(route), edge, startActors, db.pool, 'alone');
    figures.alones.push({ route, ...run });
    await Promise.all(started.map((n) => stop(n)));
  }
  if (only.has('drain')) {
    for (const count of installCounts) {
      const tag = `D${runId.toUpperCase()}I${count}X`;
      const teams = await seedChatInstalls(
        db.pool,
        masterKey,
        Array.from({ length: count }, (_, i) => `T${tag}N${i}`),
      );
      const env = deployment(`drain${count}`);
      // --drain-stall: the node reaches Postgres through a proxy that can stop answering.
      const proxy =
        args.drainStallS === null
          ? null
          : await startStallingProxy({ host: '127.0.0.1', port: Number(new URL(db.url).port || 5432) });
      if (proxy) {
        const via = new URL(db.url);
        via.port = String(proxy.port);
        env.DATABASE_URL = via.toString();
      }
      const run = await runDrain({
        nc,
        pool: db.pool,
        namespace: env.SERVICE_NAMESPACE!,
        masterKey,
        shards,
        installs: teams,
        events: args.drainEvents,
        textChars: args.drainText,
        tag,
        startActors: () => node(`bench-drain${count}-actors`, env, 'actors'),
        stall:
          proxy && args.drainStallS !== null ? { proxy, forS: args.drainStallS, mode: args.drainStallMode } : undefined,
      });
      figures.drains.push({ installs: count, figures: run });
      await Promise.all(children.map((n) => stop(n)));
      await proxy?.close();
    }
  }
  const topologies = [
    ['edge1', '1 node', ['edge,actors']],
    ['edge2', '2 nodes', ['edge,actors', 'edge,actors']],
    // An edge-only node in front of an actors-only node (`serve --roles`, INTERFACE §1).
    ['split', 'edge|actors', ['edge', 'actors']],
  ] as const;
  for (const route of routes) {
    for (const n of installCounts) {
      for (const [tag, label, roles] of topologies) {
        if (!only.has(tag)) continue;
        // Route and installs in the tag: a namespace per run, event ids apart per run.
        const runTag = `${route[0]}${tag}i${n}`;
        const { edges, all } = await cluster(runTag, [...roles]);
        const run = await runEdge(settingsFor(route, n), edges, all, db.pool, runTag);
        figures.topologies.push({ route, label, installs: n, figures: run });
        await Promise.all(all.map((c) => stop(c)));
      }
    }
  }
  printFigures(figures);
  if (args.results) {
    const line = ingestResultOf(figures, {
      session: args.results.session ?? startedAt.toISOString().slice(0, 10),
      startedAt,
      endedAt: new Date(),
      command: args.command,
      note: args.results.note,
      drainText: args.drainText,
    });
    appendFileSync(args.results.file, `${JSON.stringify(line)}\n`);
    process.stdout.write(`appended this run to ${args.results.file}\n`);
  }
} finally {
  stopAnalyze();
  await cleanup();
}
