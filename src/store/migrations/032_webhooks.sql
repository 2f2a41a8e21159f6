-- 032: webhooks to tenants (INTERFACE §10.2, docs/graph.md "Webhooks").
--
-- A webhook delivers its tenant's change feed (031) in feed order from `cursor`, the last
-- change it delivered. The message being delivered is stored before its first attempt
-- (`pending_*`: its webhook-id, body and the cursor it moves to), so every retry, on this
-- node or the one that takes the actor over, sends the same message with the same id, and
-- the cursor moves only once the endpoint answered 2xx.
--
-- Secrets are AES-256-GCM under the master key (src/store/webhooks.ts `sealSecret`), the
-- webhook id bound in; the previous secret keeps signing until `previous_until` (24 h).
CREATE TABLE webhooks (
  webhook_id         uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  tenant_id          uuid NOT NULL REFERENCES tenants (tenant_id) ON DELETE CASCADE,
  url                text NOT NULL,
  kinds              text[] NOT NULL DEFAULT '{}',
  description        text,
  status             text NOT NULL DEFAULT 'enabled' CHECK (status IN ('enabled', 'failing', 'disabled')),
  secret             bytea NOT NULL,
  previous_secret    bytea,
  previous_until     timestamptz,
  cursor             bigint NOT NULL DEFAULT 0,
  pending_message_id text,
  pending_body       text,
  pending_cursor     bigint,
  attempts           integer NOT NULL DEFAULT 0,
  next_attempt_at    timestamptz,
  failing_since      timestamptz,
  created_at         timestamptz NOT NULL DEFAULT now(),
  updated_at         timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhooks_tenant ON webhooks (tenant_id, created_at DESC);

-- One row per attempt (INTERFACE §10.2 deliveries log); the retention deletes old ones.
CREATE TABLE webhook_deliveries (
  seq          bigserial PRIMARY KEY,
  delivery_id  uuid NOT NULL DEFAULT gen_random_uuid() UNIQUE,
  webhook_id   uuid NOT NULL REFERENCES webhooks (webhook_id) ON DELETE CASCADE,
  tenant_id    uuid NOT NULL,
  message_id   text NOT NULL,
  attempted_at timestamptz NOT NULL,
  status_code  integer,
  error        text,
  duration_ms  integer NOT NULL,
  changes      integer NOT NULL
);
CREATE INDEX webhook_deliveries_webhook ON webhook_deliveries (webhook_id, seq DESC);
CREATE INDEX webhook_deliveries_attempted_at ON webhook_deliveries USING brin (attempted_at);

ALTER TABLE webhooks ENABLE ROW LEVEL SECURITY;
ALTER TABLE webhooks FORCE ROW LEVEL SECURITY;
ALTER TABLE webhook_deliveries ENABLE ROW LEVEL SECURITY;
ALTER TABLE webhook_deliveries FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_fence ON webhooks
  USING (tenant_id = (SELECT app_bound_tenant())) WITH CHECK (tenant_id = (SELECT app_bound_tenant()));
CREATE POLICY tenant_fence ON webhook_deliveries
  USING (tenant_id = (SELECT app_bound_tenant())) WITH CHECK (tenant_id = (SELECT app_bound_tenant()));

DO $$
DECLARE
  system_roles text := 'CURRENT_USER';
BEGIN
  IF EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'connectors_app') THEN
    system_roles := 'connectors_app, CURRENT_USER';
  END IF;
  EXECUTE format('CREATE POLICY system_access ON webhooks TO %s USING (true) WITH CHECK (true)', system_roles);
  EXECUTE format('CREATE POLICY system_access ON webhook_deliveries TO %s USING (true) WITH CHECK (true)', system_roles);
  -- The tenant routes manage their webhooks and read the deliveries; the actors (nodes' login) deliver.
  IF EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'connectors_tenant') THEN
    GRANT SELECT, INSERT, UPDATE, DELETE ON webhooks TO connectors_tenant;
    GRANT SELECT ON webhook_deliveries TO connectors_tenant;
  END IF;
END $$;
