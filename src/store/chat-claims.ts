/**
 * Chat workspace claims and bot identities (spec §2.2, §3.1). A claim is keyed by the
 * workspace's team id, so one workspace has at most one live install across every tenant;
 * the identity says who the bot is, for the self-emit filter (INTERFACE §8.23).
 */
import { Conflict, ErrorCodes } from '../errors.js';
import { isUuid, pgErrorCode, type Queryable } from './db.js';
import { getInstallById, type Install } from './installs.js';
import { sanitizeText } from './sanitize.js';

export interface BotIdentity {
  install_id: string;
  team_id: string;
  bot_user_id: string;
  bot_id: string | null;
  app_id: string;
  scopes: string[];
}

/** spec §7: a claimed workspace refuses a second install, whichever tenant asks. */
export function workspaceClaimed(cause?: unknown): Conflict {
  return new Conflict('this chat workspace is already installed', {
    code: ErrorCodes.workspaceAlreadyInstalled,
    cause,
  });
}

/** Inserts the claim; Conflict `workspace_already_installed` when the team is claimed. */
export async function claimWorkspace(
  q: Queryable,
  c: { teamId: string; installId: string; tenantId: string },
): Promise<void> {
  try {
    await q.query('INSERT INTO chat_workspace_claims (team_id, install_id, tenant_id) VALUES ($1, $2, $3)', [
      sanitizeText(c.teamId),
      c.installId,
      c.tenantId,
    ]);
  } catch (err) {
    if (pgErrorCode(err) === '23505') throw workspaceClaimed(err);
    throw err;
  }
}

/** Releases the claim of an install (uninstall transaction); idempotent. */
export async function releaseClaim(q: Queryable, installId: string): Promise<void> {
  if (!isUuid(installId)) return;
  await q.query('DELETE FROM chat_workspace_claims WHERE install_id = $1', [installId]);
}

/** The active install that holds the team's claim, or null (events of unknown teams are dropped). */
export async function findClaimedInstall(q: Queryable, teamId: string): Promise<Install | null> {
  const { rows } = await q.query<{ install_id: string }>(
    `SELECT c.install_id FROM chat_workspace_claims c JOIN installs i USING (install_id)
     WHERE c.team_id = $1 AND i.status = 'active'`,
    [sanitizeText(teamId)],
  );
  return rows[0] ? getInstallById(q, rows[0].install_id) : null;
}

export async function saveBotIdentity(q: Queryable, tenantId: string, id: BotIdentity): Promise<void> {
  await q.query(
    `INSERT INTO chat_bot_identities (install_id, tenant_id, team_id, bot_user_id, bot_id, app_id, scopes)
     VALUES ($1, $2, $3, $4, $5, $6, $7)
     ON CONFLICT (install_id) DO UPDATE
       SET bot_user_id = EXCLUDED.bot_user_id, bot_id = EXCLUDED.bot_id, app_id = EXCLUDED.app_id,
           scopes = EXCLUDED.scopes`,
    [
      id.install_id,
      tenantId,
      sanitizeText(id.team_id),
      sanitizeText(id.bot_user_id),
      id.bot_id,
      sanitizeText(id.app_id),
      id.scopes.map(sanitizeText),
    ],
  );
}

export async function getBotIdentity(q: Queryable, installId: string): Promise<BotIdentity | null> {
  if (!isUuid(installId)) return null;
  const { rows } = await q.query<BotIdentity>(
    'SELECT install_id, team_id, bot_user_id, bot_id, app_id, scopes FROM chat_bot_identities WHERE install_id = $1',
    [installId],
  );
  return rows[0] ?? null;
}

/** Active chat installs whose backfill has not ended: the walkers to resume on a shard move. */
export async function listUnfinishedBackfills(q: Queryable): Promise<string[]> {
  const { rows } = await q.query<{ install_id: string }>(
    `SELECT install_id FROM installs
     WHERE connector_id = 'chatapp' AND status = 'active' AND backfill_state IN ('pending', 'running')
     ORDER BY created_at`,
  );
  return rows.map((r) => r.install_id);
}

/**
 * Tier 2 of the self-emit filter (spec §6.3, INTERFACE §8.20), for a batch of one or more
 * installs: which of these `(channel, ts)` messages did the named install post (as
 * `emittedMessageKey`s)? Chat emitted rows keep the channel id in repo_full_name and 0 as
 * the number, so each is one probe of the five-field unique index.
 */
export async function emittedMessagesAmong(
  q: Queryable,
  posts: ReadonlyArray<{ installId: string; channelId: string; ts: string }>,
): Promise<Set<string>> {
  const asked = posts.filter((p) => isUuid(p.installId));
  if (asked.length === 0) return new Set();
  const { rows } = await q.query<{ install_id: string; channel_id: string; ts: string }>(
    `SELECT e.install_id, e.repo_full_name AS channel_id, e.provider_id AS ts
     FROM emitted_events e JOIN unnest($1::uuid[], $2::text[], $3::text[]) AS p(install_id, channel_id, ts)
       ON e.install_id = p.install_id AND e.repo_full_name = p.channel_id AND e.provider_id = p.ts
     WHERE e.kind = 'chatapp.message' AND e.issue_or_pr_number = 0`,
    [asked.map((p) => p.installId), asked.map((p) => sanitizeText(p.channelId)), asked.map((p) => sanitizeText(p.ts))],
  );
  return new Set(rows.map((r) => emittedMessageKey(r.install_id, r.channel_id, r.ts)));
}

/** How `emittedMessagesAmong` names a post it found. */
export function emittedMessageKey(installId: string, channelId: string, ts: string): string {
  return `${installId}\u0000${channelId}\u0000${ts}`;
}
