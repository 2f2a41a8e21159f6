/**
 * `npm run chaos -- [--quick] [--only a,b,c,d,e] [--rate 30] [--installs 4] [--slash 10] [--kills n]
 * [--results bench/results/chaos.jsonl [--note TEXT]]`: steady
 * signed webhook load against three nodes while each fault of scenarios.ts runs, then the
 * figures per fault: sent, acknowledged (2xx on the first attempt), stored, lost
 * (acknowledged but never stored), duplicated, recovered by reconciliation (first attempt
 * failed, stored after a redelivery), not recovered, takeover time per node kill, max ack
 * latency. Loopback only; bounded (`--quick` for the smoke test). Prints a table and one
 * JSON line; exits 1 when anything was lost or duplicated. `--results FILE` also appends the
 * run's line (bench/results/chaos-result.ts) to FILE, which `npm run docs:figures` renders
 * into docs/chaos.md; `BENCH_MACHINE` names the machine there (default: CPUs and model).
 */
import { appendFileSync } from 'node:fs';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { setTimeout as sleep } from 'node:timers/promises';
import { readChaosArgs } from './chaos-args.js';
import { startCluster } from './cluster.js';
import { startLoad } from './load.js';
import { FULL, QUICK, runScenario, TITLES, type ScenarioId } from './scenarios.js';
import { describeMachine } from '../ingest/machine.js';
import { ChaosResult } from '../results/chaos-result.js';
import { machineOf } from '../results/ingest-result.js';

const args = readChaosArgs();
const startedAt = new Date();
const { ids } = args;
const base = args.quick ? QUICK : FULL;
const scale = args.kills === null ? base : { ...base, nodeKills: args.kills, natsKills: args.kills };
const RECONCILE_S = 3;
const SETTLE_MS = 180_000;
// Bounded whatever happens: the whole run, faults and settling included.
const deadline = setTimeout(
  () => {
    process.stderr.write('chaos: over its time bound; giving up\n');
    process.exit(1);
  },
  args.quick ? 240_000 : 1_200_000,
);
deadline.unref();

const adminUrl = process.env.BENCH_ADMIN_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const cluster = await startCluster({ adminUrl, installs: args.installs, reconcileS: RECONCILE_S });
const takeovers = new Map<ScenarioId, number[]>();
const windows = new Map<ScenarioId, [number, number]>();
try {
  const load = startLoad(cluster.gh, cluster.installationIds, args.rate, args.slash);
  await sleep(2_000);
  for (const id of ids) {
    load.scenario = id;
    process.stderr.write(`chaos: (${id}) ${TITLES[id]}\n`);
    const from = Date.now();
    takeovers.set(id, await runScenario(id, cluster, scale));
    windows.set(id, [from, Date.now()]);
    await sleep(2_000);
  }
  load.scenario = 'cooldown';
  await sleep(1_000);
  await load.stop();

  const everyGuid = ids.flatMap((id) => load.sent.get(id) ?? []);
  const storedCounts = async () => {
    const { rows } = await cluster.db.pool.query<{ id: string; n: string }>(
      `SELECT id, count(*) AS n FROM events WHERE id = ANY($1::text[]) GROUP BY id`,
      [everyGuid],
    );
    return new Map(rows.map((r) => [r.id, Number(r.n)]));
  };
  const settleEnd = Date.now() + SETTLE_MS;
  let stored = await storedCounts();
  while (stored.size < everyGuid.length && Date.now() < settleEnd) {
    await sleep(1_000);
    stored = await storedCounts();
  }

  const rows = ids.map((id) => {
    const guids = new Set(load.sent.get(id) ?? []);
    const first = cluster.gh.hooks.deliveries.filter((d) => !d.redelivery && guids.has(d.guid));
    const acked = first.filter((d) => d.status_code >= 200 && d.status_code < 300);
    const failed = first.filter((d) => !(d.status_code >= 200 && d.status_code < 300));
    const t = takeovers.get(id) ?? [];
    const [from, to] = windows.get(id) ?? [0, 0];
    const writes = cluster.gh.calls.filter((x) => x.method !== 'GET' && x.path.startsWith('/repos/'));
    return {
      scenario: id,
      fault: TITLES[id],
      sent: guids.size,
      acknowledged: acked.length,
      stored: [...guids].filter((g) => stored.has(g)).length,
      lost: acked.filter((d) => !stored.has(d.guid)).length,
      duplicated: [...guids].reduce((sum, g) => sum + Math.max(0, (stored.get(g) ?? 0) - 1), 0),
      recovered_by_reconciliation: failed.filter((d) => stored.has(d.guid)).length,
      not_recovered: failed.filter((d) => !stored.has(d.guid)).length,
      takeover_ms: t.map((ms) => Math.round(ms)),
      max_ack_ms: Math.round(Math.max(0, ...acked.map((d) => d.duration * 1000))),
      /** Write-backs (slash replies) GitHub received during the fault, whatever it answered. */
      upstream_writes_during_fault: writes.filter((x) => x.at >= from && x.at <= to).length,
    };
  });

  // What became of every delivery that is not stored, for whoever reads a non-zero row.
  const { rows: dead } = await cluster.db.pool.query<{ msg_id: string | null; error: string; deliveries: number }>(
    'SELECT msg_id, error, deliveries FROM dead_letters ORDER BY id',
  );
  for (const g of everyGuid.filter((x) => !stored.has(x))) {
    const attempts = cluster.gh.hooks.byGuid(g).map((d) => `${d.redelivery ? 'redelivery' : 'first'} ${d.status_code}`);
    const dl = dead.find((d) => d.msg_id?.includes(g));
    process.stderr.write(
      `chaos: not stored ${g}: attempts [${attempts.join(', ')}]${dl ? `; dead letter: ${dl.error}` : ''}\n`,
    );
  }

  // Acknowledged events not stored are either still in the stream (a consumer not draining) or gone.
  const nc = await connect({ servers: cluster.nats.url });
  const jsm = await jetstreamManager(nc);
  const natsVersion = nc.info?.version ?? 'unknown';
  const leftInStream = (await jsm.streams.info('chaos_INGEST')).state.messages;
  const stuckShards: Array<{ consumer: string; pending: number; ack_pending: number }> = [];
  for await (const ci of jsm.consumers.list('chaos_INGEST')) {
    if (ci.num_pending + ci.num_ack_pending > 0) {
      stuckShards.push({ consumer: ci.name, pending: ci.num_pending, ack_pending: ci.num_ack_pending });
    }
  }
  await nc.close();

  const line = (cells: Array<string | number>) => `| ${cells.join(' | ')} |`;
  const out = [
    line([
      'Fault',
      'sent',
      'acked',
      'stored',
      'lost',
      'duplicated',
      'recovered by reconciliation',
      'not recovered',
      'takeover ms',
      'max ack ms',
      'GitHub writes during fault',
    ]),
    line(Array(11).fill('---')),
    ...rows.map((r) =>
      line([
        `(${r.scenario}) ${r.fault}`,
        r.sent,
        r.acknowledged,
        r.stored,
        r.lost,
        r.duplicated,
        r.recovered_by_reconciliation,
        r.not_recovered,
        r.takeover_ms.length ? r.takeover_ms.join(', ') : '–',
        r.max_ack_ms,
        r.upstream_writes_during_fault,
      ]),
    ),
  ];
  process.stdout.write(`${out.join('\n')}\n`);
  const summary = {
    quick: args.quick,
    rate: args.rate,
    slash_every: args.slash,
    dead_letters: dead.length,
    left_in_stream: leftInStream,
    undrained_consumers: stuckShards,
    rows,
  };
  process.stdout.write(`${JSON.stringify({ chaos: summary })}\n`);
  if (args.results) {
    const line = ChaosResult.parse({
      bench: 'chaos',
      started_at: startedAt.toISOString(),
      ended_at: new Date().toISOString(),
      machine: machineOf(await describeMachine(cluster.db.pool, natsVersion)),
      command: args.command,
      installs: args.installs,
      scale: {
        node_kills: scale.nodeKills,
        nats_kills: scale.natsKills,
        pg_stall_s: scale.pgStallMs / 1000,
        github_outage_s: scale.githubOutageMs / 1000,
        all_down_s: scale.allDownMs / 1000,
      },
      note: args.results.note,
      source: 'chaos',
      ...summary,
    });
    appendFileSync(args.results.file, `${JSON.stringify(line)}\n`);
    process.stdout.write(`appended this run to ${args.results.file}\n`);
  }
  if (rows.some((r) => r.lost > 0 || r.duplicated > 0)) process.exitCode = 1;
} finally {
  await cluster.close();
}
