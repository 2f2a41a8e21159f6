/**
 * The service's two login roles (README "Security model", migration 013):
 *
 * - the nodes' login (DATABASE_URL): no superuser, no BYPASSRLS, owns nothing, a member of
 *   `connectors_app`, which row-level security lets see every tenant (ingest, walkers...);
 * - its tenant login (`<name>_tenant`, derived in tenant-role.ts): a member of
 *   `connectors_tenant` only, bound to the tenant its transaction names. The tenant routes'
 *   pool logs in as it, and it is not a member of `connectors_app`, so it cannot SET ROLE
 *   into the cross-tenant one.
 *
 * `dev` creates both; production operators run the same statements
 * (deploy/postgres/init-roles.sh). Needs the two groups, so run it after migrations.
 */
import pg from 'pg';
import { tenantRoleName, tenantRolePassword } from './tenant-role.js';

/** Creates or updates both logins for `name` with `password`; returns the nodes' URL. */
export async function ensureAppRole(ownerUrl: string, name: string, password: string): Promise<string> {
  const tenant = tenantRoleName(name);
  if (!/^[a-z_][a-z0-9_]{0,55}$/.test(name)) throw new Error(`bad role name ${name}`);
  const client = new pg.Client({ connectionString: ownerUrl });
  // A dropped connection fails the query under way (the caller reports it); unheard, its
  // 'error' event would end the process first.
  client.on('error', () => undefined);
  await client.connect();
  try {
    for (const [role, secret, group] of [
      [name, password, 'connectors_app'],
      [tenant, tenantRolePassword(password), 'connectors_tenant'],
    ] as const) {
      const exists = await client.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [role]);
      const literal = (await client.query<{ p: string }>('SELECT quote_literal($1) AS p', [secret])).rows[0]!.p;
      const verb = exists.rowCount ? 'ALTER' : 'CREATE';
      await client.query(
        `${verb} ROLE ${role} LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEROLE NOCREATEDB PASSWORD ${literal}`,
      );
      await client.query(`GRANT ${group} TO ${role}`);
    }
  } finally {
    await client.end();
  }
  const url = new URL(ownerUrl);
  url.username = name;
  url.password = password;
  return url.toString();
}
