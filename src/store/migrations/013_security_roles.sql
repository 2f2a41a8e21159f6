-- 013 (security, part 3): cross-tenant access by role, not by session setting (issue 13,
-- README "Security model").
--
-- Until now a session became cross-tenant by setting `app.scope = 'system'`, which any
-- session of the application role could do: one SQL injection on the tenant routes' pool
-- would have opened every tenant. Now:
--
--   connectors_app     (003) the group of the nodes' own login (DATABASE_URL): ingest,
--                      fan-out, walkers, actors, the reconciler. Sees every tenant's rows
--                      through the `system_access` policy below.
--   connectors_tenant  (new) the group of the tenant routes' login (`<DATABASE_URL user>_tenant`,
--                      src/store/tenant-role.ts). Bound by `tenant_fence` alone: only the
--                      rows of the tenant its transaction names (`SET LOCAL app.tenant_id`).
--
-- The tenant login is a member of connectors_tenant only, so nothing it can run (SET,
-- set_config, SET ROLE) reaches the system policy: SET ROLE needs membership, and the
-- setting no longer means anything. The schema owner (this migration's role) keeps access
-- for later migrations through the same policy.

DO $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'connectors_tenant') THEN
    BEGIN
      CREATE ROLE connectors_tenant NOLOGIN;
    EXCEPTION
      -- Roles are cluster-wide: another database's migration may have created it meanwhile.
      WHEN duplicate_object OR unique_violation THEN NULL;
      WHEN insufficient_privilege THEN
        RAISE NOTICE 'connectors_tenant role not created (no CREATEROLE); deploy/postgres/init-roles.sh creates it';
    END;
  END IF;
END $$;

-- The two tables that were not fenced: a dead letter and an oversized payload belong to a
-- tenant too. Dead letters learn it from their install (no foreign key there: the install
-- id may be bogus, 001); a blob is given it by the publisher (src/store/blobs.ts).
ALTER TABLE dead_letters ADD COLUMN tenant_id uuid;
ALTER TABLE ingest_blobs ADD COLUMN tenant_id uuid;

CREATE FUNCTION dead_letters_tenant() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.tenant_id IS NULL AND NEW.install_id IS NOT NULL THEN
    NEW.tenant_id := (SELECT tenant_id FROM installs WHERE install_id = NEW.install_id);
  END IF;
  RETURN NEW;
END
$$;
CREATE TRIGGER dead_letters_tenant BEFORE INSERT ON dead_letters
FOR EACH ROW EXECUTE FUNCTION dead_letters_tenant();

-- The fence no longer honours `app.scope`: a row is a tenant's when the transaction names it.
CREATE OR REPLACE FUNCTION app_tenant_visible(row_tenant uuid) RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT row_tenant = nullif(current_setting('app.tenant_id', true), '')::uuid
$$;

DO $$
DECLARE
  t text;
  system_roles text := 'CURRENT_USER';
BEGIN
  IF EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'connectors_app') THEN
    system_roles := 'connectors_app, CURRENT_USER';
  END IF;
  FOREACH t IN ARRAY ARRAY[
    'tenants', 'api_keys', 'users', 'installs', 'credentials', 'events', 'emitted_events',
    'chat_workspace_claims', 'chat_bot_identities', 'oauth_states', 'codehost_repos',
    'repo_index_state', 'graph_nodes', 'graph_edges', 'effects', 'idempotency_keys',
    'dead_letters', 'ingest_blobs'
  ] LOOP
    IF t IN ('dead_letters', 'ingest_blobs') THEN
      EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
      EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
      EXECUTE format(
        'CREATE POLICY tenant_fence ON %I USING (app_tenant_visible(tenant_id))'
        ' WITH CHECK (app_tenant_visible(tenant_id))',
        t
      );
    END IF;
    EXECUTE format('CREATE POLICY system_access ON %I TO %s USING (true) WITH CHECK (true)', t, system_roles);
  END LOOP;

  -- The tenant group may touch fenced tables and nothing else: no schema_migrations,
  -- no App-installation table or its functions (003). A table added later is closed to it
  -- until a migration fences it and grants it here.
  IF EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'connectors_tenant') THEN
    GRANT USAGE ON SCHEMA public TO connectors_tenant;
    FOREACH t IN ARRAY ARRAY[
      'tenants', 'api_keys', 'users', 'installs', 'credentials', 'events', 'emitted_events',
      'chat_workspace_claims', 'chat_bot_identities', 'oauth_states', 'codehost_repos',
      'repo_index_state', 'graph_nodes', 'graph_edges', 'effects', 'idempotency_keys'
    ] LOOP
      EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON %I TO connectors_tenant', t);
    END LOOP;
    -- A tenant reads its own dead letters (INTERFACE §9.3), with the blobs they point at.
    GRANT SELECT ON dead_letters, ingest_blobs TO connectors_tenant;
    GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO connectors_tenant;
  END IF;
END $$;

-- Rows recorded before this migration (the owner sees them through system_access now).
UPDATE dead_letters d SET tenant_id = i.tenant_id FROM installs i WHERE i.install_id = d.install_id;
