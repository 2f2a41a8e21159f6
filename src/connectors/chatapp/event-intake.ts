/**
 * What both chat transports do with one Events API `event_callback` (spec §6.1,
 * INTERFACE §3 `chatapp/events`): find the team's active install, turn the event into a
 * chat event and publish it durably; the transport acknowledges Slack only after this
 * resolved. `app_uninstalled` / `tokens_revoked` uninstall locally without calling Slack.
 * A retry of an event already taken is recognised by Slack's `event_id` (dedup KV) and,
 * past that key's TTL, by the event id (JetStream window, then the events table key).
 */
import type pg from 'pg';
import { z } from 'zod';
import { Unavailable } from '../../errors.js';
import type { Logger } from '../../log.js';
import type { IngestEvent, KvPort } from '../../runtime/ports.js';
import { findClaimedInstall, getBotIdentity, releaseClaim } from '../../store/chat-claims.js';
import { revokeCredentials } from '../../store/credentials.js';
import { withTx } from '../../store/db.js';
import { setInstallStatus, type Install } from '../../store/installs.js';
import { fromSlackEvent } from './normalize-event.js';

export interface IntakeDeps {
  pool: pg.Pool;
  log: Logger;
  publish(event: IngestEvent): Promise<unknown>;
  dedup: KvPort;
  /** Tell the install's actor its row changed (it caches the row). */
  refreshInstall(installId: string): Promise<void>;
  /** Slack gives 3 s; answer (with a retryable failure) before it gives up. */
  publishBudgetMs?: number;
}

const EventCallback = z.object({
  type: z.literal('event_callback'),
  team_id: z.string().min(1),
  event_id: z.string().min(1).max(200).optional(),
  event: z.object({ type: z.string() }).passthrough(),
});

export type IntakeResult = 'published' | 'duplicate' | 'no_install' | 'ignored' | 'uninstalled';

const DEFAULT_PUBLISH_BUDGET_MS = 2_500;
const enc = new TextEncoder();

export async function takeEventCallback(deps: IntakeDeps, body: unknown): Promise<IntakeResult> {
  const p = EventCallback.safeParse(body);
  if (!p.success) {
    deps.log.warn('chat event_callback without team_id or event; dropped');
    return 'ignored';
  }
  const { team_id: teamId, event_id: eventId, event } = p.data;
  const seenKey = eventId ? `chat-event.${eventId.replace(/[^A-Za-z0-9_-]/g, '_')}` : null;
  if (seenKey && (await deps.dedup.get(seenKey).catch(() => null))) return 'duplicate';

  const install = await findClaimedInstall(deps.pool, teamId);
  if (!install) {
    deps.log.info(
      { teamId, eventType: event.type },
      'chat event for a team with no active install; acknowledged and dropped',
    );
    return 'no_install';
  }
  if (event.type === 'app_uninstalled' || event.type === 'tokens_revoked') {
    if (event.type === 'tokens_revoked' && !(await botTokenRevoked(deps.pool, install, event))) return 'ignored';
    await uninstallLocally(deps, install, event.type);
    return 'uninstalled';
  }
  const draft = fromSlackEvent(event);
  if (!draft) return 'ignored';
  await withBudget(
    deps.publish({ installId: install.install_id, tenantId: install.tenant_id, connectorId: 'chatapp', ...draft }),
    deps.publishBudgetMs ?? DEFAULT_PUBLISH_BUDGET_MS,
  );
  if (seenKey) await deps.dedup.create(seenKey, enc.encode('1')).catch(() => null);
  return 'published';
}

/** `tokens_revoked` lists user and bot tokens; only our bot's ends the install. */
async function botTokenRevoked(pool: pg.Pool, install: Install, event: Record<string, unknown>): Promise<boolean> {
  const bots = (event.tokens as { bot?: unknown } | undefined)?.bot;
  if (!Array.isArray(bots) || bots.length === 0) return false;
  const bot = await getBotIdentity(pool, install.install_id);
  return bot === null || bots.includes(bot.bot_user_id);
}

/** spec §3.1 without the upstream half: status, credentials and claim in one transaction. */
async function uninstallLocally(deps: IntakeDeps, install: Install, why: string): Promise<void> {
  await withTx(deps.pool, async (tx) => {
    await setInstallStatus(tx, install.install_id, 'uninstalled');
    await revokeCredentials(tx, install.install_id);
    await releaseClaim(tx, install.install_id);
  });
  deps.log.info(
    { installId: install.install_id, tenantId: install.tenant_id, why },
    'chat install uninstalled by the workspace',
  );
  await deps
    .refreshInstall(install.install_id)
    .catch((err: unknown) =>
      deps.log.warn(
        { err, installId: install.install_id },
        'install actor not told of the uninstall; it reloads on its next activation',
      ),
    );
}

export async function withBudget<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Unavailable('the event was not stored in time; Slack will retry it')), ms);
  });
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}
