/**
 * How the nodes committed during a run, from their own metrics (docs/architecture.md "How events
 * are committed"): how many ingest transactions, how many events and installs each, how long
 * each took, and how many were in flight on average (the commit slots' occupancy: at the
 * default 2 slots, a figure near 2 means installs waited for a transaction). Read from each
 * node's `/metrics` before and after a run; edge-only nodes commit nothing and add nothing.
 */
import type { Child } from './processes.js';

export interface CommitFigures {
  transactions: number;
  eventsPerTransaction: number;
  installsPerTransaction: number;
  msPerTransaction: number;
  /** Transactions in flight on average over the run (commit time per second of the run). */
  inFlight: number;
}

export interface CommitTotals {
  transactions: number;
  events: number;
  installs: number;
  seconds: number;
  /** When the totals were read (performance.now(), ms). */
  at: number;
}

/** The sum of every sample of `name` (all label sets) in a Prometheus text exposition. */
function sum(text: string, name: string): number {
  let total = 0;
  for (const m of text.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.eE+-]+)$`, 'gm'))) total += Number(m[1]);
  return total;
}

export async function commitTotals(nodes: Child[]): Promise<CommitTotals> {
  const texts = await Promise.all(
    nodes.map((n) =>
      fetch(`${n.url}/metrics`, { signal: AbortSignal.timeout(2_000) }).then(
        (r) => (r.ok ? r.text() : ''),
        () => '',
      ),
    ),
  );
  const at = performance.now();
  const all = (name: string) => texts.reduce((a, t) => a + sum(t, name), 0);
  return {
    transactions: all('connector_service_ingest_commit_seconds_count'),
    events: all('connector_service_ingest_batch_events_sum'),
    installs: all('connector_service_ingest_batch_installs_sum'),
    seconds: all('connector_service_ingest_commit_seconds_sum'),
    at,
  };
}

/** What happened between two readings; null when nothing was committed in between. */
export function commitFigures(before: CommitTotals, after: CommitTotals): CommitFigures | null {
  const transactions = after.transactions - before.transactions;
  const wallS = (after.at - before.at) / 1000;
  if (transactions <= 0 || wallS <= 0) return null;
  const seconds = after.seconds - before.seconds;
  return {
    transactions,
    eventsPerTransaction: (after.events - before.events) / transactions,
    installsPerTransaction: (after.installs - before.installs) / transactions,
    msPerTransaction: (seconds * 1000) / transactions,
    inFlight: seconds / wallS,
  };
}
