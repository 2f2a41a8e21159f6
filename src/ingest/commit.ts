/**
 * Group commit across installs (ARCHITECTURE.md "Inbound" 2): what the install actors of a
 * node have ready goes into one Postgres transaction, each statement carrying every
 * install's rows (transaction.ts: event rows, self-emit lookups, graph nodes and edges, effects).
 *
 * Why: a transaction's time is mostly fixed (about ten round trips), so many installs at
 * moderate load, each committing a handful of events on its own, kept the commit slots busy
 * with small transactions and their lanes queued behind each other (docs/performance-log.md).
 *
 * - Each install actor hands its batch (`commit`) and awaits its own outcome, so an install
 *   still commits in order and an uninstall still waits for the ingest before it.
 * - At most `slots` transactions run at once (SERVICE_INGEST_COMMIT_SLOTS); what is handed
 *   in while they run waits and goes together into the next one, up to `maxEvents` events
 *   (a batch is never split, so one of more goes alone). A quiet node starts a transaction
 *   at once.
 * - A transaction of several installs that fails is committed again install by install
 *   (back at the head of the queue, each alone, so every slot works through them), so one
 *   install's poison event fails only its own batch (the consumer then isolates it). A batch
 *   marked `alone` (an event attempted before, or being isolated) never shares.
 * - A batch whose actor message was given up before its transaction starts (its deadline
 *   passed while it waited for a slot, or its actor is stopping: the part's signal) is not
 *   committed: its caller has its answer already and the events come back (the consumer
 *   retries them), so committing it would only add work when the slots are the bottleneck.
 */
import { retryGraphConflict } from '../graph/graph-writer.js';
import { withTx } from '../store/db.js';
import type pg from 'pg';
import { tracingOn } from '../telemetry/tracing.js';
import { traceCommit } from './delivery-trace.js';
import { writeIngest, type IngestPart, type IngestWritePorts, type PartOutcome } from './transaction.js';

export interface IngestTransaction {
  seconds: number;
  installs: number;
  events: number;
}

export interface IngestCommitterPorts extends IngestWritePorts {
  pool: pg.Pool;
  /** Transactions at once (SERVICE_INGEST_COMMIT_SLOTS). */
  slots: number;
  /** Events past which a transaction takes no further install's batch. */
  maxEvents?: number;
  /** After each transaction committed (metrics). */
  onTransaction?(t: IngestTransaction): void;
}

/**
 * The consumer's largest batch of one install (consumer.ts `maxBatch`). 1 024 was
 * measured against it: same drain rate at 1 and 32 installs, peak RSS no lower (README
 * "How events are committed").
 */
const DEFAULT_MAX_EVENTS_PER_TRANSACTION = 512;

interface Waiting {
  part: IngestPart;
  alone: boolean;
  resolve(o: PartOutcome): void;
  reject(err: unknown): void;
}

export class IngestCommitter {
  private readonly maxEvents: number;
  private readonly queue: Waiting[] = [];
  private running = 0;
  private scheduled = false;

  constructor(private readonly ports: IngestCommitterPorts) {
    if (!Number.isInteger(ports.slots) || ports.slots < 1)
      throw new Error(`commit slots must be a positive integer, got ${ports.slots}`);
    this.maxEvents = ports.maxEvents ?? DEFAULT_MAX_EVENTS_PER_TRANSACTION;
  }

  /** Commits the part, with others' when they are ready too; resolves once its transaction committed. */
  commit(part: IngestPart, opts: { alone?: boolean } = {}): Promise<PartOutcome> {
    return new Promise<PartOutcome>((resolve, reject) => {
      this.queue.push({ part, alone: opts.alone ?? false, resolve, reject });
      // Installs handed in within one turn of the event loop (a pull's worth) share a transaction.
      if (this.scheduled) return;
      this.scheduled = true;
      setImmediate(() => {
        this.scheduled = false;
        this.start();
      });
    });
  }

  /** Batches waiting for a transaction (a gauge of commit pressure). */
  waiting(): number {
    return this.queue.length;
  }

  /** Transactions running now (at most `slots`). */
  runningTransactions(): number {
    return this.running;
  }

  /** Starts transactions while slots are free; each, once done, starts the next. */
  private start(): void {
    while (this.running < this.ports.slots && this.queue.length > 0) {
      const group = this.take();
      if (group.length === 0) continue;
      this.running++;
      void this.run(group).finally(() => {
        this.running--;
        this.start();
      });
    }
  }

  /** From the head of the queue: one `alone` batch, or batches up to `maxEvents` events. */
  private take(): Waiting[] {
    const group: Waiting[] = [];
    let events = 0;
    while (this.queue.length > 0) {
      const next = this.queue[0]!;
      const given = next.part.ctx.signal;
      if (given.aborted) {
        this.queue.shift();
        next.reject(given.reason ?? new Error('ingest batch given up before its transaction'));
        continue;
      }
      const n = next.part.events.length;
      if (group.length > 0 && (next.alone || group[0]!.alone || events + n > this.maxEvents)) break;
      group.push(this.queue.shift()!);
      events += n;
    }
    return group;
  }

  private async run(group: Waiting[]): Promise<void> {
    const parts = group.map((w) => w.part);
    const started = performance.now();
    let outcomes: PartOutcome[];
    try {
      const commit = () =>
        withTx(this.ports.pool, (tx) => writeIngest(tx, parts, this.ports), { retryOn: retryGraphConflict });
      outcomes = await (tracingOn() ? traceCommit(parts, commit) : commit());
    } catch (err) {
      if (group.length === 1) return group[0]!.reject(err);
      this.ports.log.warn(
        { err, installs: group.length },
        'ingest transaction of several installs failed; committing each install apart',
      );
      // Each install has one batch here, so its order holds whichever slot takes it.
      this.queue.unshift(...group.map((w) => ({ ...w, alone: true })));
      return;
    }
    for (const [i, w] of group.entries()) w.resolve(outcomes[i]!);
    try {
      this.ports.onTransaction?.({
        seconds: (performance.now() - started) / 1000,
        installs: parts.length,
        events: parts.reduce((n, p) => n + p.events.length, 0),
      });
    } catch (err) {
      this.ports.log.warn({ err }, 'ingest transaction metrics not recorded');
    }
  }
}
