-- 031: the change feed (INTERFACE §10.1, docs/architecture.md "The change feed").
--
-- graph_changes holds one row per node change, numbered per tenant by `seq`: 1, 2, 3, ...
-- with no holes. The numbers come from tenant_feed.last_seq, advanced by the ingest
-- transaction that writes the changes (src/graph/change-log.ts). That UPDATE locks the
-- tenant's row until COMMIT, so a second transaction of the same tenant takes its range only
-- after the first one is visible: a change becomes visible only once every smaller seq of
-- its tenant is, and a reader asking for `seq > cursor` never steps over a change still to
-- come (which a plain sequence cannot promise: a value taken by an open transaction can
-- commit after a larger one).
CREATE TABLE tenant_feed (
  tenant_id uuid PRIMARY KEY REFERENCES tenants (tenant_id) ON DELETE CASCADE,
  last_seq  bigint NOT NULL DEFAULT 0 CHECK (last_seq >= 0)
);

CREATE TABLE graph_changes (
  tenant_id    uuid NOT NULL,
  seq          bigint NOT NULL,
  node_id      uuid NOT NULL,
  kind         text NOT NULL,
  op           text NOT NULL CHECK (op IN ('upserted', 'deleted')),
  install_id   uuid NOT NULL,
  connector_id text NOT NULL,
  -- clock_timestamp() at insert, after the tenant's row was locked: per tenant it grows with
  -- seq, so the retention deletes a prefix of each tenant's feed, never a change in the middle.
  changed_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
  PRIMARY KEY (tenant_id, seq)
);
-- The retention (SERVICE_CHANGES_RETENTION_DAYS) deletes by age in bounded batches; rows
-- arrive in time order, which a BRIN index serves at almost no cost per insert.
CREATE INDEX graph_changes_changed_at ON graph_changes USING brin (changed_at);

ALTER TABLE tenant_feed ENABLE ROW LEVEL SECURITY;
ALTER TABLE tenant_feed FORCE ROW LEVEL SECURITY;
ALTER TABLE graph_changes ENABLE ROW LEVEL SECURITY;
ALTER TABLE graph_changes FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_fence ON tenant_feed
  USING (tenant_id = (SELECT app_bound_tenant())) WITH CHECK (tenant_id = (SELECT app_bound_tenant()));
CREATE POLICY tenant_fence ON graph_changes
  USING (tenant_id = (SELECT app_bound_tenant())) WITH CHECK (tenant_id = (SELECT app_bound_tenant()));

DO $$
DECLARE
  system_roles text := 'CURRENT_USER';
BEGIN
  IF EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'connectors_app') THEN
    system_roles := 'connectors_app, CURRENT_USER';
  END IF;
  EXECUTE format('CREATE POLICY system_access ON tenant_feed TO %s USING (true) WITH CHECK (true)', system_roles);
  EXECUTE format('CREATE POLICY system_access ON graph_changes TO %s USING (true) WITH CHECK (true)', system_roles);
  -- The tenant routes read their tenant's feed; only ingest (the nodes' login) writes it.
  IF EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'connectors_tenant') THEN
    GRANT SELECT ON tenant_feed, graph_changes TO connectors_tenant;
  END IF;
END $$;

-- Every tenant has its counter row, so an ingest transaction only ever updates one.
INSERT INTO tenant_feed (tenant_id) SELECT tenant_id FROM tenants ON CONFLICT DO NOTHING;
