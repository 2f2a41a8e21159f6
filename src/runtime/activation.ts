/**
 * One incarnation of an actor key as the kernel (kernel.ts) keeps it: its phase, its
 * hydrated state, the envelopes it accepted, and its nact actor. With kernel.ts the only
 * code that knows nact (its `Ref` type, here).
 */
import type { Ref } from 'nact';
import type { Logger } from '../log.js';
import type { ActorKind } from './actor-definition.js';
import type { Envelope } from './envelope.js';
import type { ActorKey } from './names.js';

/** What the nact actor function throws so that `onCrash` knows what failed. */
export class Crash extends Error {
  constructor(
    readonly during: 'hydrate' | 'handle',
    readonly error: unknown,
  ) {
    super(`actor crashed during ${during}`);
  }
}

/** One incarnation of a key: created on the first message, gone on passivation or crash. */
export class Activation {
  /** live: takes messages; stopping: finishing its turn; dead: nact actor stopped or stopping. */
  phase: 'live' | 'stopping' | 'dead' = 'live';
  hydrated = false;
  state: unknown = undefined;
  /** Accepted and not yet taken off nact's mailbox, in order; its size is the bound. */
  readonly pending = new Set<Envelope>();
  running: Envelope | null = null;
  /** From the kernel's clock. */
  idleTimer: unknown;
  ref!: Ref<Envelope>;
  readonly done: Promise<void>;
  markDone!: () => void;

  constructor(
    readonly key: ActorKey,
    readonly id: string,
    readonly def: ActorKind,
    readonly log: Logger,
    /** The previous incarnation of the key, still finishing: hydrate only after it is gone. */
    public gate: Promise<void> | null,
  ) {
    this.done = new Promise((resolve) => (this.markDone = resolve));
  }
}
