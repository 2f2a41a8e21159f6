/**
 * Where the chat side's gaps come from (INTERFACE §10.6). Slack keeps no delivery log: an
 * event it could not deliver after its three tries, or one past its rate limit, is gone. So
 * the edge records the windows it may have missed, per install, for the install's walker to
 * re-read (actors/chatapp/chat-catch-up.ts):
 * - `app_rate_limited`: Slack dropped the team's events for the minute it names;
 * - a refusal: this node answered an event of the install with a non-2xx (Slack may give up);
 * - an outage: every node with the events transport writes a heartbeat to KV every few
 *   seconds; a node that finds it older than `staleMs` knows no node accepted events since
 *   then (the service was down, or NATS was), and records that window for every active
 *   chat install before beating again.
 */
import type pg from 'pg';
import type { Logger } from '../../log.js';
import type { KvPort } from '../../runtime/ports.js';
import { recordGapForAll, recordTeamGap } from '../../store/chat-catch-up.js';

type GapReason = 'app_rate_limited' | 'refused' | 'outage';

export interface GapWatchDeps {
  /** Bounded queries (the request pool): a stalled Postgres delays a record, never a route. */
  pool: pg.Pool;
  /** A bucket without TTL (the cursors): an outage longer than a TTL must still show. */
  kv: KvPort;
  log: Logger;
  /** Resume the install's walker, which takes the gap once it has ended. */
  wake(installId: string): Promise<void>;
  /** Counts recorded gaps (a metric). */
  onGap?(reason: GapReason, installs: number): void;
  now?: () => number;
  beatMs?: number;
  staleMs?: number;
}

const HEARTBEAT_KEY = 'chatapp.edge-heartbeat';
const BEAT_MS = 3_000;
/**
 * No beat for this long: no node with the events transport was up, or none reached NATS.
 * A shorter outage loses nothing: Slack retries a failed event a minute after its first try,
 * which then falls after the outage ended.
 */
const STALE_MS = 45_000;
/** Slack retries a refused event after about a minute: the refusal's window runs that long. */
const REFUSAL_WINDOW_MS = 60_000;
/** Slack's `app_rate_limited` names the minute in which it drops the team's events. */
const RATE_LIMITED_MINUTE_MS = 60_000;
/** Refusals kept unrecorded (Postgres away) at most, per node. */
const MAX_HELD = 1_000;

const enc = new TextEncoder();
const dec = new TextDecoder();

export class GapWatch {
  private readonly now: () => number;
  private readonly held = new Map<string, { since: number; until: number }>();
  private timer: NodeJS.Timeout | null = null;
  private beating: Promise<void> | null = null;

  constructor(private readonly d: GapWatchDeps) {
    this.now = d.now ?? Date.now;
  }

  start(): void {
    if (this.timer) return;
    this.tick();
    this.timer = setInterval(() => this.tick(), this.d.beatMs ?? BEAT_MS);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.beating;
  }

  /** `app_rate_limited`: Slack dropped the team's events of that minute. */
  async rateLimited(teamId: string, minuteRateLimited: unknown): Promise<void> {
    const s = Number(minuteRateLimited);
    const now = this.now();
    // A minute Slack names is recent; anything else (absent, far off) is taken as now.
    const since = Number.isFinite(s) && Math.abs(s * 1000 - now) < 3_600_000 ? s * 1000 : now;
    const installId = await recordTeamGap(this.d.pool, teamId, since, since + RATE_LIMITED_MINUTE_MS);
    if (installId !== null) {
      this.d.onGap?.('app_rate_limited', 1);
      this.d.log.warn({ installId, since: new Date(since).toISOString() }, 'chat gap recorded: app_rate_limited');
      await this.wake([installId]);
    }
  }

  /** This node answered one of the team's events with a non-2xx; recorded off the request path. */
  refused(teamId: string, atMs = this.now()): void {
    const h = this.held.get(teamId);
    const until = this.now() + REFUSAL_WINDOW_MS;
    if (h) {
      h.since = Math.min(h.since, atMs);
      h.until = Math.max(h.until, until);
    } else if (this.held.size < MAX_HELD) {
      this.held.set(teamId, { since: atMs, until });
      void this.flush();
    }
  }

  private tick(): void {
    this.beating ??= this.beat()
      .catch((err: unknown) => this.d.log.warn({ err }, 'chat edge heartbeat failed; retried at the next beat'))
      .finally(() => (this.beating = null));
  }

  private async beat(): Promise<void> {
    await this.flush();
    const now = this.now();
    const stored = await this.d.kv.get(HEARTBEAT_KEY);
    const last = stored ? Number(dec.decode(stored.value)) : NaN;
    if (Number.isFinite(last) && now - last > (this.d.staleMs ?? STALE_MS)) {
      const ids = await recordGapForAll(this.d.pool, last, now);
      this.d.onGap?.('outage', ids.length);
      this.d.log.warn(
        { since: new Date(last).toISOString(), awayMs: now - last, installs: ids.length },
        'no node accepted chat events for a while; a catch-up of that window is recorded',
      );
      await this.wake(ids);
    }
    const value = enc.encode(String(now));
    // Another node beating at the same time wins the compare-and-set; either beat will do.
    if (stored) await this.d.kv.update(HEARTBEAT_KEY, value, stored.revision);
    else await this.d.kv.create(HEARTBEAT_KEY, value);
  }

  private async flush(): Promise<void> {
    for (const [teamId, w] of [...this.held]) {
      try {
        const installId = await recordTeamGap(this.d.pool, teamId, w.since, w.until);
        this.held.delete(teamId);
        if (installId === null) continue;
        this.d.onGap?.('refused', 1);
        this.d.log.warn({ installId, since: new Date(w.since).toISOString() }, 'chat gap recorded: events refused');
        await this.wake([installId]);
      } catch (err) {
        this.d.log.warn({ err, teamId }, 'chat refusal window not recorded yet; retried at the next beat');
        return;
      }
    }
  }

  private async wake(ids: readonly string[]): Promise<void> {
    // Best effort: the resume sweep finds an open catch-up within a minute anyway.
    const results = await Promise.allSettled(ids.map((id) => this.d.wake(id)));
    const failed = results.filter((r) => r.status === 'rejected').length;
    if (failed > 0) this.d.log.info({ failed }, 'catch-up walkers not woken; the resume sweep starts them');
  }
}
