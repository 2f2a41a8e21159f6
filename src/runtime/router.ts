/**
 * Actor routing over NATS request/reply (ARCHITECTURE.md "Actors"), the caller's side; the
 * owner's side is serve-shard.ts.
 *
 * Caller side: `Router.ask` sends to the key's subject on its shard. While a shard moves
 * between nodes nobody subscribes to it, the server answers "no responders" at once, and
 * the caller backs off and retries until its deadline. Once someone *received* a request,
 * it is never resent: the handler may have acted, so a silence is a `DeadlineExceeded`.
 * The exception is a message the caller marks `idempotent` (reads, `refresh`, `health`):
 * a node killed mid-request never answers, so a silence past the attempt window resends
 * it toward the shard's next owner (spec §8.24: a caller retrying for 15 s sees no failure).
 *
 * Wire request: `{ key: ActorKey, msg, deadline, rid }`. The key travels structured (not as
 * `keyString`) because ids may contain `/`; the owner checks that the subject it arrived
 * on is the one the key maps to, so a request can never reach another key's handler.
 * `rid` is the attempt's own id: the owner refuses one it has served before (replay-guard.ts).
 *
 * A request a node received but never read (killed as it arrived, INTERFACE §8.24) would
 * otherwise hold a plain ask until its deadline, past the client's own timeout. So an
 * attempt left unanswered for a second is withdrawn (replay-guard.ts `withdrawer`): when no
 * node had admitted it, none ever will, and it is sent again at once, toward the shard's next
 * owner; when a node had, it may have acted, and the ask waits for its answer as before.
 */
import { backoffMs } from '../backoff.js';
import type { Msg, NatsConnection } from '@nats-io/transport-node';
import { errors as natsErrors } from '@nats-io/transport-node';
import { ActorUnavailable, DeadlineExceeded, Internal, Unavailable, isNotStarted } from '../errors.js';
import { fromWire } from '../errors-wire.js';
import { currentRequestId, type Logger } from '../log.js';
import { withTraceHeaders } from '../telemetry/nats-trace.js';
import { inSpan, SpanKind, tracingOn } from '../telemetry/tracing.js';
import { keyString, shardOf, type Names } from './names.js';
import type { AskOptions, KeyOf, Protocol } from './ports.js';
import { newRequestId } from './replay-guard.js';
import type { Reply, WireRequest } from './serve-shard.js';
import type { Seal } from './seal.js';
import type { Withdraw } from './replay-guard.js';
import { LivenessProbe, whileDependenciesAnswer } from './liveness-probe.js';

/**
 * Between resends while a key has no owner (backoff.ts: full jitter, so callers do not
 * stampede the new owner). A "no responders" costs NATS one round trip, and the new owner
 * serves the moment it subscribes: a short cap answers within a quarter second of that
 * (INTERFACE §8.24: within the lease TTL + 2 s of the old owner's death, with an ask chain
 * of a few actors moving together).
 */
const RESEND = { firstMs: 50, capMs: 250 };
/** A request sent with less time than this could not tell "nobody there" from "no answer". */
const LAST_ATTEMPT_MIN_MS = 100;
/**
 * Idempotent asks: how long a received request may stay unanswered before it is resent,
 * doubling per resend so a slow but live handler still gets the whole deadline. This and
 * WITHDRAW_FIRST_MS are how long an attempt is given, not waits between attempts (the next
 * one goes at once), so they are not backoff.ts's: a jittered patience could give up at once.
 */
const SILENCE_FIRST_MS = 2_000;
/**
 * An attempt unanswered this long is withdrawn if no node admitted it (doubling per withdrawn
 * attempt of the ask); while the bucket does not answer, tried again each WITHDRAW_RETRY_MS.
 */
const WITHDRAW_FIRST_MS = 1_000;
const WITHDRAW_RETRY_MS = 1_000;
/** Marks an attempt withdrawn before any node admitted it: it is sent again. */
const WITHDRAWN = Symbol('withdrawn');

const enc = new TextEncoder();
const dec = new TextDecoder();
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export class Router {
  private readonly nc: NatsConnection;
  private readonly names: Names;
  private readonly shards: number;
  private readonly log: Logger;

  private readonly seal: Seal | null;
  /** What a request awaiting an answer checks still answers: NATS, then what the node adds (Postgres). */
  private readonly dependencies: LivenessProbe[];
  private readonly withdraw: Withdraw | null;

  constructor(opts: {
    nc: NatsConnection;
    names: Names;
    shards: number;
    log: Logger;
    seal?: Seal | null;
    /** Dependencies besides NATS whose silence ends a request's ask with 503 (INTERFACE §9.3). */
    dependencies?: LivenessProbe[];
    /** Withdraws an attempt no node admitted (replay-guard.ts); null: an unanswered attempt is never withdrawn. */
    withdraw?: Withdraw | null;
  }) {
    this.seal = opts.seal ?? null;
    this.withdraw = opts.withdraw ?? null;
    const nc = opts.nc;
    // Refused while reconnecting: not an answer, only the time left decides.
    this.dependencies = [new LivenessProbe('NATS', () => nc.flush()), ...(opts.dependencies ?? [])];
    this.nc = opts.nc;
    this.names = opts.names;
    this.shards = opts.shards;
    this.log = opts.log;
  }

  /**
   * Ask the actor at `key` and wait for its reply. Throws `ActorUnavailable` when no node
   * answered for the whole timeout, `DeadlineExceeded` when a node received the request
   * but did not reply in time, `Unavailable` when the connection dropped mid-request,
   * or the handler's own error (rebuilt with `fromWire`, same kind and code).
   *
   * `idempotent: true` declares that running the message twice is harmless: a request
   * left unanswered for the attempt window (2 s, then 4 s, 8 s ...) is sent again, so a
   * request caught by its node's death is answered by the next owner within the deadline.
   */
  async ask<P extends Protocol, T extends keyof P & string>(
    key: KeyOf<P>,
    msg: { type: T } & P[T]['msg'],
    opts: AskOptions = {},
  ): Promise<P[T]['answer']> {
    if (!tracingOn()) return this.send<P, T>(key, msg, opts);
    // INTERFACE §10.7: the request carries the trace (traceparent in its headers).
    const attributes = { 'actor.kind': key.kind, 'actor.key': keyString(key), 'actor.message': msg.type };
    return inSpan('actor.request', { kind: SpanKind.CLIENT, attributes }, () => this.send<P, T>(key, msg, opts));
  }

  private async send<P extends Protocol, T extends keyof P & string>(
    key: KeyOf<P>,
    msg: { type: T } & P[T]['msg'],
    opts: AskOptions,
  ): Promise<P[T]['answer']> {
    const timeoutMs = opts.timeoutMs ?? 10_000;
    const deadline = Date.now() + timeoutMs;
    // INTERFACE §8.24: nobody holding the shard this long answers 503 now, the client retries.
    const unownedUntil = opts.unownedMs === undefined ? Infinity : Date.now() + opts.unownedMs;
    let silenceMs = SILENCE_FIRST_MS;
    let withdrawAfterMs = WITHDRAW_FIRST_MS;
    const subject = this.names.actorSubject(shardOf(key, this.shards), key);
    const wire: WireRequest = { key, msg, deadline, request_id: currentRequestId() };
    // True while every attempt so far was refused before any node took it (no responders,
    // or an owner letting the shard go): nothing has acted on the request.
    let untouched = true;
    for (let attempt = 0; ; attempt++) {
      const remaining = deadline - Date.now();
      // Too little time left for a request to come back even as "no responders" on a loaded
      // machine: a timeout then would wrongly say a node took it (DeadlineExceeded). So the
      // last sliver of the deadline is waited out and the ask ends as what it was.
      if (remaining <= 0 || (attempt > 0 && untouched && remaining < LAST_ATTEMPT_MIN_MS)) {
        await sleep(Math.max(0, remaining));
        throw new ActorUnavailable(`no node answers for ${keyString(key)}`, { details: { attempts: attempt } });
      }
      // Each attempt is a new request with its own id (replay-guard.ts): the serving node
      // refuses an id it has seen, so a resend must not reuse the one a node already took.
      const rid = newRequestId(timeoutMs);
      wire.rid = rid;
      const body = enc.encode(JSON.stringify(wire));
      const headers = withTraceHeaders(this.seal?.headers(body));
      let reply: Msg;
      try {
        const asked = this.nc.request(subject, body, {
          timeout: opts.idempotent ? Math.min(remaining, silenceMs) : remaining,
          ...(headers ? { headers } : {}),
        });
        const answered = await whileDependenciesAnswer(
          this.dependencies,
          this.unlessWithdrawn(asked, rid, withdrawAfterMs),
        );
        if (answered === WITHDRAWN) {
          // A node too busy to admit it in time gets longer next time, rather than a resend a second.
          withdrawAfterMs *= 2;
          this.log.debug({ key: keyString(key), type: msg.type }, 'no node took the request; sending it again');
          continue;
        }
        reply = answered;
      } catch (err) {
        // NATS or Postgres did not answer within the request's budget: already the 503 it is.
        if (err instanceof Unavailable) throw err;
        if (isNoResponders(err)) {
          if (untouched && Date.now() >= unownedUntil)
            throw new ActorUnavailable(`no node holds ${keyString(key)} yet; retry`, {
              details: { attempts: attempt + 1 },
              retryAfterS: 1,
            });
          await sleep(Math.max(0, Math.min(deadline - Date.now(), backoffMs(RESEND, attempt + 1))));
          continue;
        }
        if (err instanceof natsErrors.TimeoutError) {
          untouched = false;
          if (opts.idempotent && Date.now() < deadline) {
            this.log.debug(
              { key: keyString(key), type: msg.type, silenceMs },
              'no answer from the node that took the request; resending',
            );
            silenceMs *= 2;
            continue;
          }
          throw new DeadlineExceeded(`${keyString(key)} did not answer ${msg.type} in time`, { cause: err });
        }
        throw new Unavailable(`request to ${keyString(key)} failed: ${(err as Error).message}`, { cause: err });
      }
      try {
        // The handler answered with P[T]'s answer (Handlers<S, P>); JSON carried it here.
        return decodeReply(reply) as P[T]['answer'];
      } catch (err) {
        // The owner was letting the shard go (or the actor crashed) before our message
        // started: nothing acted on it, so resend toward the next owner (INTERFACE §8.24).
        if (!isNotStarted(err)) throw err;
        await sleep(Math.max(0, Math.min(deadline - Date.now(), backoffMs(RESEND, attempt + 1))));
      }
    }
  }

  /**
   * The attempt's answer, or WITHDRAWN once it was withdrawn before any node admitted it
   * (tried after `afterMs` of silence, again each second while the bucket does not answer,
   * never again once a node is known to have admitted it).
   */
  private unlessWithdrawn(asked: Promise<Msg>, rid: string, afterMs: number): Promise<Msg | typeof WITHDRAWN> {
    const withdraw = this.withdraw;
    if (!withdraw) return asked;
    let timer: NodeJS.Timeout | undefined;
    let settled = false;
    const withdrawn = new Promise<typeof WITHDRAWN>((resolve) => {
      const attempt = async () => {
        const out = await withdraw(rid).catch(() => null);
        if (settled) return;
        if (out === true) resolve(WITHDRAWN);
        else if (out === null) timer = setTimeout(() => void attempt(), WITHDRAW_RETRY_MS);
      };
      timer = setTimeout(() => void attempt(), afterMs);
    });
    return Promise.race([asked, withdrawn]).finally(() => {
      settled = true;
      clearTimeout(timer);
      // A withdrawn attempt's request may still time out or be refused; nobody waits for it.
      asked.catch(() => undefined);
    });
  }
}

function isNoResponders(err: unknown): boolean {
  return err instanceof natsErrors.RequestError && err.isNoResponders();
}

function decodeReply(m: Msg): unknown {
  let r: Reply;
  try {
    r = JSON.parse(dec.decode(m.data)) as Reply;
  } catch (err) {
    throw new Internal('actor reply is not JSON', { cause: err });
  }
  if (r.ok === true) return r.value;
  if (r.ok === false && r.error && typeof r.error.kind === 'string') throw fromWire(r.error);
  throw new Internal('actor reply has no ok field');
}
