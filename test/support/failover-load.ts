/**
 * The failover test's load: events published at a steady rate through the real
 * `IngestPublisher` (one sequential lane per install, so the stream order of an install's
 * events is its publish order), and actor asks issued continuously through the real
 * `Router`. Every outcome is recorded, so the test can check each acknowledged event and
 * each ask afterwards.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { IngestPublisher } from '../../src/ingest/publish.js';
import type { IngestEvent } from '../../src/runtime/ports.js';
import { installKey } from '../../src/actors/install-protocol.js';
import { shardOf } from '../../src/runtime/names.js';
import type { Router } from '../../src/runtime/router.js';

export interface LoadInstall {
  installId: string;
  tenantId: string;
  /** The chat workspace (team id) the install is bound to. */
  teamId: string;
}

export interface AckedEvent {
  installId: string;
  id: string;
  /** Position in its install's lane: the order the stream holds it in. */
  n: number;
  ackedAt: number;
  duplicate: boolean;
}

/**
 * A chat `message` event as the chat connector would publish it (INTERFACE §4): id
 * `message:{channel_id}:{ts}`, payload with the fields the contract names.
 */
export function chatMessage(inst: LoadInstall, n: number): IngestEvent {
  const channel = `C${String(n % 3).padStart(8, '0')}`;
  const ts = `${1_700_000_000 + n}.${String(n).padStart(6, '0')}`;
  return {
    installId: inst.installId,
    tenantId: inst.tenantId,
    connectorId: 'chatapp',
    id: `message:${channel}:${ts}`,
    kind: 'message',
    occurredAt: new Date().toISOString(),
    payload: { channel_id: channel, channel_type: 'channel', ts, user: 'U0FAILOVER', text: `failover event ${n}` },
  };
}

export class SteadyPublisher {
  readonly acked: AckedEvent[] = [];
  readonly failed: Array<{ installId: string; id: string; error: string }> = [];
  private running = false;
  private lanes: Promise<void>[] = [];

  /** `ratePerInstall` events per second for each install. */
  constructor(
    private readonly publisher: IngestPublisher,
    private readonly installs: LoadInstall[],
    private readonly ratePerInstall: number,
  ) {}

  start(): void {
    this.running = true;
    const every = 1000 / this.ratePerInstall;
    this.lanes = this.installs.map(async (inst, i) => {
      // Stagger the lanes so the publishes spread over each interval.
      let due = performance.now() + (every * i) / this.installs.length;
      for (let n = 0; this.running; n++) {
        const wait = due - performance.now();
        if (wait > 0) await sleep(wait);
        due += every;
        const ev = chatMessage(inst, n);
        try {
          const r = await this.publisher.publish(ev);
          this.acked.push({ installId: inst.installId, id: ev.id, n, ackedAt: Date.now(), duplicate: r.duplicate });
        } catch (err) {
          this.failed.push({
            installId: inst.installId,
            id: ev.id,
            error: (err as { code?: string }).code ?? String(err),
          });
        }
      }
    });
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.lanes);
  }
}

export interface AskRecord {
  installId: string;
  shard: number;
  startedAt: number;
  endedAt: number;
  ok: boolean;
  code: string | null;
}

/** `loops` callers, each asking `refresh` of the next install `pauseMs` after its last ask ended. */
export class AskLoad {
  readonly records: AskRecord[] = [];
  private running = false;
  private loops: Promise<void>[] = [];

  constructor(
    private readonly router: Router,
    private readonly installs: LoadInstall[],
    private readonly shards: number,
    private readonly opts: { loops: number; pauseMs: number; timeoutMs: number },
  ) {}

  start(): void {
    this.running = true;
    let next = 0;
    this.loops = Array.from({ length: this.opts.loops }, async () => {
      while (this.running) {
        // One cursor shared by the loops, so every install is asked whatever the loop count.
        const inst = this.installs[next++ % this.installs.length]!;
        const key = installKey(inst.installId);
        const rec: AskRecord = {
          installId: inst.installId,
          shard: shardOf(key, this.shards),
          startedAt: Date.now(),
          endedAt: 0,
          ok: false,
          code: null,
        };
        try {
          // `refresh` only re-reads the install row: safe to resend after a node's death.
          const reply = await this.router.ask(
            key,
            { type: 'refresh' },
            { timeoutMs: this.opts.timeoutMs, idempotent: true },
          );
          rec.ok = (reply as { ok?: unknown } | null)?.ok === true;
          if (!rec.ok) rec.code = 'unexpected_reply';
        } catch (err) {
          const e = err as { kind?: string; code?: string };
          rec.code = `${e.kind ?? 'Error'}:${e.code ?? String(err)}`;
        }
        rec.endedAt = Date.now();
        this.records.push(rec);
        await sleep(this.opts.pauseMs);
      }
    });
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.loops);
  }
}
