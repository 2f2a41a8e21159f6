/**
 * Keeping the leases a node holds (shard-manager.ts has the protocol): on every tick, a
 * lease whose last good renew was sent more than the fence window ago is given up as lost
 * (its work stops before the key can expire and another node create it), and a lease due
 * for renewal is renewed by revision compare-and-set. Renewals are never awaited by the
 * tick, so one slow KV answer cannot delay the fencing of the others.
 *
 * A lease found overdue is judged again after the I/O that is already waiting has been read
 * (`setImmediate` runs after the poll phase; timers run before it). A busy node's event loop
 * can stall past the fence window while the answer to its renew sits in the socket: fenced
 * at once, the node would drop a lease it still holds and stop the shard's work for nothing.
 * Judged after reading, that renew counts from the time it was sent, which is as safe as
 * any other renew.
 */
import type { KV } from '@nats-io/kv';
import { isWrongSequence } from './shard-kv.js';

/**
 * starting: lease created, listener.acquire running. running: work runs (owned).
 * releasing: listener.release running, lease still renewed. dropping: work stopped, lease
 * being deleted. lost: fenced or taken; work stopped or being stopped, never renewed.
 */
type Phase = 'starting' | 'running' | 'releasing' | 'dropping' | 'lost';

export interface Lease {
  shard: number;
  key: string;
  value: string;
  rev: number;
  /** performance.now() when the last successful write of this lease was sent. */
  renewedAt: number;
  phase: Phase;
  renewing: Promise<void> | null;
  retry: boolean;
}

export interface KeepOptions {
  kv: KV;
  fenceMs: number;
  renewEveryMs: number;
  /** The lease can no longer be trusted: stop its work now. */
  lose(l: Lease, why: string): void;
  /** Monotonic ms, the clock of `Lease.renewedAt` (default `performance.now`); tests drive it. */
  now?: () => number;
  /** Runs its argument once pending I/O was read (default `setImmediate`); tests drive it. */
  afterIo?: (fn: () => void) => void;
}

const monotonic = () => performance.now();

const kept = (l: Lease) => l.phase === 'starting' || l.phase === 'running' || l.phase === 'releasing';

export function keepLeases(held: Iterable<Lease>, o: KeepOptions): void {
  const clock = o.now ?? monotonic;
  const now = clock();
  const overdue: Lease[] = [];
  for (const l of held) {
    if (!kept(l)) continue;
    if (now - l.renewedAt > o.fenceMs) {
      overdue.push(l);
      continue;
    }
    if (!l.renewing && (l.retry || now - l.renewedAt >= o.renewEveryMs)) renew(l, o);
  }
  if (overdue.length === 0) return;
  (o.afterIo ?? setImmediate)(() => {
    // A renew answered meanwhile moved renewedAt; the clock is read again, so waiting never widens the window.
    const later = clock();
    for (const l of overdue) {
      if (kept(l) && later - l.renewedAt > o.fenceMs)
        o.lose(l, 'no successful renew within the safety window; fencing before the lease can expire');
    }
  });
}

function renew(l: Lease, o: KeepOptions): void {
  const sentAt = (o.now ?? monotonic)();
  l.retry = false;
  l.renewing = o.kv
    .update(l.key, l.value, l.rev)
    .then(
      (rev) => {
        l.rev = rev;
        l.renewedAt = sentAt;
      },
      async (err: unknown) => {
        l.retry = true;
        if (!isWrongSequence(err)) return; // transient: retried next tick, fenced if it lasts
        // A renew that timed out may still have landed: then the key holds our value at a
        // newer revision. Adopt the revision but not a newer renew time (we cannot know it).
        const e = await o.kv.get(l.key).catch(() => undefined);
        if (e === undefined) return;
        if (e !== null && e.operation === 'PUT' && e.string() === l.value) l.rev = e.revision;
        else o.lose(l, 'lease expired or taken by another node');
      },
    )
    .finally(() => {
      l.renewing = null;
    });
}
