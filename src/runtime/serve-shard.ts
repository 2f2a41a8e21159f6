/**
 * The owner's side of actor routing (router.ts is the caller's): `serveShard` subscribes to
 * the shard's wildcard and answers each request with `{ok:true,value}` or
 * `{ok:false,error:WireError}`, after the NATS fence (INTERFACE §9.4): the deployment's seal,
 * then the request's id against replays (replay-guard.ts), then its subject against its key.
 */
import type { Msg, NatsConnection, Subscription } from '@nats-io/transport-node';
import { BadRequest, DeadlineExceeded, Internal, Unauthorized } from '../errors.js';
import { toAppError, toWire, type WireError } from '../errors-wire.js';
import { logContext, type Logger } from '../log.js';
import { contextOfHeaders } from '../telemetry/nats-trace.js';
import { inSpan, SpanKind, tracingOn } from '../telemetry/tracing.js';
import { logEvery } from './log-every.js';
import { keyString, type ActorKey, type Names } from './names.js';
import type { ReplayGuard } from './replay-guard.js';
import { SEAL_HEADER, type Seal } from './seal.js';

export interface ActorRequest {
  /** `keyString` of the addressed actor. */
  key: string;
  msg: { type: string } & Record<string, unknown>;
  /** Epoch ms after which the caller no longer waits. */
  deadline: number;
}

export type Reply = { ok: true; value: unknown } | { ok: false; error: WireError };
export interface WireRequest {
  key: ActorKey;
  msg: { type: string };
  deadline: number;
  /** The edge request this ask serves: the actor's log lines carry it too (INTERFACE §9.3). */
  request_id?: string;
  /** This attempt's id, refused when delivered a second time (replay-guard.ts); absent from earlier releases. */
  rid?: string;
}

/**
 * One queue group per shard subject: during a lease overlap two nodes may both be
 * subscribed for a moment, and a request must still be handled once, not twice.
 */
const OWNER_QUEUE = 'owner';
/** Refusals of unsealed actor requests are logged at most this often per served shard (counted every time). */
const UNSEALED_LOG_EVERY_MS = 10_000;

const enc = new TextEncoder();
const dec = new TextDecoder();

/**
 * Answer every request for one shard by calling `handler`. `stop()` unsubscribes (new
 * requests then see no responders and retry toward the next owner) and waits until
 * every request already received has been replied to.
 */
export function serveShard(opts: {
  nc: NatsConnection;
  names: Names;
  shard: number;
  log: Logger;
  handler: (req: ActorRequest) => Promise<unknown>;
  /** INTERFACE §9.4: when set, a request without this deployment's seal is refused. */
  seal?: Seal | null;
  onRefused?: (key: string | null) => void;
  /** Issue 32 item 3: when set, a request whose id was delivered before is refused (after its seal is checked). */
  replay?: ReplayGuard | null;
}): { stop(): Promise<void> } {
  const { nc, names, shard, handler } = opts;
  const log = opts.log.child({ shard });
  const inFlight = new Set<Promise<void>>();
  const tellUnsealed = logEvery(UNSEALED_LOG_EVERY_MS);

  const answer = async (m: Msg): Promise<void> => {
    let reply: Reply;
    try {
      if (opts.seal && !opts.seal.verify(m.data, m.headers?.get(SEAL_HEADER))) {
        opts.onRefused?.(m.subject);
        tellUnsealed((refused) =>
          log.warn({ subject: m.subject, refused }, 'actor request without a valid seal refused'),
        );
        throw new Unauthorized('actor request is not sealed by this deployment');
      }
      const req = parseRequest(m, names, shard);
      if (Date.now() >= req.deadline) throw new DeadlineExceeded('request expired before it was handled');
      if (opts.replay && !(await opts.replay.admit(req.rid, m.data, req.deadline)))
        throw new Unauthorized('actor request was delivered before; a replay is refused');
      const handle = () => handler({ key: keyString(req.key), msg: req.msg, deadline: req.deadline });
      const call = tracingOn() ? () => handleTraced(m, req, handle) : handle;
      const value = await (typeof req.request_id === 'string' && req.request_id.length <= 128
        ? logContext.run({ request_id: req.request_id }, call)
        : call());
      reply = { ok: true, value };
    } catch (err) {
      const e = toAppError(err);
      if (e.kind === 'Internal') log.error({ err, subject: m.subject }, 'actor handler failed');
      reply = { ok: false, error: toWire(e) };
    }
    respond(m, reply, log);
  };

  const sub: Subscription = nc.subscribe(names.actorShardWildcard(shard), {
    queue: OWNER_QUEUE,
    callback: (err, m) => {
      if (err) {
        log.error({ err }, 'actor subscription failed; this shard no longer answers');
        return;
      }
      const p = answer(m).finally(() => inFlight.delete(p));
      inFlight.add(p);
    },
  });

  return {
    async stop() {
      if (!sub.isClosed()) await sub.drain();
      await Promise.allSettled([...inFlight]);
      // Replies are buffered writes; flush so they leave before the caller closes nc.
      if (!nc.isClosed()) await nc.flush().catch(() => undefined);
    },
  };
}

/** The owner's side of `actor.request`: a span in the asker's trace, from the request's headers. */
function handleTraced(m: Msg, req: WireRequest, handle: () => Promise<unknown>): Promise<unknown> {
  const attributes = { 'actor.kind': req.key.kind, 'actor.key': keyString(req.key), 'actor.message': req.msg.type };
  return inSpan('actor.handle', { kind: SpanKind.SERVER, attributes, parent: contextOfHeaders(m.headers) }, handle);
}

function parseRequest(m: Msg, names: Names, shard: number): WireRequest {
  let req: WireRequest;
  try {
    req = JSON.parse(dec.decode(m.data)) as WireRequest;
  } catch (err) {
    throw new BadRequest('actor request is not JSON', { cause: err });
  }
  const k = req?.key;
  const ok =
    k &&
    typeof k.kind === 'string' &&
    Array.isArray(k.id) &&
    k.id.every((p) => typeof p === 'string') &&
    typeof req.msg?.type === 'string' &&
    typeof req.deadline === 'number';
  if (!ok) throw new BadRequest('actor request is malformed');
  if (names.actorSubject(shard, k) !== m.subject) throw new BadRequest('actor request key does not match its subject');
  return req;
}

function respond(m: Msg, reply: Reply, log: Logger): void {
  if (!m.reply) return;
  try {
    m.respond(enc.encode(JSON.stringify(reply)));
  } catch (err) {
    // Typically a value larger than max_payload or one JSON cannot encode: say so instead.
    log.error({ err, subject: m.subject }, 'actor reply could not be sent');
    try {
      m.respond(
        enc.encode(JSON.stringify({ ok: false, error: toWire(new Internal('actor reply could not be encoded')) })),
      );
    } catch {
      // The connection is gone; the caller's timeout reports it.
    }
  }
}
