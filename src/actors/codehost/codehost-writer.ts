/**
 * The code-host write actor: key `codehost-writes/{github_installation_id}`, the single
 * writer to GitHub for one installation across every tenant it is installed into. Writes
 * are serialised (one message at a time) and paced (`WritePacer`); when GitHub answers a
 * write with a rate limit, the installation refuses further writes until the wait passed
 * (INTERFACE §8.4, §8.26), also on another node after a move: the hold is kept in KV.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { RateLimited } from '../../errors.js';
import type { Logger } from '../../log.js';
import type { KvPort } from '../../runtime/ports.js';
import { parseWrite, type CodehostWrite } from '../../connectors/codehost/emit-schema.js';
import type { InstallRef } from '../../connectors/codehost/github-client.js';
import type { WriteOutcome } from '../../connectors/codehost/perform-write.js';
import { GITHUB_WRITE_BURST, GITHUB_WRITES_PER_MINUTE, WritePacer } from '../../connectors/codehost/write-pacer.js';
import type { ActorDefinition } from '../../runtime/actor-definition.js';
import { CODEHOST_WRITER_KIND, type CodehostWriterProtocol } from './codehost-writer-protocol.js';

export interface CodehostWriterPorts {
  /** Performs one write and records it; throws classified errors (RateLimited, UpstreamError). */
  write(
    install: InstallRef,
    w: CodehostWrite,
    signal: AbortSignal,
    log: Logger,
    idempotencyKey?: string,
  ): Promise<WriteOutcome>;
  /** Where holds survive a move (a KV bucket whose TTL outlives typical holds). */
  holds: KvPort;
  pacing?: { perMinute: number; burst: number };
  /** Longest wait for a slot; past it the write is refused with 429. Default 10 s, the emit budget of INTERFACE §3. */
  maxWaitMs?: number;
  /** Kept free inside the caller's deadline for the upstream call itself. */
  upstreamBudgetMs?: number;
}

interface WriterState {
  pacer: WritePacer;
  holdKey: string;
}

const enc = new TextEncoder();
const dec = new TextDecoder();

/** The cursors-bucket key of an App installation's write hold: `codehost-hold.<installation id>`. */
export const CODEHOST_HOLD_PREFIX = 'codehost-hold';

export function codehostWriterActor(ports: CodehostWriterPorts): ActorDefinition<WriterState, CodehostWriterProtocol> {
  const pacing = ports.pacing ?? { perMinute: GITHUB_WRITES_PER_MINUTE, burst: GITHUB_WRITE_BURST };
  const maxWaitMs = ports.maxWaitMs ?? 10_000;
  const upstreamBudgetMs = ports.upstreamBudgetMs ?? 11_000;

  return {
    kind: CODEHOST_WRITER_KIND,
    async hydrate(key) {
      const holdKey = `${CODEHOST_HOLD_PREFIX}.${key.id[0]}`;
      const pacer = new WritePacer(pacing, Date.now());
      const held = await ports.holds.get(holdKey);
      if (held) {
        const until = Number((JSON.parse(dec.decode(held.value)) as { until?: unknown }).until);
        if (Number.isFinite(until)) pacer.hold(until);
      }
      return { pacer, holdKey };
    },
    handlers: {
      async write(ctx, msg) {
        // Re-validated: the message crossed NATS from a node that may run another version.
        const { kind, ...body } = msg.write;
        const w = parseWrite(kind, body);
        const now = Date.now();
        const budget = Math.min(maxWaitMs, ctx.deadline - now - upstreamBudgetMs);
        const slot = ctx.state.pacer.reserve(now, budget);
        if (!slot.ok) {
          throw new RateLimited(
            slot.held
              ? 'GitHub asked this installation to slow down; its writes are held until the wait has passed'
              : 'this installation is writing as fast as GitHub allows; retry shortly',
            slot.retryAfterMs / 1000,
            { details: { held: slot.held } },
          );
        }
        if (slot.waitMs > 0) await sleep(slot.waitMs, undefined, { signal: ctx.signal });
        try {
          return await ports.write(msg.install, w, ctx.signal, ctx.log, msg.idempotencyKey);
        } catch (err) {
          if (err instanceof RateLimited && err.retryAfterS !== undefined) {
            const until = Date.now() + err.retryAfterS * 1000;
            ctx.state.pacer.hold(until);
            ctx.log.warn({ retryAfterS: err.retryAfterS }, 'GitHub rate-limited a write; holding this installation');
            await ports.holds.put(ctx.state.holdKey, enc.encode(JSON.stringify({ until }))).catch((e: unknown) => {
              ctx.log.warn({ err: e }, 'write hold not persisted; it holds on this node only');
            });
          }
          throw err;
        }
      },
    },
  };
}
