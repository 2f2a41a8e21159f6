/**
 * `tenants delete` (INTERFACE §10.5): a tenant and every row of it, gone. In this order:
 *
 * 1. its API keys revoked (every node drops them from its cache within 5 s, migration 012's
 *    notice), so nothing new starts while the rest goes;
 * 2. its installs uninstalled locally (status, credentials revoked, workspace claims
 *    released), so no more events are taken for them; the upstream revoke is the caller's,
 *    best effort;
 * 3. every row of every table that has a `tenant_id` column, found in the catalog (so a table
 *    added later is not missed), children before the tables their foreign keys reference,
 *    in batches of `batchSize` rows, each a statement of its own; the audit log through its
 *    owner's function (migration 042), the tenant's own row last.
 *
 * Runs as the schema owner (the operator commands' login), which row-level security lets see
 * every tenant. Returns the rows deleted per table.
 */
import type pg from 'pg';
import { isUuid, withTx } from './db.js';

export interface TenantDeletion {
  tenant_id: string;
  deleted: Record<string, number>;
}

/** Steps 1 and 2; the installs it uninstalled, and the rows it deleted (workspace claims released). */
export async function closeTenant(
  pool: pg.Pool,
  tenantId: string,
): Promise<{ installs: Array<{ install_id: string; connector_id: string }>; deleted: Record<string, number> }> {
  return withTx(pool, async (tx) => {
    await tx.query('UPDATE api_keys SET revoked_at = now() WHERE tenant_id = $1 AND revoked_at IS NULL', [tenantId]);
    const { rows } = await tx.query<{ install_id: string; connector_id: string }>(
      `UPDATE installs SET status = 'uninstalled', updated_at = now()
        WHERE tenant_id = $1 AND status <> 'uninstalled' RETURNING install_id, connector_id`,
      [tenantId],
    );
    await tx.query('UPDATE credentials SET revoked_at = now() WHERE tenant_id = $1 AND revoked_at IS NULL', [tenantId]);
    const claims = await tx.query('DELETE FROM chat_workspace_claims WHERE tenant_id = $1', [tenantId]);
    const deleted: Record<string, number> = {};
    if (claims.rowCount) deleted.chat_workspace_claims = claims.rowCount;
    return { installs: rows, deleted };
  });
}

/** The tables with a `tenant_id` column, each before every table it references. */
async function tenantTables(q: pg.Pool): Promise<string[]> {
  const { rows: tables } = await q.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_class c
       JOIN pg_namespace n ON n.oid = c.relnamespace
       JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'tenant_id' AND NOT a.attisdropped
      WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p')`,
  );
  const { rows: refs } = await q.query<{ child: string; parent: string }>(
    `SELECT cr.relname AS child, pr.relname AS parent FROM pg_constraint k
       JOIN pg_class cr ON cr.oid = k.conrelid JOIN pg_class pr ON pr.oid = k.confrelid
       JOIN pg_namespace n ON n.oid = cr.relnamespace
      WHERE k.contype = 'f' AND n.nspname = current_schema() AND cr.oid <> pr.oid`,
  );
  const names = new Set(tables.map((t) => t.name));
  const order: string[] = [];
  const placed = new Set<string>();
  const place = (t: string, path: Set<string>) => {
    if (placed.has(t) || path.has(t)) return;
    path.add(t);
    // Every table referencing `t` goes first.
    for (const r of refs) if (r.parent === t && names.has(r.child)) place(r.child, path);
    placed.add(t);
    order.push(t);
  };
  for (const t of [...names].sort()) place(t, new Set());
  return order;
}

/** Step 3, after `closeTenant`: every row of the tenant, table by table, in batches. */
export async function deleteTenantRows(
  pool: pg.Pool,
  tenantId: string,
  already: Record<string, number> = {},
  batchSize = 1_000,
): Promise<TenantDeletion> {
  if (!isUuid(tenantId)) return { tenant_id: tenantId, deleted: {} };
  const deleted: Record<string, number> = { ...already };
  for (const table of await tenantTables(pool)) {
    let total = 0;
    for (;;) {
      const n =
        table === 'audit_log'
          ? (await pool.query<{ n: number }>('SELECT audit_log_delete_tenant($1, $2) AS n', [tenantId, batchSize]))
              .rows[0]!.n
          : ((
              await pool.query(
                `DELETE FROM "${table}"
                  WHERE ctid = ANY(ARRAY(SELECT ctid FROM "${table}" WHERE tenant_id = $1 LIMIT $2))`,
                [tenantId, batchSize],
              )
            ).rowCount ?? 0);
      total += n;
      if (n < batchSize) break;
    }
    if (total > 0) deleted[table] = (deleted[table] ?? 0) + total;
  }
  return { tenant_id: tenantId, deleted };
}
