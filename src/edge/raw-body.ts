/**
 * Raw bodies of signed routes (webhooks, chat events), read before their signature can be
 * checked. INTERFACE §9.3: across all requests of a node they hold at most 64 MiB of
 * memory; past that the route answers 503 `unavailable` with `Retry-After` (the platform
 * retries) instead of buffering every body in full. The budget counts bytes held, taken as
 * they arrive, never a declared `Content-Length` (issue 32: three sockets declaring 64 MiB
 * between them and sending one byte each used to lock every webhook route of the node for
 * 30 s). A declared length past the route's limit is refused (413) before a byte is read.
 * A failed body gives its bytes back at once; a read one when its response is sent (or the
 * client went away). Joining the chunks at the end copies them once, for a moment.
 *
 * A body that trickles holds a socket and its bytes without the cost to the sender of
 * sending: after `TRICKLE_GRACE_MS`, a body must keep arriving at `MIN_BODY_RATE` on
 * average (Apache's mod_reqtimeout `MinRate`), else it is cut with 408 `request_timeout`.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { PayloadTooLarge, RequestTimeout, Unavailable } from '../errors.js';

export const UNVERIFIED_BYTES_BUDGET = 64 * 1024 * 1024;
/**
 * The slowest average a signed route's body may arrive at after its first second, in bytes
 * per second: 64 KiB/s. Slack and GitHub send from data centres, orders of magnitude
 * faster; holding the whole 64 MiB budget this way takes over a thousand sockets.
 */
const MIN_BODY_RATE = 64 * 1024;
/** The first second of a body is free of the rate (connection set-up, a slow first packet). */
const TRICKLE_GRACE_MS = 1_000;
/** A check that ran this late was held up by the event loop, not the client: it looks again. */
const LATE_CHECK_MS = 250;

export class ByteBudget {
  private used = 0;
  constructor(
    readonly capacity: number,
    /** Hears the bytes in use after every change (a gauge). */
    private readonly onChange: (inUse: number) => void = () => undefined,
  ) {}

  take(n: number): boolean {
    if (this.used + n > this.capacity) return false;
    this.used += n;
    this.onChange(this.used);
    return true;
  }

  give(n: number): void {
    this.used = Math.max(0, this.used - n);
    this.onChange(this.used);
  }

  get inUse(): number {
    return this.used;
  }
}

const held = new WeakMap<FastifyRequest, number>();

const busy = () =>
  new Unavailable('too many unverified request bodies are being received; retry shortly', { retryAfterS: 1 });

const trickled = () =>
  new RequestTimeout(`the request body arrived slower than ${MIN_BODY_RATE / 1024} KiB/s; it was cut`);

/**
 * Replaces every content-type parser of this (encapsulated) context with one that keeps
 * the raw bytes as a Buffer, read under `budget` and at most `limit` bytes.
 */
export function rawBodyUnderBudget(app: FastifyInstance, budget: ByteBudget, limit: number): void {
  const release = async (req: FastifyRequest) => {
    const n = held.get(req);
    if (n !== undefined) {
      held.delete(req);
      budget.give(n);
    }
  };
  app.addHook('onResponse', release);
  app.addHook('onRequestAbort', release);
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { bodyLimit: limit }, (req, payload, done) => {
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > limit) return done(new PayloadTooLarge(), undefined);
    held.set(req, 0);
    const chunks: Buffer[] = [];
    const started = performance.now();
    let got = 0;
    let finished = false;
    let check: NodeJS.Timeout | undefined;
    const finish = (err: Error | null) => {
      if (finished) return;
      finished = true;
      clearTimeout(check);
      payload.removeAllListeners('data');
      if (err) {
        // Nothing of a refused body is kept; the rest of it is read and discarded.
        chunks.length = 0;
        void release(req);
        payload.resume();
        return done(err, undefined);
      }
      done(null, Buffer.concat(chunks, got));
    };
    // Due when the body has fallen below MIN_BODY_RATE since the grace second.
    const dueAt = () => started + TRICKLE_GRACE_MS + (got / MIN_BODY_RATE) * 1000;
    const schedule = () => {
      const at = performance.now() + Math.max(0, dueAt() - performance.now());
      check = setTimeout(() => {
        // Decided after pending I/O is read (setImmediate), so bytes that arrived while the
        // event loop was busy count; a check the loop held up looks again instead of cutting.
        setImmediate(() => {
          if (finished) return;
          const late = performance.now() - at > LATE_CHECK_MS;
          if (!late && performance.now() >= dueAt()) return finish(trickled());
          schedule();
        });
      }, at - performance.now());
      check.unref();
    };
    schedule();
    payload.on('data', (c: Buffer) => {
      if (finished) return;
      got += c.length;
      if (got > limit) return finish(new PayloadTooLarge());
      if (!budget.take(c.length)) return finish(busy());
      held.set(req, got);
      chunks.push(c);
    });
    payload.on('error', (err) => finish(err));
    payload.on('end', () => finish(null));
  });
}
