/**
 * Cost of the replay fence per actor request (issue 32 item 3, src/runtime/replay-guard.ts):
 * the serving node records each request's id in KV (one JetStream publish, create-if-absent)
 * before the handler runs. Measured on real NATS, one process asking and serving (sealed,
 * as a node does), a handler that answers at once, so the figure is the fence's own cost:
 *   - ask latency: sequential asks, median and p99 in µs;
 *   - throughput: `--concurrency` asks in flight, asks per second.
 * Each run measures both, without and with the fence, alternating; medians of `--runs`.
 *
 *   NATS_URL=nats://127.0.0.1:4222 npx tsx bench/actor-replay/run.ts [--asks 2000] [--runs 3] [--concurrency 32]
 */
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { createLogger } from '../../src/log.js';
import { names as makeNames, shardOf, type ActorKey } from '../../src/runtime/names.js';
import { openKv } from '../../src/runtime/nats.js';
import { openReplayBuckets, replayGuard } from '../../src/runtime/replay-guard.js';
import { Router } from '../../src/runtime/router.js';
import { serveShard } from '../../src/runtime/serve-shard.js';
import { createSeal } from '../../src/runtime/seal.js';

const { values: args } = parseArgs({
  options: {
    asks: { type: 'string', default: '2000' },
    runs: { type: 'string', default: '3' },
    concurrency: { type: 'string', default: '32' },
  },
});
const ASKS = Number(args.asks);
const RUNS = Number(args.runs);
const CONCURRENCY = Number(args.concurrency);
const SHARDS = 1;
const log = createLogger({ level: 'silent', node: 'bench' });
const seal = createSeal([randomBytes(32).toString('base64')]);
const key: ActorKey = { kind: 'install-writes', id: ['bench'] };

const nc = await connect({ servers: process.env.NATS_URL ?? 'nats://127.0.0.1:4222' });
const names = makeNames(`bench_replay_${randomBytes(3).toString('hex')}`);
const buckets = await openReplayBuckets((name, o) => openKv(nc, name, o), names);
const router = new Router({ nc, names, shards: SHARDS, log, seal });

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const pct = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))]!;

async function measure(fenced: boolean): Promise<{ p50: number; p99: number; perS: number }> {
  const server = serveShard({
    nc,
    names,
    shard: shardOf(key, SHARDS),
    log,
    seal,
    replay: fenced ? replayGuard(buckets, { log }) : null,
    handler: async () => 'ok',
  });
  try {
    for (let i = 0; i < 100; i++) await router.ask(key, { type: 'health' }); // warm-up
    const lat: number[] = [];
    for (let i = 0; i < ASKS; i++) {
      const t = process.hrtime.bigint();
      await router.ask(key, { type: 'health' });
      lat.push(Number(process.hrtime.bigint() - t) / 1_000);
    }
    let next = 0;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next++ < ASKS) await router.ask(key, { type: 'health' });
      }),
    );
    const perS = ASKS / ((performance.now() - started) / 1_000);
    return { p50: median(lat), p99: pct(lat, 0.99), perS };
  } finally {
    await server.stop();
  }
}

const rows: Record<'off' | 'on', Array<{ p50: number; p99: number; perS: number }>> = { off: [], on: [] };
for (let r = 0; r < RUNS; r++) {
  rows.off.push(await measure(false));
  rows.on.push(await measure(true));
}
for (const which of ['off', 'on'] as const) {
  const rs = rows[which];
  console.log(
    JSON.stringify({
      replay_fence: which,
      asks: ASKS,
      runs: RUNS,
      ask_p50_us: Math.round(median(rs.map((x) => x.p50))),
      ask_p99_us: Math.round(median(rs.map((x) => x.p99))),
      asks_per_s: Math.round(median(rs.map((x) => x.perS))),
      concurrency: CONCURRENCY,
    }),
  );
}
const jsm = await jetstreamManager(nc);
for (const b of [names.replayBucket, names.replayLongBucket]) await jsm.streams.delete(`KV_${b}`);
await nc.close();
