/**
 * Code-host App installations (spec §2.3). The table is closed to the application's role
 * (migration 003); these calls go through its two SECURITY DEFINER functions, the only
 * way the service reads or writes it.
 */
import { isUuid, toIso, type Queryable } from './db.js';
import { sanitizeText } from './sanitize.js';

export interface AppInstallation {
  install_id: string;
  tenant_id: string;
  github_installation_id: number;
  account_login: string;
  account_type: string;
  repository_selection: string;
  app_id: number;
  created_at: string;
}

export interface NewAppInstallation {
  installId: string;
  tenantId: string;
  githubInstallationId: number;
  accountLogin: string;
  accountType: string;
  repositorySelection: string;
  appId: number;
}

/**
 * Writes the row of a code-host install of that tenant (inside the admin-install
 * transaction, spec §4.3). Returns false when no such install exists.
 */
export async function putAppInstallation(q: Queryable, a: NewAppInstallation): Promise<boolean> {
  if (!isUuid(a.installId) || !isUuid(a.tenantId)) return false;
  const { rows } = await q.query<{ ok: boolean }>(
    'SELECT codehost_app_installation_put($1, $2, $3, $4, $5, $6, $7) AS ok',
    [
      a.installId,
      a.tenantId,
      a.githubInstallationId,
      sanitizeText(a.accountLogin),
      sanitizeText(a.accountType),
      sanitizeText(a.repositorySelection),
      a.appId,
    ],
  );
  return rows[0]?.ok === true;
}

interface Row {
  install_id: string;
  tenant_id: string;
  // bigint columns arrive as strings from pg.
  github_installation_id: string;
  account_login: string;
  account_type: string;
  repository_selection: string;
  app_id: string;
  created_at: Date;
}

export async function getAppInstallation(
  q: Queryable,
  tenantId: string,
  installId: string,
): Promise<AppInstallation | null> {
  if (!isUuid(tenantId) || !isUuid(installId)) return null;
  const { rows } = await q.query<Row>('SELECT * FROM codehost_app_installation_get($1, $2)', [installId, tenantId]);
  const r = rows[0];
  if (!r) return null;
  return {
    install_id: r.install_id,
    tenant_id: r.tenant_id,
    github_installation_id: Number(r.github_installation_id),
    account_login: r.account_login,
    account_type: r.account_type,
    repository_selection: r.repository_selection,
    app_id: Number(r.app_id),
    created_at: toIso(r.created_at),
  };
}
