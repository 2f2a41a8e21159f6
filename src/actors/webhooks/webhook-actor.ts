/**
 * The delivery actor of one tenant webhook, key `webhook/{webhook_id}` (INTERFACE §10.2,
 * ARCHITECTURE "Following the graph"). Like every actor it lives on the shard its key hashes
 * to, so the shard lease is its lease: at most one activation in the cluster, taken over by a
 * survivor when its node dies (the module resumes it on shard acquisition and once a minute).
 *
 * One delivery in flight, in feed order: a tick reads the changes after the webhook's cursor
 * (its kinds only, up to 100), stores them as the pending message with a fresh `webhook-id`
 * before the first attempt, and posts it; the cursor moves past the message only after a 2xx.
 * A failed attempt is retried with the effects' capped backoff (first within 10 s, at most 5
 * minutes apart), the same message with the same id, on whichever node holds the actor then.
 * After 24 hours of failures the webhook is `failing`, after 72 `disabled` (it stops; enabling
 * it resumes from the pending message, i.e. from its last delivered cursor). While caught up
 * it waits for its tenant's feed notice, and re-reads every 5 s in case one was lost.
 */
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { AppError, ErrorCodes } from '../../errors.js';
import { readChanges, type ChangesPage } from '../../graph/change-read.js';
import type { ActorDefinition } from '../../runtime/actor-definition.js';
import type { FeedWaker } from '../../runtime/feed-notices.js';
import type { ActorAsk, KeyOf } from '../../runtime/ports.js';
import { createTicker, type Ticker } from '../../runtime/ticker.js';
import type { CredentialCipher } from '../../store/credential-cipher.js';
import {
  advanceWebhookCursor,
  loadWebhookRow,
  markFailed,
  recordDelivery,
  setPendingMessage,
} from '../../store/webhook-deliveries.js';
import { openSecret, type WebhookRow } from '../../store/webhooks.js';
import { checkWebhookUrl, type Resolver, type WebhookUrlPolicy } from '../../webhook-url.js';
import { effectRetryDelayMs } from '../../effects/effect-retry.js';
import { postDelivery, type AttemptOutcome } from './post-delivery.js';
import { WEBHOOK_KIND, type WebhookProtocol } from './webhook-protocol.js';

interface WebhookTimings {
  retryBaseMs: number;
  retryCapMs: number;
  failingAfterMs: number;
  disabledAfterMs: number;
  /** Re-read this often while caught up, in case a feed notice was lost. */
  safetyPollMs: number;
}

const DEFAULT_WEBHOOK_TIMINGS: WebhookTimings = {
  retryBaseMs: 5_000,
  retryCapMs: 5 * 60_000,
  failingAfterMs: 24 * 3600_000,
  disabledAfterMs: 72 * 3600_000,
  safetyPollMs: 5_000,
};

export interface WebhookPorts {
  pool: pg.Pool;
  actors: ActorAsk;
  cipher: CredentialCipher;
  feed: FeedWaker;
  policy: WebhookUrlPolicy;
  retentionDays: number;
  resolve?: Resolver;
  timings?: Partial<WebhookTimings>;
  now?: () => number;
  onAttempt?(outcome: AttemptOutcome): void;
}

interface State {
  ticker: Ticker;
  waiting: AbortController | null;
}

const TICK_TIMEOUT_MS = 30_000;
/** A tick delivers for at most this long (well within its message's deadline: one attempt takes at most 10 s). */
const BUSY_MS = 10_000;
const MESSAGE_CHANGES = 100;

export function webhookActor(ports: WebhookPorts): ActorDefinition<State, WebhookProtocol> {
  const now = ports.now ?? Date.now;
  const t = { ...DEFAULT_WEBHOOK_TIMINGS, ...ports.timings };

  /** While caught up: the next tick comes with the tenant's next commit, or the safety poll. */
  const waitForFeed = (s: State, tenantId: string, head: number) => {
    s.waiting?.abort();
    const ctl = (s.waiting = new AbortController());
    void ports.feed.wait(tenantId, head, t.safetyPollMs, ctl.signal).then(() => {
      if (!ctl.signal.aborted) s.ticker.arm(0);
    });
  };

  const secretsOf = (row: WebhookRow): string[] => {
    const open = (sealed: Buffer) => openSecret(ports.cipher, row.tenant_id, row.id, sealed);
    const live = row.previous_secret && row.previous_until && row.previous_until.getTime() > now();
    return live ? [open(row.secret), open(row.previous_secret!)] : [open(row.secret)];
  };

  async function attempt(s: State, row: WebhookRow): Promise<boolean> {
    const messageId = row.pending_message_id!;
    const body = row.pending_body!;
    const changes = (JSON.parse(body) as { changes: unknown[] }).changes.length;
    let outcome: AttemptOutcome;
    try {
      // INTERFACE §10.2: the URL is checked again at every delivery, and the checked address is the one connected to.
      const target = await checkWebhookUrl(row.url, ports.policy, ports.resolve);
      outcome = await postDelivery(target.url, target.address, { messageId, body, secrets: secretsOf(row) });
    } catch (err) {
      outcome = {
        ok: false,
        statusCode: null,
        error: err instanceof AppError ? err.message : 'refused',
        durationMs: 0,
      };
    }
    ports.onAttempt?.(outcome);
    const attemptedAt = new Date(now() - outcome.durationMs);
    const attempt = {
      webhookId: row.id,
      tenantId: row.tenant_id,
      message_id: messageId,
      attemptedAt,
      status_code: outcome.statusCode,
      error: outcome.error,
      duration_ms: outcome.durationMs,
      changes,
    };
    await recordDelivery(ports.pool, attempt, outcome.ok);
    if (outcome.ok) return true;
    const attempts = row.attempts + 1;
    const failingSince = row.failing_since ?? attemptedAt;
    const streak = now() - failingSince.getTime();
    const status = streak >= t.disabledAfterMs ? 'disabled' : streak >= t.failingAfterMs ? 'failing' : row.status;
    const delay = effectRetryDelayMs(attempts, t);
    await markFailed(ports.pool, row.id, {
      attempts,
      nextAttemptAt: new Date(now() + delay),
      failingSince,
      status,
    });
    if (status !== 'disabled') s.ticker.arm(delay);
    return false;
  }

  /** The changes after the cursor; past the retention (a webhook disabled that long), from the oldest kept. */
  async function nextChanges(row: WebhookRow): Promise<ChangesPage & { head: number }> {
    const opts = { limit: MESSAGE_CHANGES, kinds: row.kinds, retentionDays: ports.retentionDays };
    try {
      return await readChanges(ports.pool, row.tenant_id, { ...opts, cursor: row.cursor });
    } catch (err) {
      if (!(err instanceof AppError && err.code === ErrorCodes.cursorExpired)) throw err;
      return readChanges(ports.pool, row.tenant_id, opts);
    }
  }

  /** One message: `again` when it was delivered (more may wait), else `idle` or `failed`. */
  async function step(s: State, id: string): Promise<'again' | 'idle' | 'failed'> {
    let row = await loadWebhookRow(ports.pool, id);
    if (!row || row.status === 'disabled') return 'idle';
    if (row.pending_message_id === null) {
      const page = await nextChanges(row);
      if (page.changes.length === 0) {
        if (page.next_cursor !== row.cursor)
          await advanceWebhookCursor(ports.pool, row.id, row.cursor, page.next_cursor);
        waitForFeed(s, row.tenant_id, page.head);
        return 'idle';
      }
      const messageId = `msg_${randomUUID().replaceAll('-', '')}`;
      const body = JSON.stringify({
        type: 'graph.changed',
        webhook_id: row.id,
        changes: page.changes,
        next_cursor: page.next_cursor,
      });
      const pending = { messageId, body, cursor: page.next_cursor };
      if (await setPendingMessage(ports.pool, row.id, pending)) {
        row = { ...row, pending_message_id: messageId, pending_body: body, pending_cursor: page.next_cursor };
        row = { ...row, attempts: 0, next_attempt_at: null };
      } else {
        row = await loadWebhookRow(ports.pool, id);
        if (!row?.pending_message_id) return 'idle';
      }
    }
    const due = row.next_attempt_at?.getTime() ?? 0;
    if (due > now()) {
      s.ticker.arm(due - now());
      return 'idle';
    }
    return (await attempt(s, row)) ? 'again' : 'failed';
  }

  return {
    kind: WEBHOOK_KIND,
    // Ticks keep it active while it delivers or waits; it goes away with its shard or its webhook.
    idleMs: 10 * 60_000,
    mailboxCapacity: 8,
    async hydrate(key) {
      const ticker = createTicker({
        fire: () => ports.actors.ask(key as KeyOf<WebhookProtocol>, { type: 'tick' }, { timeoutMs: TICK_TIMEOUT_MS }),
        onError: () => undefined, // a lost tick is re-armed by the resume sweep
        maxDelayMs: t.retryCapMs,
      });
      return { ticker, waiting: null };
    },
    handlers: {
      async resume(ctx) {
        if (ctx.state.ticker.dueAt === null) ctx.state.ticker.arm(0);
        return { ok: true as const };
      },
      async tick(ctx) {
        const s = ctx.state;
        s.waiting?.abort();
        s.waiting = null;
        // Message after message in one tick while the endpoint takes them (no round trip through
        // the router between two), for at most BUSY_MS; then the next tick goes on.
        const until = now() + BUSY_MS;
        for (;;) {
          const next = await step(s, ctx.key.id[0]!);
          if (next !== 'again') return { ok: next === 'idle' };
          if (now() >= until || ctx.signal.aborted) {
            s.ticker.arm(0);
            return { ok: true };
          }
        }
      },
    },
    async onPassivate({ state }) {
      state.ticker.stop();
      state.waiting?.abort();
    },
  };
}
