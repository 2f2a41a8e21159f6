import { print, type Command } from './command.js';

export const migrateCommand: Command = {
  name: 'migrate',
  summary: 'apply Postgres migrations (idempotent); prints {"applied": [...]}',
  options: {},
  async run(_values, env) {
    const [{ loadConfig }, { createPool }, { migrate }] = await Promise.all([
      import('../config.js'),
      import('../store/db.js'),
      import('../store/migrate.js'),
    ]);
    const config = loadConfig(env, { requireDatabase: true });
    const pool = createPool(config.security.migrateDatabaseUrl ?? config.databaseUrl!);
    try {
      print(await migrate(pool));
    } finally {
      await pool.end();
    }
  },
};
