#!/bin/sh
# The two database roles of the database fence (README "Security model"), for the
# official postgres image (/docker-entrypoint-initdb.d, run once on an empty volume) or by
# hand as a superuser:
#
#   connectors        owner of the schema; runs migrations (DATABASE_MIGRATE_URL)
#   connectors_app    NOLOGIN group the migrations grant table access to (migration 003)
#   connectors_serve  the nodes' login (DATABASE_URL): a plain member of connectors_app,
#                     no superuser, no BYPASSRLS, owns nothing, so row-level security binds it
#
# CONNECTORS_SERVE_PASSWORD defaults to POSTGRES_PASSWORD (docker-compose.yml).
set -eu
password="${CONNECTORS_SERVE_PASSWORD:-${POSTGRES_PASSWORD:?}}"
psql -v ON_ERROR_STOP=1 -v pw="$password" --username "${POSTGRES_USER:-postgres}" \
  --dbname "${POSTGRES_DB:-postgres}" <<'SQL'
SELECT 'CREATE ROLE connectors_app NOLOGIN'
WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'connectors_app') \gexec
SELECT 'CREATE ROLE connectors_serve LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEROLE NOCREATEDB'
WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'connectors_serve') \gexec
ALTER ROLE connectors_serve PASSWORD :'pw';
GRANT connectors_app TO connectors_serve;
SQL
