/**
 * What an actor kind is, as the kernel (kernel.ts) runs it: its definition (hydration,
 * handlers by message type, idle and mailbox bounds, passivation hook) and the context a
 * handler gets. No nact here: actor modules import these types without the runtime.
 */
import type { Logger } from '../log.js';
import type { ActorKey } from './names.js';

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

// `any` for the message: each handler narrows it (usually with zod) to its own type.
export type Handler<S> = (ctx: ActorContext<S>, msg: any) => Promise<unknown>;

export interface ActorDefinition<S> {
  /** Matches `ActorKey.kind`. */
  kind: string;
  /** Lazy async load from Postgres/KV on activation; the signal is the triggering message's. */
  hydrate(key: ActorKey, signal: AbortSignal): Promise<S>;
  /** Keyed by `msg.type` (restate-style map). */
  handlers: Record<string, Handler<S>>;
  /** Passivate after this long idle; defaults to the kernel's. */
  idleMs?: number;
  /** Queued (not yet started) messages per activation; defaults to the kernel's. */
  mailboxCapacity?: number;
  /** Called on idle passivation, `passivate()` and `stop()`; never after a crash. */
  onPassivate?(ctx: { key: ActorKey; state: S }): Promise<void>;
}

export interface KernelOptions {
  log: Logger;
  /** Default 60000. */
  idleMs?: number;
  /** Default 1000. */
  mailboxCapacity?: number;
}

export interface KernelStats {
  active: number;
  mailboxDepth: number;
  activeByKind: Record<string, number>;
}
