/**
 * The tenant routes' own database login (migration 013, README "Security model"). The
 * nodes' login (DATABASE_URL, in `connectors_app`) sees every tenant; the tenant routes'
 * pool logs in as a second role, in `connectors_tenant` only, which row-level security
 * confines to the tenant its transaction names. Nothing that pool can run reaches the
 * cross-tenant policy, because the role is not a member of the group it names.
 *
 * Its connection is derived from DATABASE_URL so that no new setting is needed
 * (INTERFACE §9.2 lists none for it): same host and database, user `<user>_tenant`,
 * password the hex SHA-256 of `<password>:tenant`. The derivation runs one way: the
 * tenant login's password does not give the nodes' password back.
 * deploy/postgres/init-roles.sh and `dev` (app-role.ts) create the role with it.
 */
import { createHash } from 'node:crypto';
import type pg from 'pg';
import { Internal } from '../errors.js';
import { pgErrorCode } from './db.js';

/** The tenant login's name for the nodes' login `user`. */
export function tenantRoleName(user: string): string {
  return `${user}_tenant`;
}

/** The tenant login's password for the nodes' password (none for none: trust or peer). */
export function tenantRolePassword(password: string): string {
  return password === '' ? '' : createHash('sha256').update(`${password}:tenant`, 'utf8').digest('hex');
}

/** DATABASE_URL with the tenant login's user and password in place of the nodes'. */
export function tenantRoleUrl(databaseUrl: string): string {
  const url = new URL(databaseUrl);
  const user = decodeURIComponent(url.username);
  if (user === '') throw new Internal('DATABASE_URL names no user, so the tenant login cannot be derived');
  url.username = encodeURIComponent(tenantRoleName(user));
  url.password = encodeURIComponent(tenantRolePassword(decodeURIComponent(url.password)));
  return url.toString();
}

/**
 * Whether the nodes' own login is outside the fence anyway (superuser, BYPASSRLS, or the
 * tables' owner): then no second login can add anything, and the tenant routes may share
 * it. Single-role setups (tests, a DATABASE_URL without DATABASE_MIGRATE_URL) keep working.
 */
async function unfencedLogin(q: pg.Pool): Promise<boolean> {
  const { rows } = await q.query<{ unfenced: boolean }>(
    `SELECT r.rolsuper OR r.rolbypassrls OR pg_has_role(current_user, c.relowner, 'USAGE') AS unfenced
       FROM pg_roles r, pg_class c
      WHERE r.rolname = current_user AND c.oid = 'public.tenants'::regclass`,
  );
  return rows[0]?.unfenced ?? false;
}

/** 28P01 invalid_password, 28000 invalid_authorization_specification (no such role). */
const LOGIN_REFUSED = new Set(['28P01', '28000']);

/** The graph search's function (migration 017), as the tenant routes call it. */
const SEARCH_FUNCTION = 'graph_search_page(uuid, text, text[], text, text, uuid, bigint, integer)';

/**
 * The tenant routes search through a function whose EXECUTE migration 017 grants to the
 * role groups that existed then; a login whose group came later would fail only at its
 * first search, so it stops the start here instead, naming the grant.
 */
async function checkSearchGrant(pool: pg.Pool, role: string): Promise<void> {
  const { rows } = await pool.query<{ ok: boolean }>("SELECT has_function_privilege($1, 'EXECUTE') AS ok", [
    SEARCH_FUNCTION,
  ]);
  if (rows[0]?.ok) return;
  throw new Internal(
    `${role} may not run the graph search: GRANT EXECUTE ON FUNCTION ${SEARCH_FUNCTION} ` +
      `TO connectors_tenant (or re-run migration 017's grants; README "Security model")`,
  );
}

/**
 * A tenant login that may create temporary objects (or objects in `public`) could plant a
 * table, view or function on a pooled connection that a later transaction of another
 * tenant resolves before the real one (migration 030 revokes TEMPORARY from PUBLIC where
 * its role may). The node runs, and says what to grant away.
 */
async function warnOfPlantableObjects(
  pool: pg.Pool,
  role: string,
  warn: (msg: string, role: string) => void,
): Promise<void> {
  const { rows } = await pool.query<{ temp: boolean; create: boolean; db: string }>(
    `SELECT has_database_privilege(current_database(), 'TEMPORARY') AS temp,
            has_schema_privilege('public', 'CREATE') AS create, current_database() AS db`,
  );
  const r = rows[0];
  if (r?.temp) {
    warn(
      `the tenant login may create temporary objects: REVOKE TEMPORARY ON DATABASE ${r.db} FROM PUBLIC ` +
        '(as the database owner; README "Security model")',
      role,
    );
  }
  if (r?.create) {
    warn('the tenant login may create objects in schema public: REVOKE CREATE ON SCHEMA public FROM PUBLIC', role);
  }
}

/**
 * Opens the tenant routes' pool as the tenant login (checked with one query now, so a
 * missing role stops the start instead of the first request). When that login is refused
 * and the nodes' login is outside the fence anyway, the pool uses DATABASE_URL and `warn`
 * says so; a fenced nodes' login without its tenant login refuses to start.
 */
export async function openTenantRolePool(
  databaseUrl: string,
  systemPool: pg.Pool,
  make: (url: string) => pg.Pool,
  warn: (msg: string, role: string) => void,
): Promise<pg.Pool> {
  const url = tenantRoleUrl(databaseUrl);
  const role = decodeURIComponent(new URL(url).username);
  const pool = make(url);
  try {
    // No row (no tenant is set), but the table privilege is checked: a login whose group
    // missed migration 013's grants stops here too.
    await pool.query('SELECT 1 FROM tenants LIMIT 0');
    await checkSearchGrant(pool, role);
    await warnOfPlantableObjects(pool, role, warn);
    return pool;
  } catch (err) {
    await pool.end().catch(() => undefined);
    if (pgErrorCode(err) === '42501') {
      throw new Internal(
        `${role} may not read the tenant tables: grant connectors_tenant to it, ` +
          `or re-run migration 013's grants (README "Security model")`,
      );
    }
    if (!LOGIN_REFUSED.has(pgErrorCode(err) ?? '')) throw err;
    if (await unfencedLogin(systemPool)) {
      warn('the tenant login was refused and DATABASE_URL is outside row-level security: tenant routes share it', role);
      const shared = make(databaseUrl);
      await checkSearchGrant(shared, decodeURIComponent(new URL(databaseUrl).username)).catch(async (e: unknown) => {
        await shared.end().catch(() => undefined);
        throw e;
      });
      return shared;
    }
    throw new Internal(
      `Postgres refused the tenant routes' login ${role} ` +
        '(derived from DATABASE_URL; create it with deploy/postgres/init-roles.sh)',
    );
  }
}
