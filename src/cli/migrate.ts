import { loadConfig } from '../config.js';
import { createPool } from '../store/db.js';
import { migrate } from '../store/migrate.js';
import { print, type Command } from './command.js';

export const migrateCommand: Command = {
  name: 'migrate',
  summary: 'apply Postgres migrations (idempotent); prints {"applied": [...]}',
  options: {},
  async run(_values, env) {
    const config = loadConfig(env, { requireDatabase: true });
    const pool = createPool(config.security.migrateDatabaseUrl ?? config.databaseUrl!);
    try {
      print(await migrate(pool));
    } finally {
      await pool.end();
    }
  },
};
