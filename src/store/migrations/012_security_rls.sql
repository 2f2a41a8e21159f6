-- 012 (security, part 2): the database fence (README "Security model").
--
-- Every table holding tenant data gets FORCEd row-level security (so its owner is bound
-- too; only superusers and BYPASSRLS roles are not) with one policy: a row is visible and
-- writable when it belongs to the transaction's tenant (`SET LOCAL app.tenant_id`, set by
-- src/store/tenant-scope.ts around every query of the tenant routes), or when the session
-- declared itself cross-tenant (`app.scope = 'system'`: the ingest path, webhook fan-out,
-- leases, walkers, operator commands and migrations, src/store/db.ts `scope`). A session
-- that declared neither sees no row at all: a forgotten scope fails closed.
--
-- So a query of a tenant route that forgets `WHERE tenant_id` still sees only the caller's
-- rows (test/integration/security-rls.test.ts proves it as the application role).
CREATE FUNCTION app_tenant_visible(row_tenant uuid) RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT current_setting('app.scope', true) = 'system'
      OR row_tenant = nullif(current_setting('app.tenant_id', true), '')::uuid
$$;

DO $$
DECLARE
  t text;
BEGIN
  FOREACH t IN ARRAY ARRAY[
    'tenants', 'api_keys', 'users', 'installs', 'credentials', 'events', 'emitted_events',
    'chat_workspace_claims', 'chat_bot_identities', 'oauth_states', 'codehost_repos',
    'repo_index_state', 'graph_nodes', 'graph_edges', 'effects', 'idempotency_keys'
  ] LOOP
    IF to_regclass(t) IS NOT NULL THEN
      EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
      EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
      EXECUTE format(
        'CREATE POLICY tenant_fence ON %I USING (app_tenant_visible(tenant_id)) WITH CHECK (app_tenant_visible(tenant_id))',
        t
      );
    END IF;
  END LOOP;
END $$;
