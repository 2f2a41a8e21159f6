/**
 * A database of its own for each test file that starts nodes or an edge, copied from the run's migrated
 * one (test/global-setup.ts). Nodes resume every unfinished backfill they find in their database
 * (on shard acquisition and in the resume sweep), whatever NATS namespace started it: on a database
 * shared by the whole run, a node of one file took over the walks of another file's node, called its
 * own fake with their tokens and failed them, or made calls that file's fakes counted. Copying is a
 * file copy of a small database (well under a second); the run's teardown drops what is left.
 */
import pg from 'pg';

export interface FileDatabase {
  url: string;
  appUrl: string;
  drop(): Promise<void>;
}

const withClient = async <T>(adminUrl: string, f: (c: pg.Client) => Promise<T>): Promise<T> => {
  const c = new pg.Client({ connectionString: adminUrl });
  c.on('error', () => undefined);
  await c.connect();
  try {
    return await f(c);
  } finally {
    await c.end();
  }
};

const dbNameOf = (url: string) => decodeURIComponent(new URL(url).pathname.slice(1));
const withDb = (url: string, name: string) => {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
};

/** Creates `<template>_<suffix>` from `templateUrl`'s database, with the template's database-level grants. */
export async function createFileDatabase(o: {
  adminUrl: string;
  templateUrl: string;
  appUrl: string;
  suffix: string;
}): Promise<FileDatabase> {
  const template = dbNameOf(o.templateUrl);
  const name = `${template}_${o.suffix}`;
  await withClient(o.adminUrl, async (c) => {
    // Two files copying at once may find the template busy for a moment (Postgres allows one copy at a time).
    for (let attempt = 1; ; attempt++) {
      try {
        await c.query(`CREATE DATABASE ${name} TEMPLATE ${template}`);
        break;
      } catch (err) {
        if ((err as { code?: string }).code !== '55006' || attempt >= 50) throw err;
        await new Promise((r) => setTimeout(r, 100 * attempt));
      }
    }
    // A copy starts with the default database ACL; migrations revoked and granted on the template's.
    const acl = await c.query<{ grantee: string | null; privilege_type: string }>(
      `SELECT CASE WHEN a.grantee = 0 THEN NULL ELSE r.rolname END AS grantee, a.privilege_type
       FROM pg_database d, aclexplode(d.datacl) a LEFT JOIN pg_roles r ON r.oid = a.grantee
       WHERE d.datname = $1 AND a.grantee <> d.datdba`,
      [template],
    );
    if (acl.rowCount === 0) return;
    await c.query(`REVOKE ALL ON DATABASE ${name} FROM PUBLIC`);
    for (const g of acl.rows)
      await c.query(
        `GRANT ${g.privilege_type} ON DATABASE ${name} TO ${g.grantee === null ? 'PUBLIC' : `"${g.grantee}"`}`,
      );
  });
  return {
    url: withDb(o.templateUrl, name),
    appUrl: withDb(o.appUrl, name),
    drop: () => dropDatabase(o.adminUrl, name),
  };
}

export const dropDatabase = (adminUrl: string, name: string): Promise<void> =>
  withClient(adminUrl, async (c) => {
    await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  });

/** The names of every file database copied from `template` (the run's teardown drops them). */
export const fileDatabasesOf = (adminUrl: string, template: string): Promise<string[]> =>
  withClient(adminUrl, async (c) => {
    const { rows } = await c.query<{ datname: string }>(
      `SELECT datname FROM pg_database WHERE datname LIKE $1 ESCAPE '!'`,
      [`${template.replace(/[!_%]/g, '!$&')}!_%`],
    );
    return rows.map((r) => r.datname);
  });
