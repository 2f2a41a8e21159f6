/** Empty databases of their own for tests that need one (migrations from nothing). */
import { randomBytes } from 'node:crypto';
import pg from 'pg';

export interface TempDatabase {
  url: string;
  drop(): Promise<void>;
}

export async function createTempDatabase(adminUrl: string, label: string): Promise<TempDatabase> {
  const name = `connectors_tmp_${label}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const c = new pg.Client({ connectionString: adminUrl });
      await c.connect();
      try {
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await c.end();
      }
    },
  };
}
