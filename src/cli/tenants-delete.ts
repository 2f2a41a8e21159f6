/**
 * `connectors tenants delete --tenant T --confirm T` (INTERFACE §10.5): revokes the tenant's
 * keys, uninstalls its installs (the chat bot tokens revoked at Slack, best effort: at most
 * 5 s, a failure only warned about), then deletes every row of the tenant in batches
 * (src/store/delete-tenant.ts), and last what NATS holds of it (src/wiring/forget-tenant-nats.ts:
 * KV entries named after its installs and workspaces, its events still in the ingest stream),
 * bounded and best effort. Prints `{"tenant_id", "deleted": {<table>: rows}, "nats": {"removed":
 * {<bucket or stream>: n}, "not_removed": [...]}}`; anything not removed is said on stderr too.
 */
import { print, UsageError, UUID, type Command } from './command.js';
import { masterKeysOf, withOwnerPool } from './api-keys.js';
import type pg from 'pg';
import type { Config } from '../config.js';
import type { NatsForgetReport, TenantNatsRefs } from '../wiring/forget-tenant-nats.js';

const REVOKE_BUDGET_MS = 5_000;
/** NATS: each request, and the whole pass over KV and the ingest stream (the connect: nats-connect.ts). */
const NATS_REQUEST_MS = 5_000;
const NATS_DEADLINE_MS = 30_000;

export const tenantsDeleteCommand: Command = {
  name: 'tenants delete',
  summary: 'delete a tenant and every row of it; prints {"tenant_id", "deleted": {<table>: rows}}',
  options: {
    tenant: { type: 'string', required: true, value: 'TENANT_ID', description: 'the tenant to delete' },
    confirm: { type: 'string', required: true, value: 'TENANT_ID', description: 'the same id again' },
  },
  async run(values, env) {
    const tenantId = String(values.tenant);
    if (!UUID.test(tenantId)) throw new UsageError('--tenant must be a tenant id', tenantsDeleteCommand);
    if (values.confirm !== tenantId) throw new UsageError('--confirm must repeat --tenant', tenantsDeleteCommand);
    const [{ loadConfig }, { closeTenant, deleteTenantRows }, { CredentialCipher }, { getCredentials }, dataKeys] =
      await Promise.all([
        import('../config.js'),
        import('../store/delete-tenant.js'),
        import('../store/credential-cipher.js'),
        import('../store/credentials.js'),
        import('../store/data-keys.js'),
      ]);
    const config = loadConfig(env, { requireDatabase: true, requireMasterKey: true });
    await withOwnerPool(config, async (pool) => {
      const cipher = CredentialCipher.fromMasterKeys(await dataKeys.loadKeyring(pool, masterKeysOf(config)));
      const { rows } = await pool.query<{ install_id: string }>(
        `SELECT install_id FROM installs WHERE tenant_id = $1 AND connector_id = 'chatapp' AND status <> 'uninstalled'`,
        [tenantId],
      );
      const tokens: string[] = [];
      for (const r of rows) {
        const secret = await getCredentials(pool, cipher, { tenantId, installId: r.install_id }).catch(() => null);
        if (typeof secret?.bot_token === 'string') tokens.push(secret.bot_token);
      }
      const closed = await closeTenant(pool, tenantId);
      const revoked = await Promise.allSettled(tokens.map((t) => revokeChatToken(config.chatapp.apiUrl, t)));
      const failed = revoked.filter((r) => r.status === 'rejected').length;
      if (failed > 0) {
        process.stderr.write(
          `connectors: ${failed} chat bot token(s) not revoked at Slack; ` +
            'removing the app from the workspace ends them\n',
        );
      }
      // Read before the rows go: what NATS may hold under the tenant's names.
      const refs = await natsRefsOf(pool, tenantId);
      const deleted = await deleteTenantRows(pool, tenantId, closed.deleted);
      const nats = await forgetInNats(config, refs);
      if (nats.not_removed.length > 0) {
        process.stderr.write(
          `connectors: ${nats.not_removed.length} NATS entr(ies) of the tenant not removed; ` +
            'run tenants delete again or purge them by hand:\n' +
            nats.not_removed.map((l) => `  ${l}\n`).join(''),
        );
      }
      print({ ...deleted, nats });
    });
  },
};

/**
 * The tenant's install ids, and the workspace and App-installation ids of its installs that no
 * other tenant has installed now (their rate buckets are that tenant's too).
 */
async function natsRefsOf(pool: pg.Pool, tenantId: string): Promise<TenantNatsRefs> {
  const { rows } = await pool.query<{ install_id: string; external_id: string; shared: boolean }>(
    `SELECT i.install_id, i.external_id,
            EXISTS (SELECT 1 FROM installs o
                     WHERE o.connector_id = i.connector_id AND o.external_id = i.external_id
                       AND o.tenant_id <> i.tenant_id AND o.status <> 'uninstalled') AS shared
       FROM installs i WHERE i.tenant_id = $1`,
    [tenantId],
  );
  return {
    installIds: rows.map((r) => r.install_id),
    externalIds: [...new Set(rows.filter((r) => !r.shared).map((r) => r.external_id))],
  };
}

async function forgetInNats(config: Readonly<Config>, refs: TenantNatsRefs): Promise<NatsForgetReport> {
  const [{ connectNatsOnce }, { names }, { forgetTenantInNats }] = await Promise.all([
    import('../runtime/nats-connect.js'),
    import('../runtime/names.js'),
    import('../wiring/forget-tenant-nats.js'),
  ]);
  let nc;
  try {
    nc = await connectNatsOnce(config.natsServers, config.nats, 'connectors-tenants-delete');
  } catch (err) {
    return { removed: {}, not_removed: [(err as Error).message] };
  }
  try {
    return await forgetTenantInNats(nc, names(config.namespace), refs, {
      timeoutMs: NATS_REQUEST_MS,
      deadlineMs: NATS_DEADLINE_MS,
    });
  } finally {
    await nc.close().catch(() => undefined);
  }
}

/** Slack's `auth.revoke` with the bot token itself; bounded, never retried (best effort). */
async function revokeChatToken(apiUrl: string, token: string): Promise<void> {
  const res = await fetch(new URL('auth.revoke', apiUrl), {
    method: 'POST',
    headers: { authorization: `Bearer ${token}` },
    signal: AbortSignal.timeout(REVOKE_BUDGET_MS),
  });
  const body = (await res.json()) as { ok?: boolean; error?: string };
  // A token already dead is revoked enough (INTERFACE §8.3).
  if (!body.ok && body.error !== 'invalid_auth' && body.error !== 'token_revoked') {
    throw new Error(`auth.revoke: ${body.error ?? res.status}`);
  }
}
