/** `connectors keys rotate` (INTERFACE §9.1; the runbook is the README's "Security model"). */
import type { Config } from '../config.js';
import { print, type Command } from './command.js';
import { masterKeysOf, withOwnerPool } from './api-keys.js';

/**
 * Re-encrypts every credential under the current key. API-key hashes cannot be
 * re-made without the keys themselves; they upgrade on their next use, and `note` says
 * how many still wait (keep their previous key configured until it reaches 0).
 */
export async function keysRotate(config: Readonly<Config>): Promise<{ reencrypted: number; note: string | null }> {
  const [{ countStaleApiKeys }, { CredentialCipher }, { rotateCredentials }, { rotateWebhookSecrets }] =
    await Promise.all([
      import('../store/api-keys.js'),
      import('../store/credential-cipher.js'),
      import('../store/rotate-credentials.js'),
      import('../store/webhooks.js'),
    ]);
  const keys = masterKeysOf(config);
  return withOwnerPool(config, async (pool) => {
    const cipher = CredentialCipher.fromMasterKeys(keys);
    // Webhook secrets (INTERFACE §10.2) are sealed like credentials, and counted with them.
    const reencrypted = (await rotateCredentials(pool, cipher)) + (await rotateWebhookSecrets(pool, cipher));
    const stale = await countStaleApiKeys(pool, keys.current);
    const note =
      stale === 0
        ? null
        : `${stale} API key(s) are still hashed under a previous master key; they upgrade on their next use`;
    return { reencrypted, note };
  });
}

export const keysRotateCommand: Command = {
  name: 'keys rotate',
  summary: 're-encrypt every stored credential under SERVICE_MASTER_KEY; prints {"reencrypted": N}',
  options: {},
  async run(_values, env) {
    const { loadConfig } = await import('../config.js');
    const { reencrypted, note } = await keysRotate(loadConfig(env, { requireDatabase: true, requireMasterKey: true }));
    if (note) process.stderr.write(`connectors: ${note}\n`);
    print({ reencrypted });
  },
};
