/**
 * Actors-only drain (issue 12, Deliver 5): the commit path alone. `events` chat `message`
 * events (the shape the Slack route publishes, INTERFACE §4) are published straight to a
 * fresh deployment's ingest stream through the real `IngestPublisher`, sealed with the
 * deployment's key (INTERFACE §9.4), before any node runs; then one `serve --roles actors`
 * node starts and the bench waits (bounded) until every event is committed. Reported:
 * committed/s between the first and the last commit, and CPU µs per committed event of the
 * node, nats-server and postgres from the node's start to the last commit.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import type pg from 'pg';
import { ensureIngestStream } from '../../src/ingest/stream.js';
import { IngestPublisher } from '../../src/ingest/publish.js';
import { names as makeNames } from '../../src/runtime/names.js';
import { createSeal } from '../../src/runtime/seal.js';
import { pgBlobPort } from '../../src/store/runtime-ports.js';
import type { StallingProxy } from '../chaos/tcp-proxy.js';
import { commitStats } from './bench-db.js';
import { commitFigures, commitTotals, type CommitFigures, type CommitTotals } from './commit-metrics.js';
import { cpuMs, type Child } from './processes.js';
import { RssSampler } from './rss.js';
import { systemCpu, systemCpuUsed } from './system-cpu.js';

export interface DrainInstall {
  installId: string;
  tenantId: string;
  teamId: string;
}

export interface DrainFigures {
  events: number;
  publishedPerS: number;
  committed: number;
  committedPerS: number;
  /** From starting the node until every event was committed (or the bound), start-up included. */
  drainS: number;
  cpuUsPerEvent: Record<string, number>;
  peakRssMiB: Record<string, number>;
  /** With `stall`: the backlog when Postgres answered again, and how it was committed from then on. */
  stalled?: {
    mode: 'stall' | 'cut';
    forS: number;
    backlogAtResume: number;
    recoveryS: number;
    commits: CommitFigures | null;
  };
}

const DRAIN_MAX_S = 180;
const CHANNELS = 4;
const USERS = 16;

const FILLER = 'lorem ipsum dolor sit amet ';

/**
 * A ~2.4 KB chat message (text padded; `textChars` sets the text's length instead), unique ts
 * per event; ids start with `message:C<tag>`.
 */
function chatEvent(inst: DrainInstall, tag: string, n: number, textChars: number | null) {
  const channel = `C${tag}${n % CHANNELS}`;
  const ts = `${1_700_000_000 + n}.${String(n % 1_000_000).padStart(6, '0')}`;
  const head = `drain event ${n}: `;
  const text =
    textChars === null
      ? head + FILLER.repeat(80)
      : (head + FILLER.repeat(Math.ceil(textChars / FILLER.length))).slice(0, textChars);
  return {
    installId: inst.installId,
    tenantId: inst.tenantId,
    connectorId: 'chatapp',
    id: `message:${channel}:${ts}`,
    kind: 'message',
    occurredAt: new Date().toISOString(),
    payload: { channel_id: channel, channel_type: 'channel', ts, user: `UBENCH${n % USERS}`, text },
  };
}

export async function runDrain(o: {
  nc: NatsConnection;
  pool: pg.Pool;
  namespace: string;
  masterKey: string;
  shards: number;
  installs: DrainInstall[];
  events: number;
  /** Characters of each event's text; null: ~2 200. */
  textChars: number | null;
  tag: string;
  startActors: () => Promise<Child>;
  /**
   * Once a fifth is committed, the node's Postgres (its DATABASE_URL goes through `proxy`)
   * stalls (`stall`: stops answering) or goes away (`cut`: connections reset and refused) for `forS`.
   */
  stall?: { proxy: StallingProxy; forS: number; mode: 'stall' | 'cut' } | undefined;
}): Promise<DrainFigures> {
  const names = makeNames(o.namespace);
  await ensureIngestStream(await jetstreamManager(o.nc), names);
  const publisher = new IngestPublisher({
    seal: createSeal([o.masterKey]),
    js: jetstream(o.nc),
    names,
    shards: o.shards,
    blobs: pgBlobPort(o.pool),
    maxPayload: o.nc.info!.max_payload,
  });
  const p0 = Date.now();
  for (let n = 0; n < o.events; n++)
    await publisher.publish(chatEvent(o.installs[n % o.installs.length]!, o.tag, n, o.textChars));
  const publishedPerS = o.events / ((Date.now() - p0) / 1000);

  const prefix = `message:C${o.tag}`;
  const sysBefore = await systemCpu();
  const t0 = Date.now();
  const node = await o.startActors();
  const rss = new RssSampler([node]);
  let stats = await commitStats(o.pool, prefix, 'chatapp');
  let stall: { resumedAt: number; backlog: number; totals: CommitTotals } | null = null;
  while (stats.committed < o.events && (Date.now() - t0) / 1000 < DRAIN_MAX_S) {
    if (node.proc.exitCode !== null) throw new Error(`${node.name} exited:\n${node.logTail()}`);
    if (o.stall && stall === null && stats.committed >= o.events / 5) {
      if (o.stall.mode === 'cut') o.stall.proxy.cut();
      else o.stall.proxy.pause();
      await sleep(o.stall.forS * 1000);
      o.stall.proxy.resume();
      const totals = await commitTotals([node]);
      stall = {
        resumedAt: Date.now(),
        backlog: o.events - (await commitStats(o.pool, prefix, 'chatapp')).committed,
        totals,
      };
    }
    await sleep(250);
    stats = await commitStats(o.pool, prefix, 'chatapp');
  }
  const drainS = (Date.now() - t0) / 1000;
  const stalled =
    o.stall && stall
      ? {
          mode: o.stall.mode,
          forS: o.stall.forS,
          backlogAtResume: stall.backlog,
          recoveryS: (Date.now() - stall.resumedAt) / 1000,
          commits: commitFigures(stall.totals, await commitTotals([node])),
        }
      : undefined;
  const nodeMs = await cpuMs(node);
  const sys = systemCpuUsed(sysBefore, await systemCpu());
  rss.stop();
  const per = (ms: number) => (stats.committed > 0 ? Math.round((ms * 1000) / stats.committed) : 0);
  const spanS =
    stats.firstCommit && stats.lastCommit ? (stats.lastCommit.getTime() - stats.firstCommit.getTime()) / 1000 : 0;
  return {
    events: o.events,
    publishedPerS,
    committed: stats.committed,
    committedPerS: spanS > 0 ? stats.committed / spanS : 0,
    drainS,
    cpuUsPerEvent: { [node.name]: per(nodeMs), 'nats-server': per(sys.natsServerMs), postgres: per(sys.postgresMs) },
    peakRssMiB: rss.peaks(),
    ...(stalled ? { stalled } : {}),
  };
}
