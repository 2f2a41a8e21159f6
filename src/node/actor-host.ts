/**
 * A node's actor host: the kernel with every module's actor kinds (on every node, so a
 * shard that lands here can serve them), and, with the actors role, the shard manager
 * whose owned shards each serve actor requests and run their ingest consumer, the effect
 * runner over the owned shards, and the resume sweep of the modules' `resumeShards`.
 */
import type { Registry } from 'prom-client';
import type { Config } from '../config.js';
import type { DriverRegistry } from '../connectors/driver.js';
import type { EffectRunner } from '../effects/effect-runner.js';
import type { IngestCommitter } from '../ingest/commit.js';
import { ingestAttempts } from '../ingest/attempts.js';
import { pgDeadLetterPort } from '../ingest/dead-letter-port.js';
import { deliverToInstallActor } from '../ingest/deliver.js';
import { NodeIngest } from '../ingest/node-ingest.js';
import type { Logger } from '../log.js';
import { Kernel } from '../runtime/kernel.js';
import { observeRuntime, type RuntimeMetrics } from '../runtime/metrics.js';
import { parseKey, shardOf, type Names } from '../runtime/names.js';
import { openReplayBuckets, replayGuard } from '../runtime/replay-guard.js';
import type { Seal } from '../runtime/seal.js';
import { ShardHost } from '../runtime/shard-host.js';
import { ShardManager } from '../runtime/shard-manager.js';
import { pgBlobPort, pgStoredEventsPort } from '../store/runtime-ports.js';
import type { ModuleDeps, NodeModule } from '../wiring/module.js';
import type { NodeNats } from './nats-setup.js';
import type { Pool } from './postgres.js';
import { modulesSweep } from './resume-sweep.js';
import type { Undo } from './undo.js';

export interface ActorHostParts {
  config: Readonly<Config>;
  log: Logger;
  hostsActors: boolean;
  pool: Pool;
  nats: NodeNats;
  names: Names;
  seal: Seal;
  modules: readonly NodeModule[];
  deps: ModuleDeps;
  committer: IngestCommitter;
  /** The enabled connectors' drivers: a dead letter is recorded without what they forget (§10.5). */
  drivers: DriverRegistry;
  effects: EffectRunner | null;
  registry: Registry;
  metrics: RuntimeMetrics;
  /** Period of the resume sweep (resume-sweep.ts); tests shorten it. */
  resumeSweepMs?: number;
}

export interface ActorHost {
  kernel: Kernel;
  /** Null on a node without the actors role. */
  shards: ShardManager | null;
}

export async function startActorHost(p: ActorHostParts, undo: Undo): Promise<ActorHost> {
  const { config, log, pool, nats, names: n, seal, modules, metrics } = p;
  const kernel = new Kernel({ log });
  undo.push({ name: 'kernel', fn: () => kernel.stop() });
  for (const m of modules) for (const def of m.actors) kernel.register(def);
  if (!p.hostsActors) {
    observeRuntime(p.registry, { kernel, shards: null, ingest: null, committer: p.committer, jsm: nats.jsm, names: n });
    return { kernel, shards: null };
  }

  const ingest = new NodeIngest({
    nc: nats.nc,
    js: nats.js,
    jsm: nats.jsm,
    names: n,
    blobs: pgBlobPort(pool),
    deadLetters: pgDeadLetterPort(pool, p.drivers, log),
    deliver: deliverToInstallActor(kernel, metrics),
    seal,
    onRefused: () => metrics.fenceRefused.inc({ path: 'ingest' }),
    log,
    attempts: ingestAttempts(p.deps.dedup, n.ingestStream),
    storedEvents: pgStoredEventsPort(pool),
    maxInFlight: config.ingestMaxInFlight,
  });
  const host = new ShardHost({
    nc: nats.nc,
    names: n,
    log,
    dispatch: (req) => kernel.dispatch(parseKey(req.key), req.msg, { deadline: req.deadline }),
    ingest,
    seal,
    onRefused: () => metrics.fenceRefused.inc({ path: 'actor' }),
    replay: replayGuard(await openReplayBuckets(nats.bucket, n), {
      log,
      onReplay: () => metrics.fenceRefused.inc({ path: 'actor_replay' }),
    }),
    passivate: (shard) => kernel.passivate((key) => shardOf(key, config.shards) === shard),
    onAcquired: async (shard) => {
      for (const m of modules) await m.resumeShards?.(new Set([shard]));
    },
  });
  const shards = new ShardManager({
    nc: nats.nc,
    names: n,
    nodeId: config.nodeId,
    shards: config.shards,
    leaseTtlMs: config.leaseTtlMs,
    log,
    listener: host,
    replicas: config.nats.replicas,
  });
  observeRuntime(p.registry, { kernel, shards, ingest, committer: p.committer, jsm: nats.jsm, names: n });

  undo.push({ name: 'shards', fn: () => shards.stop() });
  await shards.start();
  const effects = p.effects;
  if (effects) {
    effects.start(() => shards.owned());
    undo.push({ name: 'effects', fn: () => effects.stop() });
  }
  const sweep = modulesSweep(modules, shards, log, p.resumeSweepMs);
  sweep.start();
  undo.push({ name: 'resume sweep', fn: () => sweep.stop() });
  return { kernel, shards };
}
