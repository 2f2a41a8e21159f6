/**
 * The row lock behind chat token rotation: whoever holds it is the one refresher of an
 * install's token across the whole cluster, and an uninstall's `revokeCredentials` waits
 * for it, so a refresh can never resurrect revoked credentials.
 */
import { isUuid, type Queryable } from './db.js';

/** Locks the install's live credentials row inside the caller's transaction; false when absent or revoked. */
export async function lockLiveCredentials(tx: Queryable, installId: string, tenantId: string): Promise<boolean> {
  if (!isUuid(installId) || !isUuid(tenantId)) return false;
  const { rows } = await tx.query(
    'SELECT 1 FROM credentials WHERE install_id = $1 AND tenant_id = $2 AND revoked_at IS NULL FOR UPDATE',
    [installId, tenantId],
  );
  return rows.length > 0;
}
