/** `connectors keys rotate` (INTERFACE §9.1; the runbook is the README's "Security model"). */
import type { Config } from '../config.js';
import { print, type Command } from './command.js';
import { masterKeysOf, withOwnerPool } from './api-keys.js';

/**
 * Rewraps every data key under the current master key, then re-encrypts what is still under a
 * master key's version (credentials, webhook secrets) with the data key. API keys need nothing:
 * they are SHA-256 hashes, and those hashed the old way are found through their hash keys, which
 * are data keys too (rewrapped here; dropped once no key needs them). `note` says how many such
 * keys wait for their next use, and whether a data key could not be unwrapped.
 */
async function keysRotate(config: Readonly<Config>): Promise<{ reencrypted: number; note: string | null }> {
  const [{ countStaleApiKeys }, { CredentialCipher }, { rotateCredentials }, { rotateWebhookSecrets }, dataKeys] =
    await Promise.all([
      import('../store/api-keys.js'),
      import('../store/credential-cipher.js'),
      import('../store/rotate-credentials.js'),
      import('../store/webhooks.js'),
      import('../store/data-keys.js'),
    ]);
  const keys = masterKeysOf(config);
  return withOwnerPool(config, async (pool) => {
    const keyring = await dataKeys.loadKeyring(pool, keys);
    const { unreadable } = await dataKeys.rewrapDataKeys(pool, keys);
    const cipher = CredentialCipher.fromMasterKeys(keyring);
    const reencrypted = (await rotateCredentials(pool, cipher)) + (await rotateWebhookSecrets(pool, cipher));
    await dataKeys.dropUnusedApiKeyHashKeys(pool);
    const stale = await countStaleApiKeys(pool);
    const notes = [
      stale === 0
        ? null
        : `${stale} API key(s) are still hashed the old way; they stay valid and move on their next use`,
      unreadable === 0 ? null : `${unreadable} data key(s) are wrapped by a master key not configured`,
    ].filter((n) => n !== null);
    return { reencrypted, note: notes.length === 0 ? null : notes.join('; ') };
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
