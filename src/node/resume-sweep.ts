/**
 * Work that runs without a request (backfill walkers, indexer sessions, GitHub delivery
 * reconciliation) is resumed when a node acquires its shard (`onShardAcquired`). A resume
 * that fails then (NATS or Postgres briefly away during a takeover, an ask that times
 * out), or a walker whose own tick chain broke (a step cut off by its deadline re-arms
 * nothing), would otherwise wait for the next shard move, which may never come: the walk
 * or the reconciliation stands still while the node looks healthy (INTERFACE §9.4). So the
 * node repeats every module's resume for every shard it holds, every `periodMs`. Resumes
 * are idempotent: an actor with a tick pending ignores them.
 */
import type { Logger } from '../log.js';
import type { ShardManager } from '../runtime/shard-manager.js';
import type { ConnectorModule } from '../wiring/module.js';

export interface ResumeSweepOptions {
  /** The shards this node holds now. */
  owned: () => readonly number[];
  /** Each module's `onShardAcquired`; a throw is logged and the sweep goes on. */
  resumers: ReadonlyArray<(shard: number) => Promise<void>>;
  periodMs: number;
  log: Logger;
}

/** Default period: a stalled walk or reconciliation is picked up within a minute. */
export const RESUME_SWEEP_MS = 60_000;

export class ResumeSweep {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private stopped = false;

  constructor(private readonly o: ResumeSweepOptions) {}

  start(): void {
    if (this.timer !== null || this.stopped) return;
    this.timer = setInterval(() => {
      // One sweep at a time: a slow one (Postgres stalled) is not stacked on.
      this.running ??= this.sweep().finally(() => (this.running = null));
    }, this.o.periodMs);
    this.timer.unref();
  }

  /** One pass over the shards held now; resolves when every resume settled. */
  async sweep(): Promise<void> {
    let failed = 0;
    for (const shard of this.o.owned()) {
      if (this.stopped) return;
      for (const resume of this.o.resumers) {
        try {
          await resume(shard);
        } catch (err) {
          failed++;
          this.o.log.warn({ err, shard }, 'resume sweep: a shard resume failed; the next sweep retries');
        }
      }
    }
    if (failed > 0) this.o.log.warn({ failed }, 'resume sweep ended with failures');
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    await this.running;
  }
}

/** The sweep of a node's connector modules over the shards `shards` holds. */
export function modulesSweep(
  modules: readonly ConnectorModule[],
  shards: Pick<ShardManager, 'owned'>,
  log: Logger,
  periodMs = RESUME_SWEEP_MS,
): ResumeSweep {
  return new ResumeSweep({
    owned: () => shards.owned(),
    resumers: modules.flatMap((m) => (m.onShardAcquired ? [(s: number) => m.onShardAcquired!(s)] : [])),
    periodMs,
    log,
  });
}
