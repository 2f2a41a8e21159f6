/**
 * Waking feed readers on commit (INTERFACE §10.1: a long-poll or SSE stream answers within
 * 1 s of the next commit; §10.2: a webhook delivers within 5 s). After an ingest transaction
 * advanced a tenant's change feed, the committing node publishes `{"seq"}` (the tenant's new
 * head) on `<ns>.feed.<tenant>.advanced`; every node listens on `<ns>.feed.*.advanced` once
 * and wakes its waiters of that tenant. A notice is only a hint: readers always read Postgres
 * (change-read.ts), so a lost, late or forged notice delays a reader (down to the caller's
 * slow poll, its safety net) and never shows it anything. So notices are core NATS, unsealed.
 */
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import type { Logger } from '../log.js';
import { untoken, type Names } from './names.js';

/** What a feed reader waits on (edge routes, webhook actors). */
export interface FeedWaker {
  /**
   * Resolves once a notice says the tenant's feed is past `afterSeq` (at once if one came
   * already), after `ms`, or when `signal` aborts; never rejects.
   */
  wait(tenantId: string, afterSeq: number, ms: number, signal?: AbortSignal): Promise<void>;
}

/** Tenants whose last heard head is kept (for a waiter that registers just after its notice). */
const HEARD_MAX = 10_000;

export function publishFeedAdvanced(nc: NatsConnection, names: Names, tenantId: string, seq: number, log: Logger) {
  try {
    nc.publish(names.feedAdvanced(tenantId), JSON.stringify({ seq }));
  } catch (err) {
    log.warn({ err, tenantId }, 'feed notice not published; readers catch up on their slow poll');
  }
}

interface Waiter {
  afterSeq: number;
  wake(): void;
}

export class FeedNotices implements FeedWaker {
  private readonly waiters = new Map<string, Set<Waiter>>();
  private readonly heard = new Map<string, number>();
  private sub: Subscription | null = null;

  constructor(
    private readonly nc: NatsConnection,
    private readonly names: Names,
    private readonly log: Logger,
  ) {}

  start(): void {
    this.sub = this.nc.subscribe(this.names.feedAdvancedAll, {
      callback: (err, msg) => {
        if (err) return this.log.warn({ err }, 'feed notices subscription failed');
        const tenantId = untoken(msg.subject.split('.').at(-2) ?? '');
        let seq = Number.POSITIVE_INFINITY;
        try {
          const body = msg.json<{ seq?: unknown }>();
          if (typeof body.seq === 'number') seq = body.seq;
        } catch {
          // Unreadable: wake everyone of the tenant; they read Postgres anyway.
        }
        this.advanced(tenantId, seq);
      },
    });
  }

  /** A tenant's feed is at `seq` now (a notice, or this node's own commit). */
  advanced(tenantId: string, seq: number): void {
    const prev = this.heard.get(tenantId) ?? 0;
    this.heard.delete(tenantId);
    this.heard.set(tenantId, Math.max(prev, seq));
    if (this.heard.size > HEARD_MAX) this.heard.delete(this.heard.keys().next().value!);
    for (const w of this.waiters.get(tenantId) ?? []) if (seq > w.afterSeq) w.wake();
  }

  wait(tenantId: string, afterSeq: number, ms: number, signal?: AbortSignal): Promise<void> {
    if ((this.heard.get(tenantId) ?? 0) > afterSeq || signal?.aborted) return Promise.resolve();
    return new Promise<void>((resolve) => {
      let set = this.waiters.get(tenantId);
      if (!set) this.waiters.set(tenantId, (set = new Set()));
      const mine = set;
      const waiter: Waiter = { afterSeq, wake: () => done() };
      const timer = setTimeout(() => done(), ms);
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        mine.delete(waiter);
        if (mine.size === 0 && this.waiters.get(tenantId) === mine) this.waiters.delete(tenantId);
        resolve();
      };
      signal?.addEventListener('abort', done, { once: true });
      mine.add(waiter);
    });
  }

  /** Waiters now (a gauge; tests). */
  waiting(): number {
    let n = 0;
    for (const s of this.waiters.values()) n += s.size;
    return n;
  }

  async stop(): Promise<void> {
    for (const set of this.waiters.values()) for (const w of [...set]) w.wake();
    this.sub?.unsubscribe();
    this.sub = null;
  }
}
