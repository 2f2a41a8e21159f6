/**
 * Work that runs without a request (backfill walkers, indexer sessions, GitHub delivery
 * reconciliation) is resumed when a node acquires its shard (`resumeShards`). A resume
 * that fails then (NATS or Postgres briefly away during a takeover, an ask that times
 * out), or a walker whose own tick chain broke (a step cut off by its deadline re-arms
 * nothing), would otherwise wait for the next shard move, which may never come: the walk
 * or the reconciliation stands still while the node looks healthy (INTERFACE §9.4). So the
 * node repeats every module's resume over all the shards it holds, every `periodMs` (one
 * call per module, so one listing query per module, not one per shard). Resumes are
 * idempotent: an actor with a tick pending ignores them.
 */
import type { Logger } from '../log.js';
import { systemClock } from '../runtime/clock.js';
import type { Clock } from '../runtime/ports.js';
import type { ShardManager } from '../runtime/shard-manager.js';
import type { NodeModule } from '../wiring/module.js';

export interface ResumeSweepOptions {
  /** The shards this node holds now. */
  owned: () => readonly number[];
  /** Each module's `resumeShards`; a throw is logged and the sweep goes on. */
  resumers: ReadonlyArray<(shards: ReadonlySet<number>) => Promise<void>>;
  periodMs: number;
  log: Logger;
  /** Default: real time (tests hand a manual clock). */
  clock?: Clock;
}

/** Default period: a stalled walk or reconciliation is picked up within a minute. */
const RESUME_SWEEP_MS = 60_000;

export class ResumeSweep {
  private timer: unknown = null;
  private running: Promise<void> | null = null;
  private stopped = false;

  constructor(private readonly o: ResumeSweepOptions) {}

  start(): void {
    if (this.timer !== null || this.stopped) return;
    const clock = this.o.clock ?? systemClock;
    const arm = () => {
      this.timer = clock.setTimeout(() => {
        if (this.stopped) return;
        // One sweep at a time: a slow one (Postgres stalled) is not stacked on.
        this.running ??= this.sweep().finally(() => (this.running = null));
        arm();
      }, this.o.periodMs);
    };
    arm();
  }

  /** One pass over the shards held now; resolves when every resume settled. */
  async sweep(): Promise<void> {
    const shards = new Set(this.o.owned());
    if (shards.size === 0) return;
    for (const resume of this.o.resumers) {
      if (this.stopped) return;
      try {
        await resume(shards);
      } catch (err) {
        this.o.log.warn({ err, shards: [...shards] }, 'resume sweep: a shard resume failed; the next sweep retries');
      }
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== null) (this.o.clock ?? systemClock).clearTimeout(this.timer);
    this.timer = null;
    await this.running;
  }
}

/** The sweep of a node's connector modules over the shards `shards` holds. */
export function modulesSweep(
  modules: readonly NodeModule[],
  shards: Pick<ShardManager, 'owned'>,
  log: Logger,
  periodMs = RESUME_SWEEP_MS,
): ResumeSweep {
  return new ResumeSweep({
    owned: () => shards.owned(),
    resumers: modules.flatMap((m) => (m.resumeShards ? [(s: ReadonlySet<number>) => m.resumeShards!(s)] : [])),
    periodMs,
    log,
  });
}
