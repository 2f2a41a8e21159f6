/**
 * One message on its way through an actor's mailbox, with its own completion promise
 * (STYLE.md "Actors on nact": the NATS reply and the JetStream ack wait on it), its own
 * deadline (on the kernel's clock) and its own AbortSignal. Pure: no nact, no kernel state.
 *
 * Invariant: an envelope settles exactly once. `resolve`/`reject` after the first
 * settlement are no-ops, so every path (handler result, deadline, crash, passivation)
 * may try to settle it without coordinating with the others.
 */
import { DeadlineExceeded } from '../errors.js';
import type { Context } from '../telemetry/tracing.js';
import type { Clock } from './ports.js';

/** Node clamps longer timeouts to 1 ms (and fires at once); re-arm instead. */
const MAX_TIMEOUT_MS = 2_147_483_647;

export interface ActorMessage {
  type: string;
  [field: string]: unknown;
}

export class Envelope {
  readonly promise: Promise<unknown>;
  /** True once the handler (or hydration for it) has begun; a queued envelope has not. */
  started = false;
  /**
   * The sender's trace context (INTERFACE §10.7), when tracing runs: nact runs a queued
   * message from the previous one's continuation, so the handler is put back in it.
   */
  trace: Context | undefined = undefined;
  private done = false;
  private readonly controller = new AbortController();
  private timer: unknown;
  private settleOk!: (value: unknown) => void;
  private settleErr!: (err: unknown) => void;

  constructor(
    readonly msg: ActorMessage,
    readonly deadline: number,
    private readonly clock: Clock,
  ) {
    this.promise = new Promise<unknown>((resolve, reject) => {
      this.settleOk = resolve;
      this.settleErr = reject;
    });
    this.armDeadline();
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get settled(): boolean {
    return this.done;
  }

  resolve(value: unknown): void {
    if (this.done) return;
    this.done = true;
    this.clock.clearTimeout(this.timer);
    this.settleOk(value);
  }

  reject(err: unknown): void {
    if (this.done) return;
    this.done = true;
    this.clock.clearTimeout(this.timer);
    this.settleErr(err);
  }

  /** Ask the running handler to stop; its I/O sees `reason` as the signal's reason. */
  abort(reason: unknown): void {
    if (!this.controller.signal.aborted) this.controller.abort(reason);
  }

  /**
   * The deadline settles the envelope whether it is queued or running: a caller must hear
   * back by its deadline even if the handler ahead of it ignores its own signal. A queued
   * envelope settled this way is skipped when the mailbox reaches it.
   */
  private armDeadline(): void {
    const wait = this.deadline - this.clock.now();
    if (wait <= 0) {
      this.expire();
      return;
    }
    this.timer = this.clock.setTimeout(
      () => {
        if (this.clock.now() >= this.deadline) this.expire();
        else this.armDeadline();
      },
      Math.min(wait, MAX_TIMEOUT_MS),
    );
  }

  private expire(): void {
    const err = new DeadlineExceeded(
      `deadline passed ${this.started ? 'while handling' : 'before handling'} ${this.msg.type}`,
    );
    this.abort(err);
    this.reject(err);
  }
}
