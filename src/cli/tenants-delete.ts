/**
 * `connectors tenants delete --tenant T --confirm T` (INTERFACE §10.5): revokes the tenant's
 * keys, uninstalls its installs (the chat bot tokens revoked at Slack, best effort: at most
 * 5 s, a failure only warned about), then deletes every row of the tenant in batches
 * (src/store/delete-tenant.ts). Prints `{"tenant_id", "deleted": {<table>: rows}}`.
 */
import { print, UsageError, UUID, type Command } from './command.js';
import { masterKeysOf, withOwnerPool } from './api-keys.js';

const REVOKE_BUDGET_MS = 5_000;

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
      print(await deleteTenantRows(pool, tenantId, closed.deleted));
    });
  },
};

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
