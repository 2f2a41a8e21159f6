/**
 * The client and the load of the churn scenario of INTERFACE §8.24 (issue 33's row): a
 * client calling once a second, each call retried round-robin over every node it knows
 * (dead ones included, as a client with a list of addresses does), 10 s per attempt and
 * 15 s per call; and a steady flow of signed Slack deliveries spread over the nodes.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { jetstream } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { connect } from '@nats-io/transport-node';
import { eventEnvelope, signedHeaders, type FakeSlack } from 'connector-service/testing';
import { names, shardOf, type ActorKey } from '../../src/runtime/names.js';
import { testNatsUrl } from './env.js';

const CALL_BUDGET_MS = 15_000;
const ATTEMPT_TIMEOUT_MS = 10_000;

export interface CallOutcome {
  what: string;
  startedAt: number;
  endedAt: number;
  ok: boolean;
  attempts: string[];
}

/** One call: attempts round-robin over `urls()` from `first`, until a 2xx or 15 s. */
export async function callWithRetries(
  what: string,
  urls: () => string[],
  first: number,
  attempt: (url: string, signal: AbortSignal) => Promise<Response>,
  on429?: (res: Response, at: number) => Promise<void>,
): Promise<CallOutcome> {
  const startedAt = Date.now();
  const attempts: string[] = [];
  for (let i = 0; Date.now() - startedAt < CALL_BUDGET_MS; i++) {
    const list = urls();
    const url = list[(first + i) % list.length]!;
    const left = CALL_BUDGET_MS - (Date.now() - startedAt);
    const t0 = Date.now();
    const res = await attempt(url, AbortSignal.timeout(Math.min(ATTEMPT_TIMEOUT_MS, left))).catch(
      (err: unknown) => (err as Error).name,
    );
    const took = Date.now() - t0;
    if (typeof res === 'string') attempts.push(`${url} ${res} ${took}ms`);
    else {
      attempts.push(`${url} ${res.status} ${took}ms`);
      if (res.status >= 200 && res.status < 300) {
        await res.arrayBuffer();
        return { what, startedAt, endedAt: Date.now(), ok: true, attempts };
      }
      if (res.status === 429 && on429) await on429(res, Date.now());
      else await res.arrayBuffer();
      const retryAfter = Number(res.headers.get('retry-after'));
      if (res.status === 429 && retryAfter > 0) await sleep(Math.min(retryAfter * 1000, 2_000));
    }
    await sleep(100);
  }
  return { what, startedAt, endedAt: Date.now(), ok: false, attempts };
}

/** Signed Slack message deliveries at `perSecond`, round-robin over `urls()`, until `stop()`. */
export function deliveryLoad(
  slack: FakeSlack,
  teamId: string,
  channelId: string,
  urls: () => string[],
  perSecond: number,
): { stop(): Promise<{ sent: number; ok: number }> } {
  let stopped = false;
  let sent = 0;
  let ok = 0;
  const inFlight = new Set<Promise<void>>();
  const loop = (async () => {
    const began = Date.now();
    for (let i = 0; !stopped; i++) {
      const due = began + (i * 1000) / perSecond;
      if (due > Date.now()) await sleep(due - Date.now());
      const list = urls();
      const url = `${list[i % list.length]}/api/v1/connectors/chatapp/events`;
      const ts = `${Math.floor(Date.now() / 1000)}.${String(i % 1_000_000).padStart(6, '0')}`;
      const event = {
        type: 'message',
        channel: channelId,
        channel_type: 'channel',
        user: 'ULOAD',
        text: `load ${i}`,
        ts,
      };
      const body = JSON.stringify(eventEnvelope(slack, teamId, event));
      sent++;
      const p = fetch(url, {
        method: 'POST',
        headers: signedHeaders(slack.signingSecret, body, 'valid'),
        body,
        signal: AbortSignal.timeout(3_000),
      })
        .then(async (r) => {
          await r.arrayBuffer();
          if (r.ok) ok++;
        })
        .catch(() => undefined)
        .finally(() => inFlight.delete(p));
      inFlight.add(p);
    }
  })();
  return {
    async stop() {
      stopped = true;
      await loop;
      await Promise.allSettled([...inFlight]);
      return { sent, ok };
    },
  };
}

/** The node id holding the lease of `key`'s shard now. */
export async function leaseHolderOf(namespace: string, key: ActorKey, shards: number): Promise<string | null> {
  const nc = await connect({ servers: testNatsUrl() });
  try {
    const kv = await new Kvm(jetstream(nc)).open(names(namespace).leaseBucket);
    const e = await kv.get(names(namespace).leaseKey(shardOf(key, shards)));
    return e && e.operation === 'PUT' ? (JSON.parse(e.string()) as { node: string }).node : null;
  } finally {
    await nc.close();
  }
}

/** How the lease of a killed owner's shard moved: ms after the kill it expired and was taken, and by whom. */
export interface LeaseMove {
  expiredMs: number | null;
  takenMs: number | null;
  by: string | null;
  /** Why the watch could not read the lease (it only observes: the test goes on without it). */
  failed?: string;
}

/**
 * Watches the lease of `key`'s shard from `killedAt` (every 25 ms, one connection) until
 * another node than `victim` holds it or `stop()`: when it disappeared and when it was taken.
 */
export function watchLeaseMove(
  namespace: string,
  key: ActorKey,
  shards: number,
  victim: string,
  killedAt: number,
): { stop(): Promise<LeaseMove> } {
  let stopped = false;
  const move: LeaseMove = { expiredMs: null, takenMs: null, by: null };
  const watching = (async () => {
    const nc = await connect({ servers: testNatsUrl() });
    try {
      const n = names(namespace);
      const kv = await new Kvm(jetstream(nc)).open(n.leaseBucket);
      while (!stopped && move.takenMs === null) {
        const e = await kv.get(n.leaseKey(shardOf(key, shards))).catch(() => undefined);
        const at = Date.now() - killedAt;
        if (e !== undefined) {
          const holder = e && e.operation === 'PUT' ? (JSON.parse(e.string()) as { node: string }).node : null;
          if (holder !== victim) move.expiredMs ??= at;
          if (holder !== null && holder !== victim) {
            move.takenMs = at;
            move.by = holder;
          }
        }
        await sleep(25);
      }
    } finally {
      await nc.close();
    }
  })().catch((err: unknown) => {
    // Never an unhandled rejection (vitest fails the whole run on one): the timeline says so instead.
    move.failed = String(err);
  });
  return {
    async stop() {
      stopped = true;
      await watching;
      return move;
    },
  };
}
