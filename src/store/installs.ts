/**
 * Install records (INTERFACE §3 "installs" routes). Every tenant-facing read filters on
 * tenant_id, and a foreign or malformed install id reads as null: the edge answers both
 * with the same 404 (INTERFACE §2).
 */
import { Conflict, ErrorCodes, NotFound } from '../errors.js';
import { isUuid, pgConstraint, pgErrorCode, toIso, type Queryable } from './db.js';
import { jsonText, sanitizeText } from './sanitize.js';
import { CATCH_UP_COLUMNS, catchUpOf, type CatchUpColumns, type InstallCatchUp } from './chat-catch-up.js';

/** Every connector this build ships (spec §4): the one list, for the store's rows and the routes' schemas. */
export const CONNECTOR_IDS = ['chatapp', 'codehost'] as const;
export type ConnectorId = (typeof CONNECTOR_IDS)[number];

export function isConnectorId(v: unknown): v is ConnectorId {
  return typeof v === 'string' && (CONNECTOR_IDS as readonly string[]).includes(v);
}
/** INTERFACE §9.4: `suspended` while the GitHub installation is suspended (same install on unsuspend). */
export type InstallStatus = 'active' | 'suspended' | 'uninstalled';
export type BackfillState = 'pending' | 'running' | 'complete' | 'failed';

interface InstallBackfill {
  state: BackfillState;
  updated_at: string;
  /** Extra progress fields (INTERFACE §3, §8.21: e.g. channels skipped as not_in_channel). */
  [progress: string]: unknown;
}

export interface Install {
  install_id: string;
  tenant_id: string;
  connector_id: ConnectorId;
  status: InstallStatus;
  external_id: string;
  display_name: string | null;
  created_at: string;
  updated_at: string;
  backfill: InstallBackfill;
  /** Chat installs only (INTERFACE §10.6): gaps in Slack's deliveries and their re-read. */
  catch_up?: InstallCatchUp;
}

export interface NewInstall {
  tenantId: string;
  connectorId: ConnectorId;
  externalId: string;
  displayName?: string | null;
  status?: InstallStatus;
}

interface InstallRow extends CatchUpColumns {
  install_id: string;
  tenant_id: string;
  connector_id: ConnectorId;
  status: InstallStatus;
  external_id: string;
  display_name: string | null;
  created_at: Date;
  updated_at: Date;
  backfill_state: BackfillState;
  backfill_progress: Record<string, unknown>;
  backfill_updated_at: Date | null;
}

const COLUMNS = `install_id, tenant_id, connector_id, status, external_id, display_name, created_at,
  updated_at, backfill_state, backfill_progress, backfill_updated_at, ${CATCH_UP_COLUMNS}`;

function toInstall(r: InstallRow): Install {
  return {
    install_id: r.install_id,
    tenant_id: r.tenant_id,
    connector_id: r.connector_id,
    status: r.status,
    external_id: r.external_id,
    display_name: r.display_name,
    created_at: toIso(r.created_at),
    updated_at: toIso(r.updated_at),
    backfill: {
      // Progress first so it can never overwrite the two fields the contract names.
      ...r.backfill_progress,
      state: r.backfill_state,
      // A backfill never touched has been pending since the install was created.
      updated_at: toIso(r.backfill_updated_at ?? r.created_at),
    },
    ...(r.connector_id === 'chatapp' ? { catch_up: catchUpOf(r) } : {}),
  };
}

/** The tenant's installs, newest first (INTERFACE §3). */
export async function listInstalls(q: Queryable, tenantId: string, connectorId?: ConnectorId): Promise<Install[]> {
  if (!isUuid(tenantId)) return [];
  const { rows } = await q.query<InstallRow>(
    `SELECT ${COLUMNS} FROM installs
     WHERE tenant_id = $1 AND ($2::text IS NULL OR connector_id = $2)
     ORDER BY created_at DESC, install_id DESC`,
    [tenantId, connectorId ?? null],
  );
  return rows.map(toInstall);
}

export async function getInstall(q: Queryable, tenantId: string, installId: string): Promise<Install | null> {
  if (!isUuid(tenantId) || !isUuid(installId)) return null;
  const { rows } = await q.query<InstallRow>(
    `SELECT ${COLUMNS} FROM installs WHERE install_id = $1 AND tenant_id = $2`,
    [installId, tenantId],
  );
  return rows[0] ? toInstall(rows[0]) : null;
}

/** System use only (actors, consumers): no tenant filter. */
export async function getInstallById(q: Queryable, installId: string): Promise<Install | null> {
  if (!isUuid(installId)) return null;
  const { rows } = await q.query<InstallRow>(`SELECT ${COLUMNS} FROM installs WHERE install_id = $1`, [installId]);
  return rows[0] ? toInstall(rows[0]) : null;
}

/**
 * Active installs bound to an external id, oldest first: the webhook fan-out (one per
 * tenant), and the oldest one performs GitHub-side effects (INTERFACE §8.7).
 */
export async function findActiveInstalls(
  q: Queryable,
  connectorId: ConnectorId,
  externalId: string,
): Promise<Install[]> {
  const { rows } = await q.query<InstallRow>(
    `SELECT ${COLUMNS} FROM installs
     WHERE connector_id = $1 AND external_id = $2 AND status = 'active'
     ORDER BY created_at, install_id`,
    [connectorId, sanitizeText(externalId)],
  );
  return rows.map(toInstall);
}

/**
 * Throws Conflict `already_installed` when the tenant already has an active install of
 * this external id (callers with a more specific code, e.g. `workspace_already_installed`,
 * check first or re-code it), NotFound when the tenant does not exist.
 */
export async function createInstall(q: Queryable, input: NewInstall): Promise<Install> {
  if (!isUuid(input.tenantId)) throw new NotFound('tenant not found');
  try {
    const { rows } = await q.query<InstallRow>(
      `INSERT INTO installs (tenant_id, connector_id, status, external_id, display_name)
       VALUES ($1, $2, $3, $4, $5)
       RETURNING ${COLUMNS}`,
      [
        input.tenantId,
        input.connectorId,
        input.status ?? 'active',
        sanitizeText(input.externalId),
        input.displayName == null ? null : sanitizeText(input.displayName),
      ],
    );
    return toInstall(rows[0]!);
  } catch (err) {
    const code = pgErrorCode(err);
    if (code === '23505' && pgConstraint(err) === 'installs_active_external') {
      throw new Conflict('this tenant already has an active install of it', {
        code: ErrorCodes.alreadyInstalled,
        cause: err,
      });
    }
    if (code === '23503') throw new NotFound('tenant not found', { cause: err });
    throw err;
  }
}

/**
 * Returns the updated install, or null when there is none with that id (or, with `from`,
 * none in that status: the change and its precondition are one statement, so a status
 * another path wrote meanwhile, an uninstall say, is never overwritten).
 */
export async function setInstallStatus(
  q: Queryable,
  installId: string,
  status: InstallStatus,
  opts: { from?: InstallStatus } = {},
): Promise<Install | null> {
  if (!isUuid(installId)) return null;
  try {
    // updated_at moves only on a real change, so an idempotent uninstall leaves it be.
    // An uninstall also ends an unfinished backfill in the same statement: walkers resume
    // only for active installs, so a walk left `running` would stay so forever if its
    // node died before the walker noticed (its own stop writes the same outcome).
    const { rows } = await q.query<InstallRow>(
      `UPDATE installs
       SET status = $2, updated_at = CASE WHEN status = $2 THEN updated_at ELSE now() END,
           backfill_state = CASE WHEN $2 = 'uninstalled' AND backfill_state IN ('pending', 'running')
             THEN 'failed' ELSE backfill_state END,
           backfill_progress = CASE WHEN $2 = 'uninstalled' AND backfill_state IN ('pending', 'running')
             THEN backfill_progress || jsonb_build_object(
               CASE WHEN connector_id = 'chatapp' THEN 'last_error' ELSE 'reason' END, 'install uninstalled')
             ELSE backfill_progress END,
           backfill_updated_at = CASE WHEN $2 = 'uninstalled' AND backfill_state IN ('pending', 'running')
             THEN now() ELSE backfill_updated_at END
       WHERE install_id = $1 AND ($3::text IS NULL OR status = $3)
       RETURNING ${COLUMNS}`,
      [installId, status, opts.from ?? null],
    );
    return rows[0] ? toInstall(rows[0]) : null;
  } catch (err) {
    // Re-activating while another install of the same external id is active.
    if (pgErrorCode(err) === '23505' && pgConstraint(err) === 'installs_active_external') {
      throw new Conflict('this tenant already has an active install of it', {
        code: ErrorCodes.alreadyInstalled,
        cause: err,
      });
    }
    throw err;
  }
}

/** Replaces the backfill state and progress; returns whether the install exists. */
export async function setBackfill(
  q: Queryable,
  installId: string,
  state: BackfillState,
  progress: Record<string, unknown> = {},
): Promise<boolean> {
  if (!isUuid(installId)) return false;
  const { rowCount } = await q.query(
    `UPDATE installs
     SET backfill_state = $2, backfill_progress = $3::jsonb, backfill_updated_at = now()
     WHERE install_id = $1`,
    [installId, state, jsonText(progress)],
  );
  return (rowCount ?? 0) > 0;
}

/** The code-host installs bound to a GitHub installation in one of `statuses`, oldest first. */
export async function findCodehostInstalls(
  q: Queryable,
  installationId: number,
  statuses: readonly InstallStatus[],
): Promise<Install[]> {
  const { rows } = await q.query<InstallRow>(
    `SELECT ${COLUMNS} FROM installs
     WHERE connector_id = 'codehost' AND external_id = $1 AND status = ANY($2::text[])
     ORDER BY created_at, install_id`,
    [String(installationId), [...statuses]],
  );
  return rows.map(toInstall);
}
