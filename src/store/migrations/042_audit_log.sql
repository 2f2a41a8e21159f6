-- 042: the audit log (INTERFACE §10.5, ARCHITECTURE "Data lifecycle"): who did what with a
-- tenant's keys. Append-only for the service: its roles may insert and read entries, never
-- change or delete one. Only the schema owner's functions below delete them: the retention
-- (entries older than SERVICE_EVENTS_RETENTION_DAYS) and a tenant's deletion.
CREATE TABLE audit_log (
  id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  tenant_id  uuid NOT NULL REFERENCES tenants (tenant_id),
  at         timestamptz NOT NULL DEFAULT now(),
  -- What was done: `install`, `uninstall`, `emit`, `node_action`, `dead_letter_replay`,
  -- `erase`, `export`, `api_key_create`, `api_key_revoke`, `webhook_*`.
  action     text NOT NULL,
  -- The API key that did it (null for an operator's command or a browser's OAuth callback).
  key_id     uuid,
  request_id text,
  -- What it was done to (`install/<id>`, `node/<id>`, ...).
  target     text,
  -- `ok`, or the §2 error code it answered.
  outcome    text NOT NULL
);
CREATE INDEX audit_log_listing ON audit_log (tenant_id, id DESC);
CREATE INDEX audit_log_at ON audit_log (at);

ALTER TABLE audit_log ENABLE ROW LEVEL SECURITY;
ALTER TABLE audit_log FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_fence ON audit_log
  USING (tenant_id = (SELECT app_bound_tenant())) WITH CHECK (tenant_id = (SELECT app_bound_tenant()));
DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'connectors_app') THEN
    CREATE POLICY system_access ON audit_log TO connectors_app, CURRENT_USER USING (true) WITH CHECK (true);
    -- 003's default privileges granted every new table's DML: not this one's UPDATE and DELETE.
    REVOKE ALL ON audit_log FROM connectors_app;
    GRANT SELECT, INSERT ON audit_log TO connectors_app;
  ELSE
    CREATE POLICY system_access ON audit_log TO CURRENT_USER USING (true) WITH CHECK (true);
  END IF;
  IF EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'connectors_tenant') THEN
    REVOKE ALL ON audit_log FROM connectors_tenant;
    GRANT SELECT, INSERT ON audit_log TO connectors_tenant;
  END IF;
END $$;

-- The two ways entries go, as the schema owner (SECURITY DEFINER), each a bounded batch that
-- answers how many it deleted: the retention's, and a deleted tenant's.
CREATE FUNCTION audit_log_prune(before timestamptz, max_rows integer) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
  n integer;
BEGIN
  DELETE FROM public.audit_log a USING (
    SELECT id FROM public.audit_log WHERE at < before ORDER BY at LIMIT max_rows FOR UPDATE SKIP LOCKED
  ) o WHERE a.id = o.id;
  GET DIAGNOSTICS n = ROW_COUNT;
  RETURN n;
END
$fn$;

CREATE FUNCTION audit_log_delete_tenant(tenant uuid, max_rows integer) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
  n integer;
BEGIN
  DELETE FROM public.audit_log a USING (
    SELECT id FROM public.audit_log WHERE tenant_id = tenant LIMIT max_rows
  ) o WHERE a.id = o.id;
  GET DIAGNOSTICS n = ROW_COUNT;
  RETURN n;
END
$fn$;

REVOKE ALL ON FUNCTION audit_log_prune(timestamptz, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION audit_log_delete_tenant(uuid, integer) FROM PUBLIC;
DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'connectors_app') THEN
    GRANT EXECUTE ON FUNCTION audit_log_prune(timestamptz, integer) TO connectors_app;
    GRANT EXECUTE ON FUNCTION audit_log_delete_tenant(uuid, integer) TO connectors_app;
  END IF;
END $$;
