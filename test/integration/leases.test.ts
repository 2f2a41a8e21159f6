/**
 * integration: shard leases on a real nats-server (JetStream KV). The invariant under test
 * is ARCHITECTURE.md's **must**: two nodes never run the same shard's work at once.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { jetstreamManager } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.js';
import { names as makeNames, type Names } from '../../src/runtime/names.js';
import { checkServerVersion, openKv } from '../../src/runtime/nats.js';
import { redactUrl } from '../../src/runtime/nats-connect.js';
import { ShardManager } from '../../src/runtime/shard-manager.js';
import type { ShardListener } from '../../src/runtime/shard-ports.js';
import { freshNamespace, testNatsUrl } from '../support/env.js';
import { until } from '../support/until.js';

const S = 8;
const TTL = 3_000;
const RENEW = TTL / 3;
const nodeLog = (node: string) => createLogger({ level: process.env.TEST_LOG_LEVEL ?? 'silent', node });

/**
 * Who runs which shard's work, in the strict sense: from the moment `acquire` is called
 * until `release` has resolved. Any overlap between two nodes is a violation.
 */
class Ledger {
  readonly running = new Map<number, Set<string>>();
  readonly violations: string[] = [];

  listener(node: string, delayMs = 0): ShardListener {
    return {
      acquire: async (shard) => {
        const set = this.running.get(shard) ?? new Set<string>();
        if ([...set].some((n) => n !== node))
          this.violations.push(`shard ${shard}: ${node} started while ${[...set].join(',')} runs it`);
        set.add(node);
        this.running.set(shard, set);
        if (delayMs) await sleep(Math.random() * delayMs);
      },
      release: async (shard) => {
        if (delayMs) await sleep(Math.random() * delayMs);
        this.running.get(shard)?.delete(node);
      },
    };
  }
}

interface Node {
  id: string;
  nc: NatsConnection;
  m: ShardManager;
}

const namespaces: string[] = [];
const live: Node[] = [];
const children: ChildProcess[] = [];

function ns(label: string): Names {
  const n = makeNames(freshNamespace(label));
  namespaces.push(n.ns);
  return n;
}

async function startNode(names: Names, id: string, listener: ShardListener, shards = S): Promise<Node> {
  const nc = await connect({ servers: testNatsUrl(), name: id });
  const m = new ShardManager({
    nc,
    names,
    nodeId: id,
    shards,
    leaseTtlMs: TTL,
    renewEveryMs: RENEW,
    log: nodeLog(id),
    listener,
  });
  const node = { id, nc, m };
  live.push(node);
  try {
    await m.start();
  } catch (err) {
    await nc.close();
    throw err;
  }
  return node;
}

async function stopNode(n: Node): Promise<void> {
  await n.m.stop();
  if (!n.nc.isClosed()) await n.nc.close();
}

/** Samples every ~5 ms that no shard is in two managers' owned() sets. */
function ownershipChecker(nodes: () => Node[]): { stop(): string[] } {
  const violations: string[] = [];
  const timer = setInterval(() => {
    const seen = new Map<number, string>();
    for (const n of nodes()) {
      for (const s of n.m.owned()) {
        const other = seen.get(s);
        if (other !== undefined) violations.push(`shard ${s} owned by ${other} and ${n.id}`);
        seen.set(s, n.id);
      }
    }
  }, 5);
  return {
    stop: () => {
      clearInterval(timer);
      return violations;
    },
  };
}

/** Each shard's lease as the KV bucket holds it (null: absent, deleted or expired). */
async function leaseTable(
  nc: NatsConnection,
  names: Names,
): Promise<Array<{ node: string; value: string; revision: number } | null>> {
  const kv = await new Kvm(nc).open(names.leaseBucket);
  const out: Array<{ node: string; value: string; revision: number } | null> = [];
  for (let s = 0; s < S; s++) {
    const e = await kv.get(names.leaseKey(s));
    out.push(
      e !== null && e.operation === 'PUT'
        ? { node: e.json<{ node: string }>().node, value: e.string(), revision: e.revision }
        : null,
    );
  }
  return out;
}

const ownedBy = (nodes: Node[]) => nodes.flatMap((n) => n.m.owned());
const allOwnedOnce = (nodes: Node[]) => {
  const o = ownedBy(nodes);
  return o.length === S && new Set(o).size === S;
};

afterEach(async () => {
  await Promise.all(live.splice(0).map((n) => stopNode(n).catch(() => undefined)));
});

afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) killGroup(c, 'SIGKILL');
  const nc = await connect({ servers: testNatsUrl() });
  const jsm = await jetstreamManager(nc);
  for (const n of namespaces.map(makeNames)) {
    for (const b of [n.leaseBucket, n.nodeBucket, n.metaBucket]) await jsm.streams.delete(`KV_${b}`).catch(() => false);
  }
  await nc.close();
});

function killGroup(c: ChildProcess, sig: NodeJS.Signals): void {
  try {
    process.kill(-c.pid!, sig); // the group: npx, tsx and the node process running the manager
  } catch {
    c.kill(sig);
  }
}

describe('integration: shard leases', () => {
  it('a single node acquires all shards in its first round', async () => {
    const names = ns('l1');
    const ledger = new Ledger();
    const a = await startNode(names, 'a', ledger.listener('a'));
    expect(a.m.owned()).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(a.m.stats()).toMatchObject({ owned: S, liveNodes: 1, target: S });
    const first = await leaseTable(a.nc, names);
    expect(first.map((l) => l?.node)).toEqual(Array(S).fill('a'));
    // Renewals keep it: still all owned after more than a TTL, every lease the same one (same
    // value, so not expired and created again) at a later revision (renewed by CAS updates).
    // Real time must pass: the leases expire on the NATS server's clock.
    await sleep(TTL + RENEW);
    expect(a.m.owned()).toHaveLength(S);
    const later = await leaseTable(a.nc, names);
    for (let s = 0; s < S; s++) {
      expect(later[s]?.value).toBe(first[s]!.value);
      expect(later[s]!.revision).toBeGreaterThan(first[s]!.revision);
    }
    expect(ledger.violations).toEqual([]);
  });

  it('a node configured with another shard count refuses to start', async () => {
    const names = ns('l2');
    const ledger = new Ledger();
    await startNode(names, 'a', ledger.listener('a'));
    const acquired: number[] = [];
    const other: ShardListener = { acquire: async (s) => void acquired.push(s), release: async () => undefined };
    await expect(startNode(names, 'b', other, 16)).rejects.toMatchObject({
      code: 'shard_count_mismatch',
      stored: S,
      configured: 16,
    });
    expect(acquired).toEqual([]);
  });

  it('never runs a shard on two nodes through churn, graceful stops and lost connections', async () => {
    const names = ns('l3');
    const ledger = new Ledger();
    const slots: Array<Node | null> = [null, null, null];
    const zombies: Node[] = []; // connection closed under them: they must fence themselves
    let gen = 0;
    const everyone = () => [...(slots.filter(Boolean) as Node[]), ...zombies];
    const checker = ownershipChecker(everyone);
    const spawnSlot = async (i: number) => {
      const id = `n${i}-${gen++}`;
      slots[i] = await startNode(names, id, ledger.listener(id, 30));
    };
    await Promise.all([0, 1, 2].map(spawnSlot));

    const t0 = performance.now();
    let stops = 0;
    let crashes = 0;
    while (performance.now() - t0 < 7_000) {
      await sleep(200 + Math.random() * 400); // pacing the churn
      const i = Math.floor(Math.random() * 3);
      const n = slots[i];
      if (!n) {
        await spawnSlot(i);
      } else if ((stops + crashes) % 3 === 1) {
        await n.nc.close(); // like a partition: no renew can succeed any more
        zombies.push(n);
        slots[i] = null;
        crashes += 1;
      } else {
        await n.m.stop();
        slots[i] = null;
        stops += 1;
      }
    }
    for (const i of [0, 1, 2]) if (!slots[i]) await spawnSlot(i);
    const nodes = slots as Node[];
    // Zombies' heartbeats expire by TTL; then the three live nodes settle on 3/3/2. The waits are
    // wide: INTERFACE §8.24 gives a dead node's shards 15 s to answer again; the rest is rebalancing.
    await until('every shard owned exactly once', () => allOwnedOnce(nodes), { timeoutMs: 15_000 });
    const even = () =>
      nodes
        .map((n) => n.m.owned().length)
        .sort()
        .join() === '2,3,3' && allOwnedOnce(nodes);
    await until('an even share', even, { timeoutMs: 20_000 });
    const violations = checker.stop();
    expect(stops + crashes).toBeGreaterThan(5);
    expect(crashes).toBeGreaterThan(0);
    expect(zombies.every((z) => z.m.owned().length === 0)).toBe(true);
    expect(violations).toEqual([]);
    expect(ledger.violations).toEqual([]);
  }, 60_000);

  it('rebalances toward an even share when a node joins', async () => {
    const names = ns('l4');
    const ledger = new Ledger();
    const a = await startNode(names, 'a', ledger.listener('a'));
    expect(a.m.owned()).toHaveLength(S);
    const nodes = [a];
    const checker = ownershipChecker(() => nodes);
    const b = await startNode(names, 'b', ledger.listener('b'));
    nodes.push(b);
    // How fast is the benchmarks' business; here: it happens, and without overlap.
    await until('a 4/4 split', () => a.m.owned().length === S / 2 && b.m.owned().length === S / 2, {
      timeoutMs: 20 * RENEW,
    });
    const holders = (await leaseTable(a.nc, names)).map((l) => l?.node);
    expect(holders.filter((h) => h === 'a')).toHaveLength(S / 2);
    expect(holders.filter((h) => h === 'b')).toHaveLength(S / 2);
    expect(checker.stop()).toEqual([]);
    expect(ledger.violations).toEqual([]);
    expect(a.m.stats()).toMatchObject({ liveNodes: 2, target: S / 2 });
  });

  it('takes over the shards of a node killed with SIGKILL once its leases expire', async () => {
    const names = ns('l5');
    const child = spawn('npx', ['tsx', 'test/support/lease-node.ts'], {
      cwd: new URL('../..', import.meta.url).pathname,
      env: {
        ...process.env,
        LEASE_NATS_URL: testNatsUrl(),
        LEASE_NAMESPACE: names.ns,
        LEASE_NODE_ID: 'victim',
        LEASE_SHARDS: String(S),
        LEASE_TTL_MS: String(TTL),
      },
      detached: true, // own process group, so one kill reaches the real node process
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    children.push(child);
    let childOwned: number[] = [];
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const ev = JSON.parse(line) as { type: string; owned?: number[] };
      if (ev.owned) childOwned = ev.owned;
    });
    await until('the child to own every shard', () => childOwned.length === S, { timeoutMs: 30_000 });

    killGroup(child, 'SIGKILL');
    const killedAt = performance.now();
    const ledger = new Ledger();
    const b = await startNode(names, 'survivor', ledger.listener('survivor'));
    await until('the survivor to own every shard', () => b.m.owned().length === S, { timeoutMs: 30_000 });
    const takeoverMs = performance.now() - killedAt;
    console.log(
      `takeover after SIGKILL: ${(takeoverMs / 1000).toFixed(2)} s (TTL ${TTL / 1000} s, renew ${RENEW / 1000} s)`,
    );
    // Not before the victim's last renew could have expired: its leases were respected.
    expect(takeoverMs).toBeGreaterThan(TTL - RENEW - 250);
    // INTERFACE §8.24: after a node dies its actors answer again within 15 s (lease expiry plus
    // takeover). The only upper bound here, and a wide one: a 3 s TTL makes it about 4 s.
    expect(takeoverMs).toBeLessThan(15_000);
  }, 60_000);

  it('checks the server version and binds an existing bucket as it is', async () => {
    const nc = await connect({ servers: testNatsUrl() });
    try {
      expect(() => checkServerVersion(nc)).not.toThrow();
      const old = { info: { version: '2.8.4' } } as unknown as NatsConnection;
      expect(() => checkServerVersion(old)).toThrow(
        expect.objectContaining({ code: 'nats_server_unsupported', version: '2.8.4' }),
      );
      const names = ns('l7');
      const first = await openKv(nc, names.leaseBucket, { ttlMs: TTL });
      const again = await openKv(nc, names.leaseBucket, { ttlMs: 9_000, maxValueSize: 1024 });
      expect((await again.status()).ttl).toBe(TTL);
      await first.put('k', 'v');
      expect((await again.get('k'))?.string()).toBe('v');
      expect(redactUrl('nats://user:secret@127.0.0.1:4222')).toBe('nats://127.0.0.1:4222');
      expect(redactUrl('user:secret@host:4222')).toBe('host:4222');
    } finally {
      await nc.close();
    }
  });

  it('a graceful stop hands the shards over at once, not after the TTL', async () => {
    const names = ns('l6');
    const ledger = new Ledger();
    const a = await startNode(names, 'a', ledger.listener('a'));
    const b = await startNode(names, 'b', ledger.listener('b'));
    const checker = ownershipChecker(() => [a, b]);
    expect((await leaseTable(b.nc, names)).filter((l) => l?.node === 'a').length).toBeGreaterThan(0);
    await a.m.stop();
    expect(a.m.owned()).toEqual([]);
    // Handed over, not left to expire: once stop() resolved, no lease in the bucket names a
    // (each was deleted, or b has created it since), so b needs no TTL to pass to take them.
    expect((await leaseTable(b.nc, names)).filter((l) => l?.node === 'a')).toEqual([]);
    await until('b to own every shard', () => b.m.owned().length === S, { timeoutMs: 20 * RENEW });
    expect(checker.stop()).toEqual([]);
    expect(ledger.violations).toEqual([]);
  });
});
