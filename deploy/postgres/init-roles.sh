#!/bin/sh
# The database roles of the database fence (README "Security model"), for the official
# postgres image (/docker-entrypoint-initdb.d, run once on an empty volume) or by hand as a
# superuser:
#
#   connectors               owner of the schema; runs migrations (DATABASE_MIGRATE_URL)
#   connectors_app           NOLOGIN group that sees every tenant's rows (migrations 003, 013)
#   connectors_tenant        NOLOGIN group confined to one tenant per transaction (013, 030)
#   connectors_serve         the nodes' login (DATABASE_URL): a member of connectors_app, no
#                            superuser, no BYPASSRLS, owns nothing
#   connectors_serve_tenant  the tenant routes' login, derived by the node from DATABASE_URL:
#                            password = sha256 hex of "<connectors_serve password>:tenant"
#                            (src/store/tenant-role.ts); a member of connectors_tenant only
#
# The password comes from the environment (CONNECTORS_SERVE_PASSWORD, else POSTGRES_PASSWORD
# as in docker-compose.yml) or, when neither is set, from the first line of stdin (by hand:
# `./init-roles.sh < password-file`, or typed at the prompt). It never reaches a command
# line, where `ps` would show it: psql reads it from its environment (`\getenv`, psql 15 or
# later). Re-running it after a password change updates both logins.
set -eu
CONNECTORS_INIT_PASSWORD="${CONNECTORS_SERVE_PASSWORD:-${POSTGRES_PASSWORD:-}}"
if [ -z "$CONNECTORS_INIT_PASSWORD" ]; then
  if [ -t 0 ]; then
    printf 'password of connectors_serve: ' >&2
    stty -echo
    trap 'stty echo' EXIT
  fi
  IFS= read -r CONNECTORS_INIT_PASSWORD || true
  if [ -t 0 ]; then
    stty echo
    printf '\n' >&2
  fi
fi
if [ -z "$CONNECTORS_INIT_PASSWORD" ]; then
  echo 'init-roles.sh: set CONNECTORS_SERVE_PASSWORD (or POSTGRES_PASSWORD), or give the password on stdin' >&2
  exit 1
fi
export CONNECTORS_INIT_PASSWORD
psql -v ON_ERROR_STOP=1 --username "${POSTGRES_USER:-postgres}" --dbname "${POSTGRES_DB:-postgres}" <<'SQL'
\getenv pw CONNECTORS_INIT_PASSWORD
SELECT 'CREATE ROLE connectors_app NOLOGIN'
WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'connectors_app') \gexec
SELECT 'CREATE ROLE connectors_tenant NOLOGIN'
WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'connectors_tenant') \gexec
SELECT 'CREATE ROLE connectors_serve LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEROLE NOCREATEDB'
WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'connectors_serve') \gexec
SELECT 'CREATE ROLE connectors_serve_tenant LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEROLE NOCREATEDB'
WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'connectors_serve_tenant') \gexec
ALTER ROLE connectors_serve PASSWORD :'pw';
SELECT format('ALTER ROLE connectors_serve_tenant PASSWORD %L',
              encode(sha256(convert_to(:'pw' || ':tenant', 'UTF8')), 'hex')) \gexec
GRANT connectors_app TO connectors_serve;
GRANT connectors_tenant TO connectors_serve_tenant;
-- No temporary objects for the tenant login (migration 030 does the same where it may).
SELECT format('REVOKE TEMPORARY ON DATABASE %I FROM PUBLIC', current_database()) \gexec
SELECT format('GRANT TEMPORARY ON DATABASE %I TO connectors_app', current_database()) \gexec
SQL
