/**
 * Raw bodies of signed routes (webhooks, chat events), read before their signature can be
 * checked. INTERFACE §9.3: across all requests of a node they hold at most 64 MiB of
 * memory; past that the route answers 503 `unavailable` with `Retry-After` (the platform
 * retries) instead of buffering every body in full. A declared `Content-Length` reserves
 * its size before one byte is read; a chunked body reserves as it arrives. The bytes are
 * handed back when the response is sent (or the client went away).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { PayloadTooLarge, Unavailable } from '../errors.js';

export const UNVERIFIED_BYTES_BUDGET = 64 * 1024 * 1024;

export class ByteBudget {
  private used = 0;
  constructor(readonly capacity: number) {}

  take(n: number): boolean {
    if (this.used + n > this.capacity) return false;
    this.used += n;
    return true;
  }

  give(n: number): void {
    this.used = Math.max(0, this.used - n);
  }

  get inUse(): number {
    return this.used;
  }
}

const held = new WeakMap<FastifyRequest, number>();

const busy = () =>
  new Unavailable('too many unverified request bodies are being received; retry shortly', { retryAfterS: 1 });

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
    const reserve = Number.isFinite(declared) && declared >= 0 ? declared : 0;
    if (!budget.take(reserve)) return done(busy(), undefined);
    held.set(req, reserve);
    const chunks: Buffer[] = [];
    let got = 0;
    let failed = false;
    const fail = (err: Error) => {
      if (failed) return;
      failed = true;
      payload.removeAllListeners('data');
      payload.resume();
      done(err, undefined);
    };
    payload.on('data', (c: Buffer) => {
      if (failed) return;
      got += c.length;
      if (got > limit) return fail(new PayloadTooLarge());
      const extra = got - (held.get(req) ?? 0);
      if (extra > 0) {
        if (!budget.take(extra)) return fail(busy());
        held.set(req, got);
      }
      chunks.push(c);
    });
    payload.on('error', (err) => fail(err));
    payload.on('end', () => {
      if (!failed) done(null, Buffer.concat(chunks, got));
    });
  });
}
