/**
 * The change feed as Server-Sent Events (INTERFACE §10.1), and the bookkeeping of requests
 * the feed holds open: one `event: change` per change (`id:` its cursor, `data:` its JSON),
 * written as soon as a notice says the tenant's feed advanced; a comment line when nothing
 * was written for 10 s (the contract says at least every 15 s), which also keeps proxies
 * and the server's idle timeout from cutting a quiet stream.
 *
 * A stream ends when the client goes, when the node closes, or when a read fails (Postgres
 * gone): the client's EventSource then reconnects with `Last-Event-ID` and misses nothing.
 */
import { once } from 'node:events';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { RateLimited } from '../../errors.js';
import { readChanges, type ChangesPage, type ReadOptions } from '../../graph/change-read.js';
import type { EdgeContext } from '../context.js';
import { runWithWaitBudget, WaitBudget } from '../../wait-budget.js';

/** Changes read per step of a stream. */
const STREAM_PAGE = 100;
const HEARTBEAT_MS = 10_000;
/** Re-read at least this often while waiting, in case a notice was lost. */
export const SAFETY_POLL_MS = 5_000;
/** Streams and held long-polls one tenant may have open on one node. */
const MAX_HELD_PER_TENANT = 64;

export function wantsEventStream(req: FastifyRequest): boolean {
  const accept = req.headers.accept;
  return typeof accept === 'string' && /(^|,)\s*text\/event-stream\s*(;|,|$)/i.test(accept);
}

export interface Held {
  signal: AbortSignal;
  release(): void;
}

export class FeedStreams {
  private readonly open = new Set<AbortController>();
  private readonly perTenant = new Map<string, number>();

  constructor(private readonly ctx: EdgeContext) {}

  /** Registers a request the feed holds open; aborted when its client goes or the node closes. */
  hold(req: FastifyRequest, mode: 'sse' | 'long_poll'): Held {
    const tenantId = req.tenantId;
    const count = this.perTenant.get(tenantId) ?? 0;
    if (count >= MAX_HELD_PER_TENANT) throw new RateLimited('too many open change streams for this tenant', 5);
    this.perTenant.set(tenantId, count + 1);
    this.ctx.metrics.feedHeld.inc({ mode });
    const ctl = new AbortController();
    this.open.add(ctl);
    const onClose = () => ctl.abort();
    req.raw.socket?.once('close', onClose);
    let released = false;
    return {
      signal: ctl.signal,
      release: () => {
        if (released) return;
        released = true;
        req.raw.socket?.off('close', onClose);
        this.open.delete(ctl);
        this.ctx.metrics.feedHeld.dec({ mode });
        const left = (this.perTenant.get(tenantId) ?? 1) - 1;
        if (left > 0) this.perTenant.set(tenantId, left);
        else this.perTenant.delete(tenantId);
      },
    };
  }

  closeAll(): void {
    for (const ctl of this.open) ctl.abort();
  }

  /** Streams the feed from `first` (already read, so a bad cursor was answered as JSON). */
  async serve(req: FastifyRequest, reply: FastifyReply, base: ReadOptions, first: ChangesPage & { head: number }) {
    const held = this.hold(req, 'sse');
    const { signal } = held;
    reply.hijack();
    const res = reply.raw;
    for (const [name, value] of Object.entries(reply.getHeaders())) if (value !== undefined) res.setHeader(name, value);
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      'x-accel-buffering': 'no',
    });
    let lastWrite = Date.now();
    const write = async (chunk: string) => {
      lastWrite = Date.now();
      if (!res.write(chunk)) await once(res, 'drain', { signal });
    };
    let page = first;
    try {
      await write(': change feed\n\n');
      while (!signal.aborted) {
        for (const c of page.changes) await write(`id: ${c.cursor}\nevent: change\ndata: ${JSON.stringify(c)}\n\n`);
        if (page.changes.length < STREAM_PAGE) {
          const quietFor = Date.now() - lastWrite;
          const ms = Math.max(0, Math.min(SAFETY_POLL_MS, HEARTBEAT_MS - quietFor));
          await this.ctx.feed.wait(req.tenantId, page.head, ms, signal);
          if (signal.aborted) break;
          if (Date.now() - lastWrite >= HEARTBEAT_MS) await write(': keep-alive\n\n');
        }
        // INTERFACE §9.3: each read of a stream is a wait of its own, with its own 2 s (wait-budget.ts).
        const cursor = page.next_cursor;
        page = await runWithWaitBudget(new WaitBudget(), () =>
          readChanges(this.ctx.db, req.tenantId, { ...base, cursor, limit: STREAM_PAGE }),
        );
      }
    } catch (err) {
      if (!signal.aborted) req.log.warn({ err }, 'change stream ended by a failed read; the client resumes');
    } finally {
      held.release();
      res.end();
    }
  }
}
