import { masterKeysOf } from './api-keys.js';
import { print, UsageError, withPool, type Command } from './command.js';

export const tenantsCreateCommand: Command = {
  name: 'tenants create',
  summary: 'create a tenant; prints {"tenant_id", "api_key", "key_id"} (the key is shown once)',
  options: { name: { type: 'string', required: true, value: 'NAME', description: 'display name, 1-200 characters' } },
  async run(values, env) {
    const name = values.name as string;
    if (name.trim().length === 0 || name.length > 200) {
      throw new UsageError('--name must be 1-200 characters', tenantsCreateCommand);
    }
    const [{ loadConfig }, { createTenant }] = await Promise.all([
      import('../config.js'),
      import('../store/tenants.js'),
    ]);
    const config = loadConfig(env, { requireDatabase: true, requireMasterKey: true });
    await withPool(config, async (pool) => print(await createTenant(pool, masterKeysOf(config), name.trim())));
  },
};
