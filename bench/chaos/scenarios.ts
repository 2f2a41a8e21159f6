/**
 * The five faults (each bounded): (a) kill -9 a node and restart it, N times; (b) kill -9
 * the nats-server and restart it, N times; (c) stall Postgres through the proxy; (d) the
 * fake GitHub answers 502 to every write; (e) every node stopped while GitHub keeps
 * delivering (reconciliation must bring those deliveries in).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { waitFor } from '../ingest/processes.js';
import { SHARDS, type Cluster } from './cluster.js';

export interface Scale {
  nodeKills: number;
  natsKills: number;
  pgStallMs: number;
  githubOutageMs: number;
  allDownMs: number;
}

export const FULL: Scale = {
  nodeKills: 10,
  natsKills: 5,
  pgStallMs: 30_000,
  githubOutageMs: 60_000,
  allDownMs: 30_000,
};
export const QUICK: Scale = { nodeKills: 1, natsKills: 1, pgStallMs: 3_000, githubOutageMs: 3_000, allDownMs: 3_000 };

export type ScenarioId = 'a' | 'b' | 'c' | 'd' | 'e';

export const TITLES: Record<ScenarioId, string> = {
  a: 'kill -9 a node, restart it',
  b: 'kill -9 nats-server, restart it',
  c: 'Postgres stalled',
  d: 'GitHub 502 on every write',
  e: 'every node down, GitHub delivering',
};

async function until(what: string, fn: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await fn().catch(() => false))) {
    if (Date.now() > end) throw new Error(`chaos: timed out waiting for ${what}`);
    await sleep(100);
  }
}

const allReady = (c: Cluster) =>
  until(
    'every node ready',
    async () => {
      for (const n of c.nodes) if (n) await waitFor(n, '/readyz', 1_000);
      return true;
    },
    60_000,
  );

/** Runs the fault; returns the takeover time of each node kill (ms), else []. */
export async function runScenario(id: ScenarioId, c: Cluster, s: Scale): Promise<number[]> {
  const takeovers: number[] = [];
  switch (id) {
    case 'a':
      for (let k = 0; k < s.nodeKills; k++) {
        const i = k % 3;
        await c.kill(i);
        const t0 = performance.now();
        await until('survivors own every shard', async () => (await c.ownedTotal()) === SHARDS, 60_000);
        takeovers.push(performance.now() - t0);
        await c.start(i);
        await allReady(c);
        await sleep(1_000);
      }
      break;
    case 'b':
      for (let k = 0; k < s.natsKills; k++) {
        await c.nats.kill();
        await sleep(2_000);
        await c.nats.restart();
        await allReady(c);
        await sleep(2_000);
      }
      break;
    case 'c':
      c.proxy.pause();
      await sleep(s.pgStallMs);
      c.proxy.resume();
      await allReady(c);
      break;
    case 'd':
      for (const method of ['POST', 'PATCH', 'PUT', 'DELETE']) {
        c.gh.fail({ method, path: /^\/repos\//, status: 502, times: Number.MAX_SAFE_INTEGER });
      }
      await sleep(s.githubOutageMs);
      c.gh.clearFailures();
      break;
    case 'e':
      await Promise.all([0, 1, 2].map((i) => c.stopNode(i)));
      await sleep(s.allDownMs);
      for (let i = 0; i < 3; i++) await c.start(i);
      await allReady(c);
      break;
  }
  return takeovers;
}
