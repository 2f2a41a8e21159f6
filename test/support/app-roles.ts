/**
 * The two logins `ensureAppRole` makes for a test (src/store/app-role.ts), dropped when the
 * test is done: the nodes' login `name` and its tenant login `name_tenant`. Roles are
 * cluster-wide, so a test that leaves them behind leaves them for every later run.
 */
import pg from 'pg';
import { testDatabaseUrl } from './env.js';

export async function dropAppRoles(name: string): Promise<void> {
  const c = new pg.Client({ connectionString: testDatabaseUrl() });
  await c.connect();
  try {
    await c.query(`DROP ROLE IF EXISTS ${name}_tenant`);
    await c.query(`DROP ROLE IF EXISTS ${name}`);
  } finally {
    await c.end();
  }
}
