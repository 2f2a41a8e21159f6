/**
 * integration: an ask caught by its node's death (found by the end-to-end failover test).
 * The node that received the request dies without answering; an `idempotent` ask is sent
 * again and answered by the shard's next owner, a plain ask stays `DeadlineExceeded`
 * because its handler may have acted (router.ts). With the replay fence (replay-guard.ts),
 * a plain ask the dying node never admitted (killed as the request arrived) is withdrawn and
 * answered by the next owner; one it admitted is still never sent again.
 */
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.js';
import { names as makeNames, shardOf, type ActorKey } from '../../src/runtime/names.js';
import { openKv } from '../../src/runtime/nats.js';
import { openReplayBuckets, replayGuard, withdrawer, type ReplayGuard } from '../../src/runtime/replay-guard.js';
import { Router } from '../../src/runtime/router.js';
import { serveShard } from '../../src/runtime/serve-shard.js';
import { freshNamespace, testNatsUrl } from '../support/env.js';

const SHARDS = 4;
const log = createLogger({ level: 'silent', node: 'test' });

describe('integration: router across an owner that dies mid-request', () => {
  let caller: NatsConnection;
  const conns: NatsConnection[] = [];
  const stops: Array<{ stop(): Promise<void> }> = [];

  beforeAll(async () => {
    caller = await connect({ servers: testNatsUrl() });
  });

  afterAll(async () => {
    await Promise.all(stops.map((s) => s.stop().catch(() => undefined)));
    for (const c of conns) if (!c.isClosed()) await c.close();
    await caller.close();
  });

  /**
   * An owner on its own connection that receives, never answers, and "dies" (its connection
   * closes) on the first request; a second owner subscribes once the first is gone.
   */
  async function dyingOwnerThenSuccessor(
    key: ActorKey,
    names: ReturnType<typeof makeNames>,
    opts: { replay?: ReplayGuard; unread?: boolean } = {},
  ) {
    const shard = shardOf(key, SHARDS);
    const first = await connect({ servers: testNatsUrl() });
    conns.push(first);
    const calls = { first: 0, second: 0 };
    let successorUp: Promise<void> | null = null;
    const replay = opts.replay ?? null;
    const die = () => {
      calls.first++;
      // Die with the request in hand, like kill -9; the next owner takes over 300 ms later.
      successorUp ??= (async () => {
        await first.close();
        await new Promise((r) => setTimeout(r, 300));
        const second = await connect({ servers: testNatsUrl() });
        conns.push(second);
        stops.push(
          serveShard({
            nc: second,
            names,
            shard,
            log,
            replay,
            handler: async () => {
              calls.second++;
              return { ok: true };
            },
          }),
        );
      })();
      return new Promise<never>(() => undefined);
    };
    // `unread`: killed as the request arrived, before its fence admitted it; else admitted, then killed.
    if (opts.unread) first.subscribe(names.actorShardWildcard(shard), { queue: 'owner', callback: () => void die() });
    else serveShard({ nc: first, names, shard, log, replay, handler: die });
    await first.flush();
    return { calls, successor: () => successorUp };
  }

  it('an idempotent ask is answered by the next owner within its deadline', async () => {
    const names = makeNames(freshNamespace('rtd'));
    const router = new Router({ nc: caller, names, shards: SHARDS, log });
    const key: ActorKey = { kind: 'install', id: ['dies-mid-request'] };
    const { calls, successor } = await dyingOwnerThenSuccessor(key, names);
    const reply = await router.ask(key, { type: 'refresh' }, { timeoutMs: 8_000, idempotent: true });
    await successor();
    // Answered at all means resent before the 8 s deadline (a resend at the deadline would be
    // DeadlineExceeded), and by the successor alone.
    expect(reply).toEqual({ ok: true });
    expect(calls).toEqual({ first: 1, second: 1 });
  });

  it('a plain ask is not resent: DeadlineExceeded, the successor never sees it', async () => {
    const names = makeNames(freshNamespace('rtd'));
    const router = new Router({ nc: caller, names, shards: SHARDS, log });
    const key: ActorKey = { kind: 'install', id: ['dies-mid-emit'] };
    const { calls, successor } = await dyingOwnerThenSuccessor(key, names);
    const err = await router.ask(key, { type: 'emit' }, { timeoutMs: 3_000 }).catch((e: unknown) => e);
    await successor();
    expect(err).toMatchObject({ kind: 'DeadlineExceeded', code: 'unavailable' });
    expect(calls).toEqual({ first: 1, second: 0 });
  });

  /** A router and a replay fence over one namespace's buckets, as a node has them. */
  async function fenced(prefix: string) {
    const names = makeNames(freshNamespace(prefix));
    const buckets = await openReplayBuckets((name, o) => openKv(caller, name, o), names);
    const replay = replayGuard(buckets, { log });
    const router = new Router({ nc: caller, names, shards: SHARDS, log, withdraw: withdrawer(buckets) });
    return { names, replay, router };
  }

  it('a plain ask its dying node never admitted is withdrawn and answered by the next owner', async () => {
    const { names, replay, router } = await fenced('rtw');
    const key: ActorKey = { kind: 'install', id: ['killed-as-it-arrived'] };
    const { calls, successor } = await dyingOwnerThenSuccessor(key, names, { replay, unread: true });
    const reply = await router.ask(key, { type: 'emit' }, { timeoutMs: 20_000 });
    await successor();
    // Answered at all means withdrawn and sent again: the first attempt alone would wait out the 20 s.
    expect(reply).toEqual({ ok: true });
    expect(calls).toEqual({ first: 1, second: 1 });
  });

  it('a plain ask its dying node admitted is still not resent: DeadlineExceeded', async () => {
    const { names, replay, router } = await fenced('rtw');
    const key: ActorKey = { kind: 'install', id: ['killed-while-handling'] };
    const { calls, successor } = await dyingOwnerThenSuccessor(key, names, { replay });
    const err = await router.ask(key, { type: 'emit' }, { timeoutMs: 3_000 }).catch((e: unknown) => e);
    await successor();
    expect(err).toMatchObject({ kind: 'DeadlineExceeded', code: 'unavailable' });
    expect(calls).toEqual({ first: 1, second: 0 });
  });
});
