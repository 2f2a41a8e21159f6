/**
 * What an actor kind is, as the kernel (kernel.ts) runs it: its definition (hydration,
 * handlers by message type, idle and mailbox bounds, passivation hook) and the context a
 * handler gets. No nact here: actor modules import these types without the runtime.
 */
import type { Logger } from '../log.js';
import type { ActorKey } from './names.js';
import type { Clock, Protocol } from './ports.js';

export interface ActorContext<S> {
  key: ActorKey;
  /** Hydrated state; handlers may mutate it or replace it via `ctx.state = ...`. */
  state: S;
  /** Aborted at the message deadline or on passivation/stop; pass to all I/O. */
  signal: AbortSignal;
  /** Epoch ms. */
  deadline: number;
  /** Child bound with `{ actor: keyString(key) }`. */
  log: Logger;
}

/**
 * One handler per message type of `P`, answering what `P` says. Messages come off the wire
 * as JSON: a handler still checks what it cannot trust (usually with zod).
 */
type Handlers<S, P extends Protocol> = {
  [T in keyof P & string]: (ctx: ActorContext<S>, msg: { type: T } & P[T]['msg']) => Promise<P[T]['answer']>;
};

export interface ActorDefinition<S, P extends Protocol> {
  /** Matches `ActorKey.kind`. */
  kind: string;
  /** Lazy async load from Postgres/KV on activation; the signal is the triggering message's. */
  hydrate(key: ActorKey, signal: AbortSignal): Promise<S>;
  /** Keyed by `msg.type` (restate-style map). */
  handlers: Handlers<S, P>;
  /** Passivate after this long idle; defaults to the kernel's. */
  idleMs?: number;
  /** Queued (not yet started) messages per activation; defaults to the kernel's. */
  mailboxCapacity?: number;
  /** Called on idle passivation, `passivate()` and `stop()`; never after a crash. */
  onPassivate?(ctx: { key: ActorKey; state: S }): Promise<void>;
}

/**
 * A definition as registries hold it, its state and protocol erased (kinds differ in
 * both). The kernel finds the handler by `msg.type` at run time and refuses unknown types.
 */
export interface ActorKind {
  kind: string;
  hydrate(key: ActorKey, signal: AbortSignal): Promise<unknown>;
  handlers: { [type: string]: ErasedHandler };
  idleMs?: number;
  mailboxCapacity?: number;
  onPassivate?(ctx: { key: ActorKey; state: unknown }): Promise<void>;
}

// Method syntax keeps parameters bivariant: a handler of one protocol's message is a
// handler of some message, which is all the kernel needs to hold it.
type ErasedHandler = { handle(ctx: ActorContext<unknown>, msg: { type: string }): Promise<unknown> }['handle'];

export interface KernelOptions {
  log: Logger;
  /** Default 60000. */
  idleMs?: number;
  /** Default 1000. */
  mailboxCapacity?: number;
  /** Times idle passivation and message deadlines (epoch ms on it); the system clock unless a test drives it. */
  clock?: Clock;
}

export interface KernelStats {
  active: number;
  mailboxDepth: number;
  activeByKind: Record<string, number>;
}
