/**
 * The actor kernel: one in-process activation per actor key, one message at a time per key
 * (ARCHITECTURE.md "Actors", STYLE.md "Actors on nact"). The only file that imports nact
 * (with activation.ts, for nact's `Ref` type).
 *
 * What nact 7.6.2 does, read from its lib/ (and why we use only part of it):
 * - `spawn` gives each key an actor with a FIFO mailbox (denque) that runs one async
 *   function at a time: used, one nact actor per activation.
 * - `onCrash` is called synchronously when that function throws, and its returned
 *   decision (`ctx.stop`) is applied a microtask later: used, as our crash hook. Its
 *   default policy prints with console.log and its `escalate` path ends in the system's
 *   console.log, so ours is explicit, never throws (a throw there is an unhandled
 *   rejection inside nact) and always answers `stop`.
 * - Its mailbox is unbounded, `dispatch` to a stopped actor drops the message silently,
 *   messages still queued when an actor stops are dropped silently, actor names reject
 *   `/` and must be unique among live siblings, and `query` answers only "Query Timeout".
 *   So the bound, the completion promise, the deadline and the settlement of queued
 *   messages are ours: we count queued envelopes ourselves, settle every envelope we
 *   accepted before letting nact forget it, dispatch to nact only while our activation is
 *   live, and name each nact actor by a fresh incarnation number, not by its key.
 * - `shutdownAfter` stops an actor without a hook we can await and `initialStateFunc` is
 *   synchronous, so idle passivation and hydration are ours too. Persistence,
 *   `spawnStateless` (which resumes after any crash) and `query` are not used.
 */
import { dispatch as nactDispatch, spawn, start, stop as nactStop, type ActorSystemRef } from 'nact';
import { ActorOverloaded, ActorUnavailable, AppError, DeadlineExceeded, Internal, notStarted } from '../errors.js';
import { toAppError } from '../errors-wire.js';
import type { Logger } from '../log.js';
import { captureContext, runInContext } from '../telemetry/tracing.js';
import { Envelope, type ActorMessage } from './envelope.js';
import type { ActorContext, ActorDefinition, ActorKind, KernelOptions, KernelStats } from './actor-definition.js';
import { keyString, type ActorKey } from './names.js';

import type { Clock, Protocol } from './ports.js';
import { Activation, Crash } from './activation.js';
import { systemClock } from './clock.js';

type AnyDefinition = ActorKind;

export class Kernel {
  private readonly log: Logger;
  private readonly idleMs: number;
  private readonly capacity: number;
  private readonly clock: Clock;
  private readonly defs = new Map<string, AnyDefinition>();
  private readonly live = new Map<string, Activation>();
  /** Passivating incarnations, so a new one for the same key waits (single writer). */
  private readonly retiring = new Map<string, Activation>();
  private readonly system: ActorSystemRef = start();
  private incarnation = 0;
  private stopped = false;

  constructor(opts: KernelOptions) {
    this.log = opts.log;
    this.idleMs = opts.idleMs ?? 60_000;
    this.capacity = opts.mailboxCapacity ?? 1000;
    this.clock = opts.clock ?? systemClock;
  }

  register<S, P extends Protocol>(def: ActorDefinition<S, P> | ActorKind): void {
    if (this.defs.has(def.kind)) throw new Error(`actor kind ${def.kind} is registered twice`);
    this.defs.set(def.kind, def);
  }

  /** Deliver msg to the activation of key, activating (hydrating) it if needed; resolves with the handler's result. */
  async dispatch(key: ActorKey, msg: ActorMessage, opts: { deadline: number }): Promise<unknown> {
    if (this.stopped) throw notStarted('actor host is stopping, retry');
    const def = this.defs.get(key.kind);
    // Our own code builds messages after validating input, so these are bugs, not bad requests.
    if (!def) throw new Internal(`no actor kind ${key.kind} is registered on this node`);
    if (!Object.hasOwn(def.handlers, msg.type))
      throw new Internal(`actor kind ${key.kind} has no handler for ${msg.type}`);
    if (!Number.isFinite(opts.deadline)) throw new Internal('a message needs a finite deadline');
    if (this.clock.now() >= opts.deadline) throw new DeadlineExceeded(`deadline passed before handling ${msg.type}`);

    const id = keyString(key);
    const act = this.live.get(id) ?? this.activate(key, id, def);
    if (act.pending.size >= (def.mailboxCapacity ?? this.capacity)) {
      throw new ActorOverloaded(`mailbox of ${id} is full`);
    }
    const env = new Envelope(msg, opts.deadline, this.clock);
    env.trace = captureContext();
    this.clock.clearTimeout(act.idleTimer);
    act.pending.add(env);
    // Safe: the nact actor exists while our activation is live (phase changes and nact
    // stops happen together, synchronously), so nact cannot drop this silently.
    nactDispatch(act.ref, env);
    return env.promise;
  }

  /**
   * Passivate every activation whose key matches (used when a shard lease is lost): waits for the in-flight handler
   * (its signal is aborted), rejects queued envelopes with ActorUnavailable, removes them.
   */
  async passivate(match: (key: ActorKey) => boolean): Promise<void> {
    const acts = [...this.live.values(), ...this.retiring.values()].filter((a) => match(a.key));
    const reason = notStarted('actor passivated, retry');
    for (const act of acts) this.beginStop(act, reason);
    await Promise.all(acts.map((a) => a.done));
  }

  stats(): KernelStats {
    const activeByKind: Record<string, number> = {};
    let mailboxDepth = 0;
    for (const act of this.live.values()) {
      activeByKind[act.key.kind] = (activeByKind[act.key.kind] ?? 0) + 1;
      mailboxDepth += act.pending.size;
    }
    return { active: this.live.size, mailboxDepth, activeByKind };
  }

  /** Passivates all, then stops nact; afterwards dispatch rejects with ActorUnavailable. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.passivate(() => true);
    nactStop(this.system);
  }

  private activate(key: ActorKey, id: string, def: AnyDefinition): Activation {
    const log = this.log.child({ actor: id });
    const act = new Activation(key, id, def, log, this.retiring.get(id)?.done ?? null);
    // Returning undefined keeps nact's own state empty: ours lives on the activation.
    act.ref = spawn(
      this.system,
      (_state: undefined, env: Envelope) => this.receive(act, env),
      `a${++this.incarnation}`,
      {
        onCrash: (msg, err, ctx) => {
          try {
            this.crashed(act, msg instanceof Envelope ? msg : null, err);
          } catch (e) {
            log.error({ err: e }, 'actor crash cleanup failed');
          }
          return ctx.stop;
        },
      },
    );
    this.live.set(id, act);
    return act;
  }

  /** The nact actor function: one turn per envelope. Throws only `Crash`, for onCrash. */
  private async receive(act: Activation, env: Envelope): Promise<undefined> {
    act.pending.delete(env);
    if (env.settled || act.phase !== 'live') {
      env.reject(notStarted('actor passivated, retry'));
      this.afterTurn(act);
      return undefined;
    }
    act.running = env;
    env.started = true;
    try {
      await this.turn(act, env);
    } finally {
      act.running = null;
    }
    this.afterTurn(act);
    return undefined;
  }

  private async turn(act: Activation, env: Envelope): Promise<void> {
    if (!act.hydrated) {
      if (act.gate) {
        await act.gate;
        act.gate = null;
      }
      // The deadline or a passivation may have come while we waited; hydrate for a live caller only.
      if (env.signal.aborted) return env.reject(env.signal.reason);
      try {
        act.state = await act.def.hydrate(act.key, env.signal);
      } catch (err) {
        throw new Crash('hydrate', env.signal.aborted ? env.signal.reason : err);
      }
      act.hydrated = true;
      if (env.settled) return;
    }
    const handler = act.def.handlers[env.msg.type]!;
    const ctx: ActorContext<unknown> = {
      key: act.key,
      state: act.state,
      signal: env.signal,
      deadline: env.deadline,
      log: act.log,
    };
    try {
      const result = await runInContext(env.trace, () => handler(ctx, env.msg));
      act.state = ctx.state;
      env.resolve(result);
    } catch (err) {
      // A coded error is an expected outcome; a throw after we aborted the signal is the
      // handler obeying it. Neither says the in-memory state is broken, so neither crashes.
      if (err instanceof AppError || env.signal.aborted) {
        act.state = ctx.state;
        env.reject(err instanceof AppError ? err : env.signal.reason);
        return;
      }
      throw new Crash('handle', err);
    }
  }

  private afterTurn(act: Activation): void {
    if (act.phase === 'stopping') {
      void this.finish(act, false);
      return;
    }
    if (act.phase !== 'live' || act.pending.size > 0) return;
    this.clock.clearTimeout(act.idleTimer);
    act.idleTimer = this.clock.setTimeout(() => {
      if (act.phase === 'live' && !act.running && act.pending.size === 0) {
        act.log.debug('actor idle, passivating');
        this.beginStop(act, notStarted('actor passivated, retry'));
      }
    }, act.def.idleMs ?? this.idleMs);
  }

  /** Stop taking messages now; finish after the running turn (if any) ends. */
  private beginStop(act: Activation, reason: AppError): void {
    if (act.phase !== 'live') return;
    act.phase = 'stopping';
    this.clock.clearTimeout(act.idleTimer);
    if (this.live.get(act.id) === act) this.live.delete(act.id);
    this.retiring.set(act.id, act);
    for (const env of act.pending) env.reject(reason);
    act.pending.clear();
    // The running handler may already have acted: its abort must not read as "not started".
    if (act.running) act.running.abort(new ActorUnavailable(reason.message));
    else void this.finish(act, false);
  }

  /** The explicit crash hook: settle the failing and queued envelopes, forget the key. */
  private crashed(act: Activation, env: Envelope | null, err: unknown): void {
    const crash = err instanceof Crash ? err : new Crash('handle', err);
    const cause = crash.error;
    let failing: AppError;
    let queued: AppError;
    if (crash.during === 'hydrate') {
      failing = cause instanceof AppError ? cause : new Internal(`actor ${act.id} failed to load its state`, { cause });
      queued = failing;
      act.log.warn({ err: cause }, 'actor hydration failed; the next message will hydrate again');
    } else {
      failing = toAppError(cause);
      queued = notStarted('actor crashed, retry', cause);
      act.log.error(
        { err: cause, msgType: env?.msg.type },
        'actor crashed; its state is dropped and rehydrated on the next message',
      );
    }
    env?.reject(failing);
    for (const e of act.pending) e.reject(queued);
    act.pending.clear();
    // nact stops its actor itself on our `ctx.stop` answer.
    void this.finish(act, true);
  }

  /** The one way out of an activation. */
  private async finish(act: Activation, crashed: boolean): Promise<void> {
    if (act.phase === 'dead') return;
    act.phase = 'dead';
    this.clock.clearTimeout(act.idleTimer);
    if (this.live.get(act.id) === act) this.live.delete(act.id);
    if (!crashed) {
      if (act.hydrated && act.def.onPassivate) {
        try {
          await act.def.onPassivate({ key: act.key, state: act.state });
        } catch (err) {
          act.log.error(
            { err },
            'onPassivate failed; state not flushed there is recovered from Postgres/KV on next activation',
          );
        }
      }
      nactStop(act.ref);
    }
    if (this.retiring.get(act.id) === act) this.retiring.delete(act.id);
    act.markDone();
  }
}
