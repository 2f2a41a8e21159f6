/**
 * No replay of sealed actor requests (issue 32 item 3) at the router, on real NATS: a
 * request captured on the wire and published again is refused by whichever node serves the
 * shard then (the ids live in KV, not in one node's memory), while the router's own resends
 * (a new id each) still go through.
 */
import { jetstreamManager } from '@nats-io/jetstream';
import { connect, type Msg, type MsgHdrs, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { notStarted } from '../../src/errors.js';
import { createLogger } from '../../src/log.js';
import { names as makeNames, shardOf, type ActorKey, type Names } from '../../src/runtime/names.js';
import { openKv } from '../../src/runtime/nats.js';
import { openReplayBuckets, replayGuard, withdrawer, type ReplayBuckets } from '../../src/runtime/replay-guard.js';
import { Router } from '../../src/runtime/router.js';
import { serveShard, type ActorRequest } from '../../src/runtime/serve-shard.js';
import { createSeal } from '../../src/runtime/seal.js';
import { TEST_MASTER_KEY, freshNamespace, testNatsUrl } from '../support/env.js';
import { until } from '../support/until.js';

const SHARDS = 2;
const log = createLogger({ level: 'silent', node: 'test' });
const seal = createSeal([TEST_MASTER_KEY]);
const enc = new TextEncoder();
const dec = new TextDecoder();
const key: ActorKey = { kind: 'install-writes', id: ['i-replay'] };

let nc: NatsConnection;
let names: Names;
let buckets: ReplayBuckets;
let router: Router;
const stops: Array<{ stop(): Promise<void> }> = [];
const made: Names[] = [];

beforeAll(async () => {
  nc = await connect({ servers: testNatsUrl() });
});
beforeEach(async () => {
  names = makeNames(freshNamespace('rp'));
  made.push(names);
  buckets = await openReplayBuckets((name, o) => openKv(nc, name, o), names);
  router = new Router({ nc, names, shards: SHARDS, log, seal });
});
afterAll(async () => {
  await Promise.all(stops.map((s) => s.stop()));
  await nc.drain();
});

/** One node's server for `key`'s shard, with its own guard over the shared buckets. */
function node(handler: (req: ActorRequest) => Promise<unknown>, counts = { replays: 0 }) {
  const replay = replayGuard(buckets, { log, onReplay: () => counts.replays++ });
  const s = serveShard({ nc, names, shard: shardOf(key, SHARDS), log, handler, seal, replay });
  stops.push(s);
  return s;
}

/** Every request on `key`'s subject, as a client of the deployment's NATS sees them (the test's own included). */
function tap(): Msg[] {
  const seen: Msg[] = [];
  nc.subscribe(names.actorSubject(shardOf(key, SHARDS), key), { callback: (_e, m) => void seen.push(m) });
  return seen;
}

async function publishAgain(m: { data: Uint8Array; headers?: MsgHdrs }): Promise<unknown> {
  const reply = await nc.request(names.actorSubject(shardOf(key, SHARDS), key), m.data, {
    timeout: 10_000,
    ...(m.headers ? { headers: m.headers } : {}),
  });
  return JSON.parse(dec.decode(reply.data));
}

describe('integration: replayed actor requests', () => {
  it("is refused by the shard's next owner after a failover, and counted there", async () => {
    const seen = tap();
    await nc.flush();
    let ran = 0;
    const countsB = { replays: 0 };
    const a = node(async () => ++ran);
    expect(await router.ask(key, { type: 'emit' }, { timeoutMs: 20_000 })).toBe(1);
    await until('the request seen on the wire', () => seen.length === 1);
    await a.stop();
    node(async () => ++ran, countsB);

    expect(await publishAgain(seen[0]!)).toMatchObject({ ok: false, error: { code: 'unauthorized' } });
    expect(ran).toBe(1);
    expect(countsB.replays).toBe(1);
    // The deployment's own next request (a new id) is served.
    expect(await router.ask(key, { type: 'emit' }, { timeoutMs: 20_000 })).toBe(2);
  });

  it("lets the router's resend through (a new id) after the owner refused before starting", async () => {
    const seen = tap();
    await nc.flush();
    let calls = 0;
    node(async () => {
      if (++calls === 1) throw notStarted('passivating, retry');
      return calls;
    });
    expect(await router.ask(key, { type: 'emit' }, { timeoutMs: 20_000 })).toBe(2);
    await until('both attempts seen', () => seen.length === 2);
    const ids = seen.map((m) => (JSON.parse(dec.decode(m.data)) as { rid: string }).rid);
    expect(ids[0]).not.toBe(ids[1]);
    // Each attempt's id was recorded: both are refused now.
    for (const m of seen.slice(0, 2))
      expect(await publishAgain(m)).toMatchObject({ ok: false, error: { code: 'unauthorized' } });
    expect(calls).toBe(2);
  });

  it('keeps a long ask in the long bucket, and refuses ids that are malformed or outlive their bucket', async () => {
    const seen = tap();
    await nc.flush();
    let ran = 0;
    node(async () => ++ran);
    expect(await router.ask(key, { type: 'tick' }, { timeoutMs: 5 * 60_000 })).toBe(1);
    await until('the tick seen on the wire', () => seen.length === 1);
    const rid = (JSON.parse(dec.decode(seen[0]!.data)) as { rid: string }).rid;
    expect(rid[0]).toBe('l');
    expect(await buckets.long.get(rid)).not.toBeNull();
    expect(await buckets.short.get(rid)).toBeNull();
    expect(await publishAgain(seen[0]!)).toMatchObject({ ok: false, error: { code: 'unauthorized' } });

    // Sealed (as a node of this deployment would), but wrong: never handled.
    const sealed = (body: Record<string, unknown>) => {
      const data = enc.encode(JSON.stringify({ key, msg: { type: 'emit' }, ...body }));
      return { data, headers: seal.headers(data) };
    };
    const soon = Date.now() + 20_000;
    expect(await publishAgain(sealed({ deadline: soon, rid: 'not-an-id' }))).toMatchObject({
      ok: false,
      error: { code: 'bad_request' },
    });
    // A short id whose deadline lies past what the short bucket remembers.
    const far = Date.now() + 10 * 60_000;
    expect(await publishAgain(sealed({ deadline: far, rid: `s${'A'.repeat(22)}` }))).toMatchObject({
      ok: false,
      error: { code: 'bad_request' },
    });
    expect(ran).toBe(1);
  });

  it('refuses an attempt its asker withdrew, as not started and not as a replay', async () => {
    let ran = 0;
    const counts = { replays: 0 };
    node(async () => ++ran, counts);
    const rid = `s${'W'.repeat(22)}`;
    expect(await withdrawer(buckets)(rid)).toBe(true);
    const data = enc.encode(JSON.stringify({ key, msg: { type: 'emit' }, deadline: Date.now() + 20_000, rid }));
    // The request reaches a node after its asker withdrew it (the asker sends it again with a new id).
    expect(await publishAgain({ data, headers: seal.headers(data) })).toMatchObject({
      ok: false,
      error: { code: 'unavailable', details: { not_started: true } },
    });
    expect(ran).toBe(0);
    expect(counts.replays).toBe(0);
    // An id a node admitted cannot be withdrawn any more.
    const seen = tap();
    await nc.flush();
    expect(await router.ask(key, { type: 'emit' }, { timeoutMs: 20_000 })).toBe(1);
    await until('the request seen on the wire', () => seen.length === 1);
    const admitted = (JSON.parse(dec.decode(seen[0]!.data)) as { rid: string }).rid;
    expect(await withdrawer(buckets)(admitted)).toBe(false);
  });

  it("refuses a replay of an earlier release's request (no id: its body's digest stands in)", async () => {
    let ran = 0;
    node(async () => ++ran);
    const data = enc.encode(JSON.stringify({ key, msg: { type: 'emit' }, deadline: Date.now() + 20_000 }));
    const old = { data, headers: seal.headers(data) };
    expect(await publishAgain(old)).toEqual({ ok: true, value: 1 });
    expect(await publishAgain(old)).toMatchObject({ ok: false, error: { code: 'unauthorized' } });
    expect(ran).toBe(1);
  });

  afterAll(async () => {
    // The buckets of these runs hold ids for up to 33 minutes; nobody needs them after the test.
    const jsm = await jetstreamManager(nc);
    for (const n of made)
      for (const b of [n.replayBucket, n.replayLongBucket]) await jsm.streams.delete(`KV_${b}`).catch(() => undefined);
  });
});
