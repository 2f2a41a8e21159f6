/**
 * The command line of `npm run bench` (run.ts has the usage), read and checked before
 * anything starts.
 */
import { resolve } from 'node:path';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { parseRoutes, type Route } from './route-traffic.js';

export interface BenchArgs {
  durationS: number;
  connections: number;
  shards: number;
  only: Set<string>;
  routes: Route[];
  /** The installs the load spreads over: 1 is the big tenant (every event on one install's shard). */
  installCounts: number[];
  pacedPercents: number[];
  pacedRate: number | undefined;
  drainEvents: number;
  keepDb: boolean;
  /** SERVICE_INGEST_MAX_IN_FLIGHT of every node; null: the service's default. */
  maxInFlight: number | null;
  /** SERVICE_INGEST_MAX_IN_FLIGHT_BYTES of every node; null: the service's default. */
  maxInFlightBytes: number | null;
  /** Characters of text in each drain event (default ~2 200, a chat message's; ~30 000 is a pull request's size). */
  drainText: number | null;
  /** Seconds Postgres stalls in the middle of each drain (a pausable proxy); null: none. */
  drainStallS: number | null;
  /** With `drainStallS`: `cut` resets its connections and refuses new ones instead of stalling. */
  drainStallMode: 'stall' | 'cut';
  /** Flags for node itself (`--cpu-prof`, and `--node-flags`, e.g. V8 heap sizes). */
  nodeFlags: string[];
  /** `--tracing otlp`: every node exports its spans to a local receiver (otlp-receiver.ts); default none. */
  tracing: 'none' | 'otlp';
  /** `--follow`: a webhook and an SSE client on the bench tenant during the paced runs (follow.ts). */
  follow: boolean;
  /** `--results FILE`: append the run's line (bench/results/ingest-result.ts) to FILE. */
  results: { file: string; session: string | null; note: string | null } | null;
  /** The command as run, without the `--results` flags: what the docs show beside the figures. */
  command: string;
}

/** The flags `npm run bench` takes (the docs' commands are checked against them). */
export const BENCH_OPTIONS = {
  duration: { type: 'string', default: '20' },
  connections: { type: 'string', default: '64' },
  only: { type: 'string', default: 'baseline,alone,drain,edge1,edge2,split' },
  route: { type: 'string', default: 'github,slack' },
  shards: { type: 'string', default: '16' },
  'keep-db': { type: 'boolean', default: false },
  'cpu-prof': { type: 'string' },
  rate: { type: 'string' },
  installs: { type: 'string', default: '1,32' },
  paced: { type: 'string', default: '50,90' },
  'drain-events': { type: 'string', default: '20000' },
  'node-flags': { type: 'string', default: '' },
  'max-in-flight': { type: 'string' },
  'max-in-flight-bytes': { type: 'string' },
  'drain-text': { type: 'string' },
  'drain-stall': { type: 'string' },
  'drain-cut': { type: 'boolean', default: false },
  tracing: { type: 'string', default: 'none' },
  follow: { type: 'boolean', default: false },
  results: { type: 'string' },
  session: { type: 'string' },
  note: { type: 'string' },
} satisfies NonNullable<ParseArgsConfig['options']>;

export function readBenchArgs(argv = process.argv.slice(2)): BenchArgs {
  const { values: args } = parseArgs({
    args: argv,
    options: BENCH_OPTIONS,
  });
  const durationS = Number(args.duration);
  const connections = Number(args.connections);
  const shards = Number(args.shards);
  if (
    !(durationS > 0 && durationS <= 120) ||
    !(connections > 0 && connections <= 512) ||
    !(shards >= 1 && shards <= 256)
  ) {
    throw new Error('--duration must be 1-120 s, --connections 1-512, --shards 1-256');
  }
  const installCounts = args.installs.split(',').map(Number);
  if (!installCounts.every((n) => Number.isInteger(n) && n >= 1 && n <= 32))
    throw new Error('--installs takes counts 1-32, e.g. 1,32');
  const pacedRate = args.rate === undefined ? undefined : Number(args.rate);
  if (pacedRate !== undefined && !(pacedRate >= 1 && pacedRate <= 100_000))
    throw new Error('--rate must be 1-100000 per second');
  const pacedPercents = args.paced === '' ? [] : args.paced.split(',').map(Number);
  if (!pacedPercents.every((p) => p > 0 && p <= 100)) throw new Error('--paced takes percentages 1-100, e.g. 50,90');
  const drainEvents = Number(args['drain-events']);
  if (!(Number.isInteger(drainEvents) && drainEvents >= 1 && drainEvents <= 1_000_000))
    throw new Error('--drain-events must be 1-1000000');
  const maxInFlight = args['max-in-flight'] === undefined ? null : Number(args['max-in-flight']);
  if (maxInFlight !== null && !(Number.isInteger(maxInFlight) && maxInFlight >= 64 && maxInFlight <= 1_000_000))
    throw new Error('--max-in-flight must be 64-1000000 (SERVICE_INGEST_MAX_IN_FLIGHT)');
  const maxInFlightBytes = args['max-in-flight-bytes'] === undefined ? null : Number(args['max-in-flight-bytes']);
  if (maxInFlightBytes !== null && !(Number.isInteger(maxInFlightBytes) && maxInFlightBytes >= 1024 * 1024))
    throw new Error(
      '--max-in-flight-bytes must be a whole number of at least 1048576 (SERVICE_INGEST_MAX_IN_FLIGHT_BYTES)',
    );
  const drainText = args['drain-text'] === undefined ? null : Number(args['drain-text']);
  if (drainText !== null && !(Number.isInteger(drainText) && drainText >= 1 && drainText <= 900_000))
    throw new Error('--drain-text must be 1-900000 characters');
  const drainStallS = args['drain-stall'] === undefined ? null : Number(args['drain-stall']);
  if (drainStallS !== null && !(drainStallS >= 1 && drainStallS <= 120))
    throw new Error('--drain-stall must be 1-120 seconds');
  if (args.tracing !== 'none' && args.tracing !== 'otlp') throw new Error('--tracing takes none or otlp');
  const extraFlags = args['node-flags'].split(' ').filter((f) => f !== '');
  if (!extraFlags.every((f) => /^--[a-z0-9-]+(=[A-Za-z0-9._-]+)?$/.test(f)))
    throw new Error('--node-flags takes node options separated by spaces, e.g. --node-flags=--max-semi-space-size=8');
  return {
    durationS,
    connections,
    shards,
    only: new Set(args.only.split(',')),
    routes: parseRoutes(args.route),
    installCounts,
    pacedPercents,
    pacedRate,
    drainEvents,
    keepDb: args['keep-db'],
    maxInFlight,
    maxInFlightBytes,
    drainText,
    drainStallS,
    drainStallMode: args['drain-cut'] ? 'cut' : 'stall',
    nodeFlags: [
      ...extraFlags,
      ...(args['cpu-prof'] ? ['--cpu-prof', `--cpu-prof-dir=${resolve(args['cpu-prof'])}`] : []),
    ],
    tracing: args.tracing,
    follow: args.follow,
    results: args.results ? { file: args.results, session: args.session ?? null, note: args.note ?? null } : null,
    command: commandLine('npm run bench', argv, ['results', 'session', 'note']),
  };
}

/** `program -- args` as a shell would take it back, without the flags in `omit` (and their values). */
export function commandLine(program: string, argv: string[], omit: string[]): string {
  const kept: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const name = /^--([a-z-]+)/.exec(argv[i]!)?.[1];
    if (name !== undefined && omit.includes(name)) {
      if (!argv[i]!.includes('=')) i++;
      continue;
    }
    kept.push(argv[i]!);
  }
  const quoted = kept.map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : JSON.stringify(a)));
  return quoted.length === 0 ? program : `${program} -- ${quoted.join(' ')}`;
}
