/**
 * actor: the kernel itself, with an in-memory actor kind whose ports (hydrate source,
 * onPassivate sink) are plain arrays and counters. Every kernel here runs on a manual clock
 * (idle passivation and message deadlines move only when a test advances it); nact still
 * schedules each turn with setImmediate, so the tests wait for those turns with `until`.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ActorOverloaded, ActorUnavailable, AppError, DeadlineExceeded, Internal, NotFound } from '../../src/errors.js';
import { createLogger } from '../../src/log.js';
import type { ActorDefinition, KernelOptions } from '../../src/runtime/actor-definition.js';
import { Kernel } from '../../src/runtime/kernel.js';
import type { ActorKey } from '../../src/runtime/names.js';
import { ManualClock } from '../support/clock.js';
import { until } from '../support/until.js';

interface Counter {
  n: number;
  seen: number[];
}

interface Deferred<T = void> {
  promise: Promise<T>;
  resolve: (v: T) => void;
}
function deferred<T = void>(): Deferred<T> {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/** Lets `n` turns of the event loop pass: a handler that takes a while, without real time. */
async function turns(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
}
const key = (...id: string[]): ActorKey => ({ kind: 'counter', id });
/** The clock of every kernel in this file; a deadline is read on it. */
let clock: ManualClock;
beforeEach(() => {
  clock = new ManualClock();
});
const soon = (ms = 2000) => ({ deadline: clock.now() + ms });

/** The rejection of p, or a failure if p resolved. */
async function rejection(p: Promise<unknown>): Promise<AppError> {
  return p.then(
    (v) => {
      throw new Error(`expected a rejection, got ${JSON.stringify(v)}`);
    },
    (e: unknown) => e as AppError,
  );
}

type CounterProtocol = {
  inc: { msg: { n: number; turns?: number; hold?: number }; answer: number };
  get: { msg: object; answer: Counter };
  reset: { msg: object; answer: number };
  missing: { msg: object; answer: never };
  boom: { msg: { hold?: number }; answer: never };
  waitForAbort: { msg: { hold: number }; answer: string };
};

/** A counter actor whose ports are in memory, with hooks to hold a handler or hydration open. */
function counterKind(over: Partial<ActorDefinition<Counter, CounterProtocol>> = {}) {
  const ports = {
    hydrations: [] as string[],
    passivated: [] as Array<{ key: string; state: Counter }>,
    hydrateGate: null as Deferred | null,
    hydrateError: null as unknown,
    holds: new Map<number, Deferred>(),
    running: 0,
    maxRunning: 0,
    signals: [] as AbortSignal[],
    /** waitForAbort handlers that saw their abort and run on. */
    aborted: 0,
  };
  const def: ActorDefinition<Counter, CounterProtocol> = {
    kind: 'counter',
    async hydrate(k) {
      ports.hydrations.push(k.id.join('/'));
      if (ports.hydrateGate) await ports.hydrateGate.promise;
      if (ports.hydrateError) {
        const e = ports.hydrateError;
        ports.hydrateError = null;
        throw e;
      }
      return { n: 0, seen: [] };
    },
    handlers: {
      async inc(ctx, msg) {
        ports.running++;
        ports.maxRunning = Math.max(ports.maxRunning, ports.running);
        ports.signals.push(ctx.signal);
        try {
          if (msg.turns) await turns(msg.turns);
          if (msg.hold !== undefined) await ports.holds.get(msg.hold)?.promise;
          ctx.state.n++;
          ctx.state.seen.push(msg.n);
          return ctx.state.n;
        } finally {
          ports.running--;
        }
      },
      async get(ctx) {
        return { ...ctx.state };
      },
      async reset(ctx) {
        ctx.state = { n: 100, seen: [] };
        return ctx.state.n;
      },
      async missing() {
        throw new NotFound('no such thing');
      },
      async boom(_ctx, msg) {
        if (msg.hold !== undefined) await ports.holds.get(msg.hold)?.promise;
        throw new TypeError('bug in handler');
      },
      async waitForAbort(ctx, msg) {
        ports.signals.push(ctx.signal);
        await new Promise((r) => ctx.signal.addEventListener('abort', r));
        ports.aborted++;
        await ports.holds.get(msg.hold)?.promise; // keeps running after the abort: the mailbox must wait for it
        return 'late';
      },
    },
    async onPassivate({ key: k, state }) {
      ports.passivated.push({ key: k.id.join('/'), state: structuredClone(state) });
    },
    ...over,
  };
  const hold = (id: number) => {
    const d = deferred();
    ports.holds.set(id, d);
    return d;
  };
  return { def, ports, hold };
}

const kernels: Kernel[] = [];
function makeKernel(opts: Partial<KernelOptions> = {}, logLines: Array<Record<string, unknown>> = []): Kernel {
  const log = createLogger(
    { level: 'debug', node: 'test' },
    { write: (s: string) => void logLines.push(JSON.parse(s)) },
  );
  const k = new Kernel({ log, clock, ...opts });
  kernels.push(k);
  return k;
}
afterEach(async () => {
  await Promise.all(kernels.splice(0).map((k) => k.stop()));
});

describe('Kernel', () => {
  it('runs one message at a time per key, in FIFO order, under concurrent dispatch', async () => {
    const { def, ports } = counterKind();
    const kernel = makeKernel();
    kernel.register(def);
    const results = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        kernel.dispatch(key('a'), { type: 'inc', n: i, turns: (i * 7) % 5 }, soon()),
      ),
    );
    expect(results).toEqual(Array.from({ length: 30 }, (_, i) => i + 1));
    expect(ports.maxRunning).toBe(1);
    const state = (await kernel.dispatch(key('a'), { type: 'get' }, soon())) as Counter;
    expect(state.seen).toEqual(Array.from({ length: 30 }, (_, i) => i));
    expect(ports.hydrations).toEqual(['a']);
  });

  it('runs different keys concurrently', async () => {
    const { def, ports, hold } = counterKind();
    const kernel = makeKernel();
    kernel.register(def);
    const held = hold(1);
    const a = kernel.dispatch(key('a'), { type: 'inc', n: 1, hold: 1 }, soon());
    await expect(kernel.dispatch(key('b'), { type: 'inc', n: 1 }, soon())).resolves.toBe(1);
    expect(ports.running).toBe(1); // a is still inside its handler
    held.resolve();
    await expect(a).resolves.toBe(1);
    expect(kernel.stats().activeByKind).toEqual({ counter: 2 });
  });

  it('on a crash rejects the failing message, rejects the queued ones and re-hydrates on the next', async () => {
    const { def, ports, hold } = counterKind();
    const lines: Array<Record<string, unknown>> = [];
    const kernel = makeKernel({}, lines);
    kernel.register(def);
    await kernel.dispatch(key('a'), { type: 'inc', n: 1 }, soon());
    const held = hold(1);
    const boom = kernel.dispatch(key('a'), { type: 'boom', hold: 1 }, soon());
    const queued = [1, 2].map((n) => kernel.dispatch(key('a'), { type: 'inc', n }, soon()));
    await until('two messages queued', () => kernel.stats().mailboxDepth === 2, { timeoutMs: 2000 });
    held.resolve();

    const err = await rejection(boom);
    expect(err).toBeInstanceOf(Internal);
    expect(err.code).toBe('internal');
    expect(err.cause).toBeInstanceOf(TypeError);
    for (const q of queued) expect(await rejection(q)).toBeInstanceOf(ActorUnavailable);
    expect(kernel.stats().active).toBe(0);
    expect(lines.some((l) => l.level === 'error' && l.actor === 'counter/a')).toBe(true);

    expect(await kernel.dispatch(key('a'), { type: 'get' }, soon())).toEqual({ n: 0, seen: [] });
    expect(ports.hydrations).toEqual(['a', 'a']);
    expect(ports.passivated).toEqual([]); // a crashed state is never flushed
  });

  it('an AppError rejects only its message; the activation keeps its state', async () => {
    const { def, ports } = counterKind();
    const kernel = makeKernel();
    kernel.register(def);
    await kernel.dispatch(key('a'), { type: 'inc', n: 1 }, soon());
    const err = await rejection(kernel.dispatch(key('a'), { type: 'missing' }, soon()));
    expect(err).toBeInstanceOf(NotFound);
    expect(err.code).toBe('not_found');
    await expect(kernel.dispatch(key('a'), { type: 'inc', n: 2 }, soon())).resolves.toBe(2);
    expect(ports.hydrations).toEqual(['a']);
  });

  it('keeps a state the handler replaced', async () => {
    const { def } = counterKind();
    const kernel = makeKernel();
    kernel.register(def);
    await kernel.dispatch(key('a'), { type: 'reset' }, soon());
    await expect(kernel.dispatch(key('a'), { type: 'inc', n: 1 }, soon())).resolves.toBe(101);
  });

  it('an unknown message type or kind is an Internal error, not a crash', async () => {
    const { def, ports } = counterKind();
    const kernel = makeKernel();
    kernel.register(def);
    await kernel.dispatch(key('a'), { type: 'inc', n: 1 }, soon());
    for (const type of ['nope', 'toString', 'constructor']) {
      expect(await rejection(kernel.dispatch(key('a'), { type }, soon()))).toBeInstanceOf(Internal);
    }
    expect(await rejection(kernel.dispatch({ kind: 'ghost', id: ['x'] }, { type: 'inc' }, soon()))).toBeInstanceOf(
      Internal,
    );
    await expect(kernel.dispatch(key('a'), { type: 'inc', n: 2 }, soon())).resolves.toBe(2);
    expect(ports.hydrations).toEqual(['a']);
  });

  it('a failed hydration rejects the triggering and queued messages with its error; the next message hydrates again', async () => {
    const { def, ports } = counterKind();
    const kernel = makeKernel();
    kernel.register(def);
    const gate = deferred();
    ports.hydrateGate = gate;
    ports.hydrateError = new NotFound('install gone');
    const first = kernel.dispatch(key('a'), { type: 'inc', n: 1 }, soon());
    const queued = kernel.dispatch(key('a'), { type: 'inc', n: 2 }, soon());
    await until(
      'one hydration and one message queued',
      () => ports.hydrations.length === 1 && kernel.stats().mailboxDepth === 1,
      {
        timeoutMs: 2000,
      },
    );
    gate.resolve();
    expect(await rejection(first)).toBeInstanceOf(NotFound);
    expect(await rejection(queued)).toBeInstanceOf(NotFound);
    expect(kernel.stats().active).toBe(0);

    ports.hydrateError = new Error('connection reset');
    const raw = await rejection(kernel.dispatch(key('a'), { type: 'inc', n: 3 }, soon()));
    expect(raw).toBeInstanceOf(Internal);
    expect((raw.cause as Error).message).toBe('connection reset');

    await expect(kernel.dispatch(key('a'), { type: 'inc', n: 4 }, soon())).resolves.toBe(1);
    expect(ports.hydrations).toEqual(['a', 'a', 'a']);
  });

  it('rejects with DeadlineExceeded, without running the handler, when the deadline passes before it starts', async () => {
    const { def, ports, hold } = counterKind();
    const kernel = makeKernel();
    kernel.register(def);
    expect(
      await rejection(kernel.dispatch(key('a'), { type: 'inc', n: 0 }, { deadline: clock.now() - 1 })),
    ).toBeInstanceOf(DeadlineExceeded);
    const held = hold(1);
    const first = kernel.dispatch(key('a'), { type: 'inc', n: 1, hold: 1 }, soon());
    const late = kernel.dispatch(key('a'), { type: 'inc', n: 2 }, { deadline: clock.now() + 30 });
    await until('the first handler running', () => ports.running === 1, { timeoutMs: 2000 });
    await clock.advance(29);
    expect(kernel.stats().mailboxDepth).toBe(1); // not yet at its deadline
    await clock.advance(1);
    // Settles at its deadline even though the handler ahead of it is still running.
    expect(await rejection(late)).toBeInstanceOf(DeadlineExceeded);
    expect(ports.running).toBe(1);
    held.resolve();
    await expect(first).resolves.toBe(1);
    const state = (await kernel.dispatch(key('a'), { type: 'get' }, soon())) as Counter;
    expect(state.seen).toEqual([1]);
    expect(ports.hydrations).toEqual(['a']);
  });

  it('aborts the signal at the deadline of a running handler and waits for it before the next message', async () => {
    const { def, ports, hold } = counterKind();
    const kernel = makeKernel();
    kernel.register(def);
    const held = hold(1);
    const slow = kernel.dispatch(key('a'), { type: 'waitForAbort', hold: 1 }, { deadline: clock.now() + 200 });
    const next = kernel.dispatch(key('a'), { type: 'inc', n: 1 }, soon());
    await until('the slow handler running', () => ports.signals.length === 1, { timeoutMs: 2000 });
    await clock.advance(200);
    const err = await rejection(slow);
    expect(err).toBeInstanceOf(DeadlineExceeded);
    expect(ports.signals[0]?.aborted).toBe(true);
    expect(ports.signals[0]?.reason).toBeInstanceOf(DeadlineExceeded);
    await until('the aborted handler running on', () => ports.aborted === 1, { timeoutMs: 2000 });
    // Turns of the event loop for a mailbox that did not wait to start inc; it must still wait.
    for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
    expect(ports.signals).toHaveLength(1); // inc has not started: the aborted handler still runs
    held.resolve();
    await expect(next).resolves.toBe(1);
    expect(ports.hydrations).toEqual(['a']); // a deadline is not a crash
  });

  it('rejects at once with ActorOverloaded when the mailbox is full', async () => {
    const { def, hold } = counterKind({ mailboxCapacity: 2 });
    const kernel = makeKernel();
    kernel.register(def);
    const held = hold(1);
    const running = kernel.dispatch(key('a'), { type: 'inc', n: 1, hold: 1 }, soon());
    await until('the mailbox empty', () => kernel.stats().mailboxDepth === 0, { timeoutMs: 2000 }); // taken off the mailbox
    const queued = [2, 3].map((n) => kernel.dispatch(key('a'), { type: 'inc', n }, soon()));
    const over = await rejection(kernel.dispatch(key('a'), { type: 'inc', n: 4 }, soon()));
    expect(over).toBeInstanceOf(ActorOverloaded);
    expect(over.retryable).toBe(true);
    expect(kernel.stats()).toEqual({ active: 1, mailboxDepth: 2, activeByKind: { counter: 1 } });
    held.resolve();
    await expect(Promise.all([running, ...queued])).resolves.toEqual([1, 2, 3]);
  });

  it('passivates an idle activation, calling onPassivate; the next message hydrates again', async () => {
    const { def, ports } = counterKind({ idleMs: 30 });
    const kernel = makeKernel();
    kernel.register(def);
    await kernel.dispatch(key('a'), { type: 'inc', n: 7 }, soon());
    expect(kernel.stats().active).toBe(1);
    await clock.advance(30);
    await until('one activation passivated', () => ports.passivated.length === 1, { timeoutMs: 2000 });
    expect(ports.passivated).toEqual([{ key: 'a', state: { n: 1, seen: [7] } }]);
    await until('no activation left', () => kernel.stats().active === 0, { timeoutMs: 2000 });
    await expect(kernel.dispatch(key('a'), { type: 'inc', n: 8 }, soon())).resolves.toBe(1);
    expect(ports.hydrations).toEqual(['a', 'a']);
  });

  it('idle passivation follows the kernel clock: not before idleMs after the last message, then at once', async () => {
    const { def, ports } = counterKind({ idleMs: 60_000 });
    const kernel = makeKernel();
    kernel.register(def);
    await kernel.dispatch(key('a'), { type: 'inc', n: 1 }, soon());
    await clock.advance(59_999);
    expect(ports.passivated).toEqual([]);
    // A message restarts the idle time: the first timer is gone, one new one is pending.
    await kernel.dispatch(key('a'), { type: 'inc', n: 2 }, soon());
    expect(clock.pending).toBe(1);
    await clock.advance(59_999);
    expect(ports.passivated).toEqual([]);
    expect(kernel.stats().active).toBe(1);
    await clock.advance(1);
    await until('the idle activation passivated', () => ports.passivated.length === 1, { timeoutMs: 2000 });
    expect(ports.passivated).toEqual([{ key: 'a', state: { n: 2, seen: [1, 2] } }]);
    expect(clock.pending).toBe(0);
  });

  it('a message arriving during onPassivate waits for it before hydrating (single writer)', async () => {
    const flushed = deferred();
    const events: string[] = [];
    const { def, ports } = counterKind({
      idleMs: 10,
      async onPassivate() {
        events.push('passivate:start');
        await flushed.promise;
        events.push('passivate:end');
      },
    });
    const kernel = makeKernel();
    kernel.register(def);
    await kernel.dispatch(key('a'), { type: 'inc', n: 1 }, soon());
    await clock.advance(10);
    expect(events).toEqual(['passivate:start']);
    const next = kernel.dispatch(key('a'), { type: 'inc', n: 2 }, soon());
    // A message to another key, sent later, is answered: the kernel moved on, and still did not hydrate 'a'.
    await kernel.dispatch(key('b'), { type: 'inc', n: 1 }, soon());
    expect(ports.hydrations).toEqual(['a', 'b']);
    flushed.resolve();
    await expect(next).resolves.toBe(1);
    expect(ports.hydrations).toEqual(['a', 'b', 'a']);
    expect(events).toEqual(['passivate:start', 'passivate:end']);
  });

  it('passivate(match) rejects queued messages, aborts and waits for the in-flight one, and leaves others alone', async () => {
    const { def, ports, hold } = counterKind();
    const kernel = makeKernel();
    kernel.register(def);
    await kernel.dispatch(key('b'), { type: 'inc', n: 1 }, soon());
    const held = hold(1);
    const inflight = kernel.dispatch(key('a'), { type: 'inc', n: 1, hold: 1 }, soon());
    const queued = [2, 3].map((n) => kernel.dispatch(key('a'), { type: 'inc', n }, soon()));
    await until('one message running', () => ports.running === 1, { timeoutMs: 2000 });

    let done = false;
    const passivated = kernel.passivate((k) => k.id[0] === 'a').then(() => (done = true));
    for (const q of queued) expect(await rejection(q)).toBeInstanceOf(ActorUnavailable);
    expect(ports.signals[1]?.aborted).toBe(true);
    expect(ports.signals[1]?.reason).toBeInstanceOf(ActorUnavailable);
    // A message to another key, sent later, is answered: the passivation still waits for the held one.
    await expect(kernel.dispatch(key('b'), { type: 'inc', n: 2 }, soon())).resolves.toBe(2);
    expect(done).toBe(false);

    held.resolve();
    await passivated;
    await expect(inflight).resolves.toBe(1); // it finished; its result still goes back
    expect(ports.passivated).toEqual([{ key: 'a', state: { n: 1, seen: [1] } }]);
    expect(kernel.stats()).toEqual({ active: 1, mailboxDepth: 0, activeByKind: { counter: 1 } });
    await expect(kernel.dispatch(key('b'), { type: 'inc', n: 3 }, soon())).resolves.toBe(3);
  });

  it('stop() passivates everything; afterwards dispatch rejects with ActorUnavailable', async () => {
    const { def, ports } = counterKind();
    const kernel = makeKernel();
    kernel.register(def);
    await kernel.dispatch(key('a'), { type: 'inc', n: 1 }, soon());
    await kernel.dispatch(key('b'), { type: 'inc', n: 1 }, soon());
    await kernel.stop();
    expect(ports.passivated.map((p) => p.key).sort()).toEqual(['a', 'b']);
    expect(kernel.stats()).toEqual({ active: 0, mailboxDepth: 0, activeByKind: {} });
    expect(await rejection(kernel.dispatch(key('a'), { type: 'inc', n: 2 }, soon()))).toBeInstanceOf(ActorUnavailable);
  });

  it('stats count activations by kind and queued messages', async () => {
    const { def, hold } = counterKind();
    const other = { ...counterKind().def, kind: 'other' };
    const kernel = makeKernel();
    kernel.register(def);
    kernel.register(other);
    expect(kernel.stats()).toEqual({ active: 0, mailboxDepth: 0, activeByKind: {} });
    const held = hold(1);
    const all = [
      kernel.dispatch(key('a'), { type: 'inc', n: 1, hold: 1 }, soon()),
      kernel.dispatch(key('a'), { type: 'inc', n: 2 }, soon()),
      kernel.dispatch(key('a'), { type: 'inc', n: 3 }, soon()),
      kernel.dispatch({ kind: 'other', id: ['x'] }, { type: 'get' }, soon()),
    ];
    await until('two messages queued', () => kernel.stats().mailboxDepth === 2, { timeoutMs: 2000 });
    expect(kernel.stats()).toEqual({ active: 2, mailboxDepth: 2, activeByKind: { counter: 1, other: 1 } });
    held.resolve();
    await Promise.all(all);
    expect(kernel.stats().mailboxDepth).toBe(0);
  });
});
