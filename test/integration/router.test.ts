/** Actor routing over real NATS request/reply: replies, errors, shard handover, no widening. */
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ActorUnavailable, Conflict, RateLimited, notStarted } from '../../src/errors.js';
import { createLogger } from '../../src/log.js';
import { names as makeNames, shardOf, type ActorKey, type Names } from '../../src/runtime/names.js';
import { LivenessProbe } from '../../src/runtime/liveness-probe.js';
import { Router } from '../../src/runtime/router.js';
import { serveShard, type ActorRequest } from '../../src/runtime/serve-shard.js';
import type { KeyOf } from '../../src/runtime/ports.js';
import { runWithWaitBudget, WaitBudget } from '../../src/wait-budget.js';
import { freshNamespace, testNatsUrl } from '../support/env.js';
import { until } from '../support/until.js';

const SHARDS = 4;
const log = createLogger({ level: 'silent', node: 'test' });

describe('integration: router', () => {
  let nc: NatsConnection;
  let names: Names;
  let router: Router;
  const stops: Array<{ stop(): Promise<void> }> = [];

  beforeAll(async () => {
    nc = await connect({ servers: testNatsUrl() });
  });

  // A namespace per test: a server left behind by one test can never answer another's asks.
  beforeEach(() => {
    names = makeNames(freshNamespace('rt'));
    router = new Router({ nc, names, shards: SHARDS, log });
  });

  afterAll(async () => {
    await Promise.all(stops.map((s) => s.stop()));
    await nc.drain();
  });

  /** Serve every shard with one handler (the test plays all owners). */
  function serveAll(handler: (req: ActorRequest) => Promise<unknown>): { stop(): Promise<void> } {
    const servers = Array.from({ length: SHARDS }, (_, shard) => serveShard({ nc, names, shard, log, handler }));
    const all = { stop: () => Promise.all(servers.map((s) => s.stop())).then(() => undefined) };
    stops.push(all);
    return all;
  }

  it('ask gets the handler reply', async () => {
    const s = serveAll(async (req) => ({ echo: req.msg.n, key: req.key }));
    const key: KeyOf<{ ping: { msg: { n: number }; answer: { echo: number; key: string } } }> = {
      kind: 'install',
      id: ['i1'],
    };
    const reply = await router.ask(key, { type: 'ping', n: 7 });
    expect(reply).toEqual({ echo: 7, key: 'install/i1' });
    await s.stop();
  });

  it('resends a message the old owner rejected before it started, but never one that ran', async () => {
    let calls = 0;
    const s = serveAll(async (req) => {
      calls++;
      if (req.msg.type === 'moving' && calls === 1) throw notStarted('actor passivated, retry');
      if (req.msg.type === 'ran') throw new ActorUnavailable('aborted mid-run');
      return { calls };
    });
    const key: ActorKey = { kind: 'install', id: ['moving'] };
    await expect(router.ask(key, { type: 'moving' }, { timeoutMs: 3000 })).resolves.toEqual({ calls: 2 });
    calls = 0;
    await expect(router.ask(key, { type: 'ran' }, { timeoutMs: 3000 })).rejects.toMatchObject({
      kind: 'ActorUnavailable',
    });
    expect(calls).toBe(1);
    await s.stop();
  });

  it('a handler error reaches the caller with its kind and code', async () => {
    const s = serveAll(async (req) => {
      if (req.msg.type === 'rl') throw new RateLimited('slow down', 3);
      throw new Conflict('taken', { code: 'workspace_already_installed' });
    });
    const key: ActorKey = { kind: 'install', id: ['i2'] };
    await expect(router.ask(key, { type: 'x' })).rejects.toMatchObject({
      kind: 'Conflict',
      code: 'workspace_already_installed',
    });
    await expect(router.ask(key, { type: 'rl' })).rejects.toMatchObject({
      kind: 'RateLimited',
      code: 'rate_limited',
      retryAfterS: 3,
    });
    await expect(router.ask(key, { type: 'boom' }).catch((e) => e)).resolves.toBeInstanceOf(Conflict);
    await s.stop();
  });

  it('retries while nobody answers and succeeds once a responder appears', async () => {
    const key: ActorKey = { kind: 'install', id: ['late'] };
    let s: { stop(): Promise<void> } | null = null;
    let servedFrom: number | null = null;
    const timer = setTimeout(() => {
      s = serveShard({ nc, names, shard: shardOf(key, SHARDS), log, handler: async () => 'here' });
      servedFrom = Date.now();
      stops.push(s);
    }, 1_000);
    // The deadline is generous: what is checked is that asks sent while nobody answered did
    // not fail the call, and a later one reached the responder once it appeared.
    const reply = await router.ask(key, { type: 'ping' }, { timeoutMs: 10_000 });
    const answeredAt = Date.now();
    clearTimeout(timer);
    await (s as { stop(): Promise<void> } | null)?.stop();
    expect(reply).toBe('here');
    expect(servedFrom).not.toBeNull();
    expect(answeredAt).toBeGreaterThanOrEqual(servedFrom!);
  });

  it('throws ActorUnavailable at the deadline when nobody ever answers', async () => {
    const started = Date.now();
    const err = await router
      .ask({ kind: 'install', id: ['nobody'] }, { type: 'ping' }, { timeoutMs: 1_200 })
      .catch((e) => e);
    const took = Date.now() - started;
    expect(err).toMatchObject({ kind: 'ActorUnavailable', code: 'unavailable' });
    // Kept trying until the deadline, not giving up at the first "no responders".
    expect(took).toBeGreaterThanOrEqual(1_150);
    // The deadline must fire: the call ends near its 1.2 s, not at some later internal timeout
    // (the only upper bound here; wide, for a loaded CI machine).
    expect(took).toBeLessThan(1_200 + 5_000);
  });

  it('with unownedMs, nobody holding the shard answers ActorUnavailable with Retry-After before the deadline', async () => {
    const started = Date.now();
    const err = await router
      .ask({ kind: 'install', id: ['nobody'] }, { type: 'ping' }, { timeoutMs: 60_000, unownedMs: 500 })
      .catch((e) => e);
    // The give-up says when to come back; the deadline's ActorUnavailable does not.
    expect(err).toMatchObject({ kind: 'ActorUnavailable', code: 'unavailable', retryAfterS: 1 });
    expect(Date.now() - started).toBeGreaterThanOrEqual(500);
    expect(Date.now() - started).toBeLessThan(60_000);
  });

  it("a dependency whose check was refused once and then answers does not end a request's ask", async () => {
    // Postgres refuses the first check (its connection was being re-established), then answers.
    let checks = 0;
    const postgres = new LivenessProbe('Postgres', async () => {
      if (++checks === 1) throw new Error('Connection terminated unexpectedly');
    });
    router = new Router({ nc, names, shards: SHARDS, log, dependencies: [postgres] });
    let answer!: () => void;
    const held = new Promise<void>((r) => (answer = r));
    serveAll(async () => {
      await held; // the actor's work outlasts the request's budget
      return 'done';
    });
    const budget = new WaitBudget(2_000);
    let settled = false;
    const asked = runWithWaitBudget(budget, () => router.ask({ kind: 'install', id: ['slow-work'] }, { type: 'ping' }));
    void asked.then(
      () => (settled = true),
      () => (settled = true),
    );
    try {
      // Checks every 250 ms that all answer: past the budget's 2 s of them, the ask still waits.
      await until('ten checks of Postgres (or the ask ended)', () => settled || checks >= 10, { timeoutMs: 15_000 });
    } finally {
      answer();
    }
    await expect(asked).resolves.toBe('done');
  });

  it("a dependency refusing every check ends a request's ask with 503 naming it", async () => {
    const postgres = new LivenessProbe('Postgres', () => Promise.reject(new Error('ECONNREFUSED')));
    router = new Router({ nc, names, shards: SHARDS, log, dependencies: [postgres] });
    let answer!: () => void;
    const held = new Promise<void>((r) => (answer = r));
    serveAll(async () => {
      await held;
      return 'done';
    });
    const asked = runWithWaitBudget(new WaitBudget(500), () =>
      router.ask({ kind: 'install', id: ['refused'] }, { type: 'ping' }, { timeoutMs: 30_000 }),
    );
    try {
      const err = (await asked.catch((e: unknown) => e)) as { code?: string; message?: string; details?: unknown };
      expect(err).toMatchObject({ code: 'unavailable', message: expect.stringMatching(/^Postgres /) });
      // The 503 says how long the request waited: its silence, not only its statements.
      expect((err.details as { waited_ms: number }).waited_ms).toBeGreaterThanOrEqual(400);
    } finally {
      answer();
    }
  });

  it("an idempotent ask resent while a dependency is silent gets only what is left of the request's 2 s", async () => {
    // Postgres answers the first check, then goes silent: its silence starts a round after the ask.
    let checks = 0;
    const postgres = new LivenessProbe('Postgres', () => (++checks === 1 ? Promise.resolve() : new Promise(() => {})));
    router = new Router({ nc, names, shards: SHARDS, log, dependencies: [postgres] });
    let answer!: () => void;
    const held = new Promise<void>((r) => (answer = r));
    serveAll(async () => {
      await held; // never answers within the test: each attempt's window (2 s) runs out
      return 'done';
    });
    const started = performance.now();
    const asked = runWithWaitBudget(new WaitBudget(2_000), () =>
      router.ask({ kind: 'install', id: ['resent'] }, { type: 'ping' }, { timeoutMs: 15_000, idempotent: true }),
    );
    try {
      await expect(asked).rejects.toMatchObject({ code: 'unavailable', message: expect.stringMatching(/^Postgres /) });
    } finally {
      answer();
    }
    // The attempt window (2 s) ends before the silence has lasted 2 s; the resend used to start
    // the silence count again (4.2 s). 250 ms of answered checks, then 2 s of silence.
    expect(performance.now() - started).toBeLessThan(3_000);
  });

  it('a received but unanswered request is DeadlineExceeded, not retried', async () => {
    const key: ActorKey = { kind: 'install', id: ['slow'] };
    let calls = 0;
    let answer!: () => void;
    const held = new Promise<void>((r) => (answer = r));
    const s = serveShard({
      nc,
      names,
      shard: shardOf(key, SHARDS),
      log,
      handler: async () => {
        calls++;
        await held; // answers only after the caller's deadline
        return 'late';
      },
    });
    stops.push(s);
    const err = await router.ask(key, { type: 'ping' }, { timeoutMs: 500 }).catch((e) => e);
    expect(err).toMatchObject({ kind: 'DeadlineExceeded' });
    expect(calls).toBe(1);
    answer();
    await s.stop();
  });

  it('ids with ".", "*", ">" and spaces reach only their own key', async () => {
    const ids = ['a', 'a.b', 'a.*', 'a.>', '*', '>', 'a b', ' ', 'a/b', 'ä.ö'];
    const seen: string[] = [];
    const s = serveAll(async (req) => {
      seen.push(req.key);
      return req.key;
    });
    // A plain subscriber on the exact subject of key "a" must see only the ask for "a".
    const plainA = nc.subscribe(
      names.actorSubject(shardOf({ kind: 'install', id: ['a'] }, SHARDS), { kind: 'install', id: ['a'] }),
    );
    let plainHits = 0;
    void (async () => {
      for await (const _ of plainA) plainHits++;
    })();
    await nc.flush();
    for (const id of ids) {
      const key: ActorKey = { kind: 'install', id: [id] };
      await expect(router.ask(key, { type: 'who' })).resolves.toBe(`install/${id}`);
    }
    await nc.flush();
    expect(seen).toEqual(ids.map((id) => `install/${id}`));
    expect(plainHits).toBe(1);
    const subjects = ids.map((id) => names.actorSubject(0, { kind: 'install', id: [id] }));
    expect(new Set(subjects).size).toBe(ids.length);
    for (const subj of subjects)
      expect(
        subj
          .split('.')
          .slice(3)
          .every((t) => t !== '*' && t !== '>' && !/\s/.test(t)),
      ).toBe(true);
    plainA.unsubscribe();
    await s.stop();
  });

  it('stop() waits for in-flight handlers to reply', async () => {
    const key: ActorKey = { kind: 'install', id: ['drain'] };
    let running = false;
    let finished = false;
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const s = serveShard({
      nc,
      names,
      shard: shardOf(key, SHARDS),
      log,
      handler: async () => {
        running = true;
        await held; // a handler's work, still going when stop() begins
        finished = true;
        return 'done';
      },
    });
    const pending = router.ask(key, { type: 'ping' }, { timeoutMs: 5_000 });
    await until('the handler running', () => running);
    let stopped = false;
    const stopping = s.stop().then(() => (stopped = true));
    // Event-loop turns with the handler held: a stop that did not wait would have ended by now.
    for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
    expect(stopped).toBe(false);
    release();
    await stopping;
    expect(finished).toBe(true);
    await expect(pending).resolves.toBe('done');
  });
});
