import { print, UsageError, UUID, withPool, type Command } from './command.js';

export const usersCreateCommand: Command = {
  name: 'users create',
  summary: 'create a user of a tenant (the admin install body\'s user_id); prints {"user_id"}',
  options: {
    tenant: { type: 'string', required: true, value: 'TENANT_ID', description: 'the tenant (uuid)' },
    email: { type: 'string', required: true, value: 'EMAIL', description: "the user's email" },
  },
  async run(values, env) {
    const tenant = values.tenant as string;
    if (!UUID.test(tenant)) throw new UsageError('--tenant must be a tenant id (uuid)', usersCreateCommand);
    const [{ loadConfig }, { createUser }] = await Promise.all([import('../config.js'), import('../store/users.js')]);
    const config = loadConfig(env, { requireDatabase: true });
    await withPool(config, async (pool) => print(await createUser(pool, tenant.toLowerCase(), values.email as string)));
  },
};
