-- 030 (security, part 4): the tenant the fence shows is bound by the service, not named by a
-- setting the tenant login can set (issue 32, README "Security model").
--
-- Until now row-level security showed a tenant's rows when the transaction's
-- `app.tenant_id` named it (012, 013), and the tenant routes' pool set it with set_config.
-- So could anything running as the tenant login: one injected statement,
-- `set_config('app.tenant_id', '<another tenant>', true)`, read that tenant's events and
-- nodes and updated its install. Now:
--
--   app_bind_tenant(tenant, proof)  SECURITY DEFINER, owned by the schema owner (a role the
--                      tenant login cannot become). Refuses unless `proof` is the HMAC of the
--                      tenant under this database's fence secret (tenant_fence_key, readable
--                      by the schema owner and connectors_app, never by connectors_tenant; the
--                      node reads it once at start with its own login, tenant-scope.ts). It sets
--                      `app.tenant_binding` for the transaction to the tenant and an
--                      HMAC-SHA256, under the secret, of tenant, backend pid and transaction
--                      start: a value for this transaction of this connection only.
--   app_bound_tenant()  the tenant whose binding verifies in this transaction, else NULL.
--
-- Every tenant_fence policy reads app_bound_tenant(), once per statement (an initplan, so
-- indexes on tenant_id still serve), and so does the graph search (017, 018). The login can
-- still set `app.tenant_binding`, but not to a value that verifies for another tenant, nor
-- reuse its own in another transaction; `app.tenant_id` means nothing any more.
--
-- The HMAC is computed from sha256 (no extension needed): HMAC(K, m) =
-- sha256((K xor opad) || sha256((K xor ipad) || m)), with both padded keys kept beside K.
CREATE TABLE tenant_fence_key (
  only_row  boolean PRIMARY KEY DEFAULT true CHECK (only_row),
  secret    bytea NOT NULL CHECK (length(secret) = 32),
  inner_key bytea NOT NULL,
  outer_key bytea NOT NULL
);
REVOKE ALL ON tenant_fence_key FROM PUBLIC;

-- 32 random bytes: gen_random_uuid() draws from the server's strong random source (two
-- version-4 UUIDs carry 244 random bits).
DO $$
DECLARE
  k bytea := decode(
    replace(gen_random_uuid()::text, '-', '') || replace(gen_random_uuid()::text, '-', ''), 'hex');
  ipad bytea := decode(repeat('36', 64), 'hex');
  opad bytea := decode(repeat('5c', 64), 'hex');
  i int;
BEGIN
  FOR i IN 0..31 LOOP
    ipad := set_byte(ipad, i, get_byte(k, i) # 54);
    opad := set_byte(opad, i, get_byte(k, i) # 92);
  END LOOP;
  INSERT INTO tenant_fence_key (secret, inner_key, outer_key) VALUES (k, ipad, opad);
END $$;

-- HMAC-SHA256 of `msg` under the fence secret, and the seal of `tenant` for this transaction
-- of this connection. Internal: only the two functions below (running as the owner, with
-- their search_path pinned) call them. PL/pgSQL, whose plans are cached per session (a SQL
-- function with a SET clause was planned at every call: 200 µs against 20).
CREATE FUNCTION tenant_fence_hmac(msg text) RETURNS bytea
LANGUAGE plpgsql STABLE PARALLEL RESTRICTED
AS $fn$
DECLARE
  k record;
BEGIN
  SELECT f.inner_key, f.outer_key INTO STRICT k FROM public.tenant_fence_key f;
  RETURN sha256(k.outer_key || sha256(k.inner_key || convert_to(msg, 'UTF8')));
END
$fn$;
REVOKE ALL ON FUNCTION tenant_fence_hmac(text) FROM PUBLIC;

-- `tenant`: the tenant id as text, as app_bind_tenant writes it (uuid's own output).
CREATE FUNCTION tenant_fence_seal(tenant text) RETURNS text
LANGUAGE plpgsql STABLE PARALLEL RESTRICTED
AS $fn$
BEGIN
  RETURN encode(public.tenant_fence_hmac(
    'seal:' || tenant || ':' || pg_backend_pid()::text || ':' ||
    ((extract(epoch FROM transaction_timestamp()) * 1000000)::bigint)::text), 'hex');
END
$fn$;
REVOKE ALL ON FUNCTION tenant_fence_seal(text) FROM PUBLIC;

-- `proof`: HMAC-SHA256(secret, 'bind:' || tenant), computed by the node (tenant-scope.ts), so
-- a proof seen anywhere (a server log of parameters) binds that one tenant only.
CREATE FUNCTION app_bind_tenant(tenant uuid, proof bytea) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
  -- Digests compared, so the time taken says nothing about how much of a guess was right.
  IF tenant IS NULL OR proof IS NULL
     OR sha256(proof) IS DISTINCT FROM sha256(public.tenant_fence_hmac('bind:' || tenant::text)) THEN
    RAISE EXCEPTION 'tenant binding refused: wrong proof' USING ERRCODE = '42501';
  END IF;
  PERFORM set_config('app.tenant_binding', tenant::text || '.' || public.tenant_fence_seal(tenant::text), true);
END
$fn$;

-- PARALLEL RESTRICTED: the pid in the seal is the leader's, so a policy's initplan runs there.
CREATE FUNCTION app_bound_tenant() RETURNS uuid
LANGUAGE plpgsql STABLE SECURITY DEFINER PARALLEL RESTRICTED SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
  b text := current_setting('app.tenant_binding', true);
BEGIN
  -- `<36-character tenant id>.<64 hex digits>`; only app_bind_tenant makes one that verifies,
  -- so the id is well-formed once the seal matches (no pattern match needed: 50 µs each).
  IF b IS NULL OR length(b) <> 101 OR substr(b, 37, 1) <> '.' THEN
    RETURN NULL;
  END IF;
  IF substr(b, 38) = public.tenant_fence_seal(substr(b, 1, 36)) THEN
    RETURN substr(b, 1, 36)::uuid;
  END IF;
  RETURN NULL;
END
$fn$;

-- Every fence reads the bound tenant. `(SELECT ...)`: evaluated once per statement, and
-- `tenant_id = <value>` keeps the tenant_id indexes usable under the policy.
DO $$
DECLARE
  t text;
BEGIN
  FOREACH t IN ARRAY ARRAY[
    'tenants', 'api_keys', 'users', 'installs', 'credentials', 'events', 'emitted_events',
    'chat_workspace_claims', 'chat_bot_identities', 'oauth_states', 'codehost_repos',
    'repo_index_state', 'graph_nodes', 'graph_edges', 'effects', 'idempotency_keys',
    'dead_letters', 'ingest_blobs'
  ] LOOP
    IF EXISTS (SELECT 1 FROM pg_catalog.pg_policies p
                WHERE p.schemaname = 'public' AND p.tablename = t AND p.policyname = 'tenant_fence') THEN
      EXECUTE format(
        'ALTER POLICY tenant_fence ON %I USING (tenant_id = (SELECT app_bound_tenant()))'
        ' WITH CHECK (tenant_id = (SELECT app_bound_tenant()))',
        t
      );
    END IF;
  END LOOP;
  IF EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'connectors_app') THEN
    -- The nodes' login reads the secret to bind its tenant routes' transactions; only the
    -- owner changes it.
    GRANT SELECT ON tenant_fence_key TO connectors_app;
    REVOKE INSERT, UPDATE, DELETE ON tenant_fence_key FROM connectors_app;
  END IF;
END $$;
DROP FUNCTION app_tenant_visible(uuid);

-- Temporary tables, views and functions would let a tenant login plant objects on a pooled
-- connection that later transactions of other tenants resolve before the real tables (the
-- temporary schema comes first in search_path). No role of the service needs them; the
-- nodes' login keeps the right. Only the database's owner may revoke it: run by another
-- role, this warns and changes nothing, and the node warns at start (tenant-role.ts).
DO $$
BEGIN
  EXECUTE format('REVOKE TEMPORARY ON DATABASE %I FROM PUBLIC', current_database());
  IF EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'connectors_app') THEN
    EXECUTE format('GRANT TEMPORARY ON DATABASE %I TO connectors_app', current_database());
  END IF;
END $$;

-- As 018, reading the bound tenant instead of `app.tenant_id`. CREATE OR REPLACE keeps the
-- function's owner and grants (017).
CREATE OR REPLACE FUNCTION graph_search_page(
  for_tenant uuid,
  q text,
  cjk_patterns text[],
  q_rest text,
  node_kind text,
  node_install uuid,
  before_seq bigint,
  page_size integer
) RETURNS TABLE (node_id uuid)
LANGUAGE plpgsql STABLE SECURITY DEFINER ROWS 100 SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
  named uuid := public.app_bound_tenant();
  tsq constant text :=
    '(websearch_to_tsquery(''english''::regconfig, %1$s) || '
    'websearch_to_tsquery(''public.connectors_search''::regconfig, %1$s))';
  cond text;
  stmt text;
BEGIN
  IF named IS NOT NULL THEN
    IF for_tenant IS DISTINCT FROM named THEN
      RETURN;
    END IF;
  ELSIF NOT (
    session_user = current_user
    OR EXISTS (SELECT 1 FROM pg_roles r WHERE r.rolname = session_user AND (r.rolsuper OR r.rolbypassrls))
    OR (to_regrole('connectors_app') IS NOT NULL AND pg_has_role(session_user, 'connectors_app', 'MEMBER'))
  ) THEN
    RETURN;
  END IF;

  cond := 'n.search @@ ' || format(tsq, '$2');
  IF cardinality(cjk_patterns) > 0 THEN
    cond := format(
      '(%s OR (%s AND (numnode(%s) = 0 OR n.search @@ %s)))',
      cond,
      (SELECT string_agg(format('n.search_cjk ILIKE $3[%s]', i), ' AND ' ORDER BY i)
       FROM generate_subscripts(cjk_patterns, 1) AS i),
      format(tsq, '$4'),
      format(tsq, '$4')
    );
  END IF;
  stmt := 'SELECT n.node_id FROM public.graph_nodes n WHERE n.tenant_id = $1 AND ' || cond;
  IF node_kind IS NOT NULL THEN
    stmt := stmt || ' AND n.kind = $5';
  END IF;
  IF node_install IS NOT NULL THEN
    stmt := stmt || ' AND n.install_id = $6';
  END IF;
  IF before_seq IS NOT NULL THEN
    stmt := stmt || ' AND n.seq < $7';
  END IF;
  RETURN QUERY EXECUTE stmt || ' ORDER BY n.seq DESC LIMIT $8'
    USING for_tenant, q, cjk_patterns, q_rest, node_kind, node_install, before_seq, page_size;
END
$fn$;
