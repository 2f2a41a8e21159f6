/**
 * What both chat transports do with one Events API `event_callback` (spec §6.1,
 * INTERFACE §3 `chatapp/events`): find the team's active install, turn the event into a
 * chat event and publish it durably; the transport acknowledges Slack only after this
 * resolved. `app_uninstalled` / `tokens_revoked` uninstall locally without calling Slack.
 * A retry of an event already taken carries the same content, hence the same event id
 * (normalize-event.ts): JetStream's duplicate window (`Nats-Msg-Id` `<install_id>:<id>`, 6
 * min, longer than Slack's retry schedule) answers it as a duplicate, and past the window
 * the events table's `(install_id, id)` key stores nothing twice. So the request path makes
 * no KV round trip, and the team's install comes from an announced cache
 * (claimed-installs-cache.ts), not a query per event (issue 12, item 2).
 */
import type pg from 'pg';
import { Unavailable } from '../../errors.js';
import type { Logger } from '../../log.js';
import type { IngestEvent } from '../../runtime/ports.js';
import { getBotIdentity, releaseClaim } from '../../store/chat-claims.js';
import { revokeCredentials } from '../../store/credentials.js';
import { withTx } from '../../store/db.js';
import { setInstallStatus, type Install } from '../../store/installs.js';
import type { ClaimedInstallsCache } from './claimed-installs-cache.js';
import { fromSlackEvent } from './normalize-event.js';

export interface IntakeDeps {
  pool: pg.Pool;
  log: Logger;
  publish(event: IngestEvent): Promise<unknown>;
  /** team id → its active install (store/chat-claims.ts `findClaimedInstall`, cached). */
  installs: ClaimedInstallsCache;
  /** Tell the install's actor its row changed (it caches the row). */
  refreshInstall(installId: string): Promise<void>;
  /** Slack gives 3 s; answer (with a retryable failure) before it gives up. Bounds the whole intake. */
  publishBudgetMs?: number;
}

export type IntakeResult = 'published' | 'duplicate' | 'no_install' | 'ignored' | 'uninstalled';

const DEFAULT_PUBLISH_BUDGET_MS = 2_500;
/** Team ids are short (`T…`); a longer one is not Slack's and is not looked up. */
const MAX_TEAM_ID = 255;

/**
 * The whole intake of one event, install lookup and publish included, bounded by one
 * budget (the lesser of `budgetMs` and `publishBudgetMs`): the HTTP route passes what is
 * left of its own, so a request makes one timer, not two (issue 12 profile).
 */
export function takeEventCallback(deps: IntakeDeps, body: unknown, budgetMs?: number): Promise<IntakeResult> {
  const own = deps.publishBudgetMs ?? DEFAULT_PUBLISH_BUDGET_MS;
  return withBudget(take(deps, body), budgetMs === undefined ? own : Math.min(budgetMs, own));
}

async function take(deps: IntakeDeps, body: unknown): Promise<IntakeResult> {
  // Checked by hand: this runs once per Slack event, and the normalisers check the event itself.
  const b = body as { type?: unknown; team_id?: unknown; event?: unknown } | null;
  const teamId = b?.team_id;
  const event = b?.event as Record<string, unknown> | null | undefined;
  if (
    b?.type !== 'event_callback' ||
    typeof teamId !== 'string' ||
    teamId.length === 0 ||
    teamId.length > MAX_TEAM_ID ||
    typeof event !== 'object' ||
    event === null ||
    Array.isArray(event) ||
    typeof event.type !== 'string'
  ) {
    deps.log.warn('chat event_callback without team_id or event; dropped');
    return 'ignored';
  }

  const install = await deps.installs.lookup(teamId);
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
  const ack = await deps.publish({
    installId: install.install_id,
    tenantId: install.tenant_id,
    connectorId: 'chatapp',
    ...draft,
  });
  // A retry inside the stream's duplicate window: stored once, acknowledged all the same.
  return (ack as { duplicate?: unknown } | null)?.duplicate === true ? 'duplicate' : 'published';
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
  // At once here; the announcement reaches the other edges.
  deps.installs.invalidate();
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
