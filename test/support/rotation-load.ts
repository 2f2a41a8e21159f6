/**
 * A steady load through every edge of a rolling cluster (issue 32 item 1: the rotation runs
 * "under load"): signed Slack events and API calls, alternating between the edges in
 * service, as a load balancer would send them. Before a node is stopped, `drain` takes it
 * out of service and waits for what was sent to it to be answered (a balancer's drain), so
 * a roll refuses nothing by design and any refusal is the service's. Every answer that is
 * not the expected 2xx is kept in `failures`; every event sent is kept in `sent`.
 */
import { messageEvent, nextTs, type FakeChannel, type FakeSlack, type FakeTeam } from 'connector-service/testing';
import { EVENTS_PATH } from '../../src/edge/routes/chatapp/events.js';
import type { TestNode } from './node.js';

export interface LoadTarget {
  team: FakeTeam;
  channel: FakeChannel;
  installId: string;
}

interface SentEvent {
  installId: string;
  /** The message node's external id (INTERFACE §5). */
  externalId: string;
}

export interface RotationLoad {
  /** Puts a (new) node in service. */
  serve(n: TestNode): void;
  /** Takes a node out of service and waits until every request sent to it was answered. */
  drain(n: TestNode): Promise<void>;
  stop(): Promise<void>;
  readonly sent: SentEvent[];
  readonly failures: string[];
  /** API calls answered 2xx so far. */
  readonly apiOk: () => number;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * `perS` of each (events and API calls). `keys`: the Authorization headers the API calls take
 * turns with (one of them hashed the old way, so its re-hash on use happens under load).
 */
export function startRotationLoad(o: {
  slack: FakeSlack;
  targets: LoadTarget[];
  keys: Array<Record<string, string>>;
  perS: number;
}): RotationLoad {
  const edges: TestNode[] = [];
  const inFlight = new Map<TestNode, Set<Promise<void>>>();
  const sent: SentEvent[] = [];
  const failures: string[] = [];
  let ok = 0;
  let running = true;
  let i = 0;

  const track = (n: TestNode, p: Promise<void>) => {
    const set = inFlight.get(n)!;
    const q = p.finally(() => set.delete(q));
    set.add(q);
  };
  const event = async (n: TestNode, k: number) => {
    const t = o.targets[k % o.targets.length]!;
    const msg = { ts: nextTs(), user: 'U1', text: `load ${k}` };
    // deliver() reads eventsUrl before its first await: setting it just before is atomic here.
    o.slack.eventsUrl = `${n.url}${EVENTS_PATH}`;
    const res = await o.slack.deliver(t.team.id, messageEvent(t.team, t.channel, msg));
    if (res.status !== 200) failures.push(`event ${k} through ${n.url}: ${res.status} ${await res.text()}`);
    else sent.push({ installId: t.installId, externalId: `${t.team.id}:${t.channel.id}:${msg.ts}` });
  };
  const call = async (n: TestNode, k: number) => {
    const res = await fetch(`${n.url}/api/v1/connectors/installs`, { headers: o.keys[k % o.keys.length]! });
    if (res.status !== 200) failures.push(`API call ${k} through ${n.url}: ${res.status} ${await res.text()}`);
    else ok++;
  };

  const loop = (async () => {
    for (let due = performance.now(); running; due += 1000 / o.perS) {
      const wait = due - performance.now();
      if (wait > 0) await sleep(wait);
      if (edges.length === 0) continue;
      const k = i++;
      const n = edges[k % edges.length]!;
      const guard = (p: Promise<void>) => p.catch((err: unknown) => void failures.push(`${k}: ${String(err)}`));
      track(n, guard(event(n, k)));
      track(n, guard(call(n, k)));
    }
  })();

  return {
    sent,
    failures,
    apiOk: () => ok,
    serve(n) {
      inFlight.set(n, new Set());
      edges.push(n);
    },
    async drain(n) {
      const at = edges.indexOf(n);
      if (at >= 0) edges.splice(at, 1);
      await Promise.all([...(inFlight.get(n) ?? [])]);
      inFlight.delete(n);
    },
    async stop() {
      running = false;
      await loop;
      for (const n of [...edges]) await this.drain(n);
    },
  };
}
