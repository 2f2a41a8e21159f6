-- 003: the code-host connector (spec §2.3, §4.3).
--
-- spec §2.3: the App-installation table is not readable by the application's database
-- role; the service reads and writes it only through the SECURITY DEFINER functions below,
-- which run as this migration's role (the table's owner).
--
-- Operators: run migrations (`connectors migrate`) as the owning role and the service as
-- `connectors_app` (or a login role granted it). A superuser, the table's owner and any
-- role with BYPASSRLS read the table directly whatever this file says; the service keeps
-- working as one of them, without the protection.

-- The application's role. Created when this migration may create roles; otherwise the
-- operator creates it (NOLOGIN, granted to the service's login role) and re-runs the grants.
DO $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'connectors_app') THEN
    BEGIN
      CREATE ROLE connectors_app NOLOGIN;
    EXCEPTION
      -- Roles are cluster-wide: another database's migration may have created it meanwhile.
      WHEN duplicate_object OR unique_violation THEN NULL;
      WHEN insufficient_privilege THEN
        RAISE NOTICE 'connectors_app role not created (no CREATEROLE); create it to separate the application role';
    END;
  END IF;
END $$;

CREATE TABLE codehost_app_installations (
  install_id             uuid PRIMARY KEY REFERENCES installs (install_id),
  tenant_id              uuid NOT NULL REFERENCES tenants (tenant_id),
  github_installation_id bigint NOT NULL CHECK (github_installation_id > 0),
  account_login          text NOT NULL,
  account_type           text NOT NULL,
  repository_selection   text NOT NULL,
  app_id                 bigint NOT NULL,
  created_at             timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX codehost_app_installations_github ON codehost_app_installations (github_installation_id);

-- Two locks: no privilege for anyone but the owner, and row-level security with no policy,
-- so even a role granted SELECT by mistake later (a broad GRANT ... ON ALL TABLES) sees no row.
REVOKE ALL ON codehost_app_installations FROM PUBLIC;
ALTER TABLE codehost_app_installations ENABLE ROW LEVEL SECURITY;

-- search_path pinned with pg_temp last: a caller cannot shadow the table with a temp one.
CREATE FUNCTION codehost_app_installation_put(
  p_install_id uuid,
  p_tenant_id uuid,
  p_github_installation_id bigint,
  p_account_login text,
  p_account_type text,
  p_repository_selection text,
  p_app_id bigint
) RETURNS boolean
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
  -- Only for a code-host install of that very tenant (spec §4.3: bound by the caller's key).
  WITH ins AS (
    INSERT INTO public.codehost_app_installations
      (install_id, tenant_id, github_installation_id, account_login, account_type, repository_selection, app_id)
    SELECT i.install_id, i.tenant_id, p_github_installation_id, p_account_login, p_account_type, p_repository_selection, p_app_id
    FROM public.installs i
    WHERE i.install_id = p_install_id AND i.tenant_id = p_tenant_id AND i.connector_id = 'codehost'
    RETURNING 1
  )
  SELECT count(*) = 1 FROM ins
$$;

CREATE FUNCTION codehost_app_installation_get(p_install_id uuid, p_tenant_id uuid)
RETURNS TABLE (
  install_id uuid,
  tenant_id uuid,
  github_installation_id bigint,
  account_login text,
  account_type text,
  repository_selection text,
  app_id bigint,
  created_at timestamptz
)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
  SELECT a.install_id, a.tenant_id, a.github_installation_id, a.account_login, a.account_type,
         a.repository_selection, a.app_id, a.created_at
  FROM public.codehost_app_installations a
  WHERE a.install_id = p_install_id AND a.tenant_id = p_tenant_id
$$;

REVOKE ALL ON FUNCTION codehost_app_installation_put(uuid, uuid, bigint, text, text, text, bigint) FROM PUBLIC;
REVOKE ALL ON FUNCTION codehost_app_installation_get(uuid, uuid) FROM PUBLIC;

-- The application role gets ordinary access to every table (now and those later migrations
-- of this role create), and to the App-installation table only through the two functions.
DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'connectors_app') THEN
    GRANT USAGE ON SCHEMA public TO connectors_app;
    GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO connectors_app;
    GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO connectors_app;
    ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO connectors_app;
    ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT USAGE, SELECT ON SEQUENCES TO connectors_app;
    REVOKE ALL ON public.codehost_app_installations FROM connectors_app;
    GRANT EXECUTE ON FUNCTION public.codehost_app_installation_put(uuid, uuid, bigint, text, text, text, bigint) TO connectors_app;
    GRANT EXECUTE ON FUNCTION public.codehost_app_installation_get(uuid, uuid) TO connectors_app;
  END IF;
END $$;
