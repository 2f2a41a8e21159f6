/**
 * The application's login role (README "Security model"): a plain role (no superuser, no
 * BYPASSRLS, not the tables' owner) that is a member of `connectors_app` (migration 003's
 * grants), so row-level security binds it. `dev` creates one; production operators create
 * theirs with the same statements (deploy/postgres/init-roles.sh).
 */
import pg from 'pg';

/** Creates or updates `name` with `password` as a member of connectors_app; returns its URL. */
export async function ensureAppRole(ownerUrl: string, name: string, password: string): Promise<string> {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(name)) throw new Error(`bad role name ${name}`);
  const client = new pg.Client({ connectionString: ownerUrl });
  await client.connect();
  try {
    const exists = await client.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [name]);
    const literal = (await client.query<{ p: string }>('SELECT quote_literal($1) AS p', [password])).rows[0]!.p;
    const verb = exists.rowCount ? 'ALTER' : 'CREATE';
    await client.query(
      `${verb} ROLE ${name} LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEROLE NOCREATEDB PASSWORD ${literal}`,
    );
    await client.query(`GRANT connectors_app TO ${name}`);
  } finally {
    await client.end();
  }
  const url = new URL(ownerUrl);
  url.username = name;
  url.password = password;
  return url.toString();
}
