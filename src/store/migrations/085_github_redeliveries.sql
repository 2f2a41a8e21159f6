-- 085: INTERFACE §9.4, GitHub delivery reconciliation asks for a failed delivery again a
-- bounded number of times. Each redelivery GitHub makes is a new delivery with a new id, so
-- a delivery the service keeps failing (a payload it refuses, a fault that lasts) would be
-- asked for on every pass for as long as GitHub keeps it. One row per delivery guid counts the
-- requests made for it; past the bound the reconciliation leaves it and says so. GitHub keeps
-- deliveries for three days: rows idle that long are deleted by the reconciliation itself.
-- App-wide, not a tenant's: closed to the tenant role (013).
CREATE TABLE github_redeliveries (
  app_id            bigint NOT NULL,
  guid              text NOT NULL,
  requests          integer NOT NULL,
  last_requested_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (app_id, guid)
);
CREATE INDEX github_redeliveries_idle ON github_redeliveries (last_requested_at);

DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'connectors_app') THEN
    GRANT SELECT, INSERT, UPDATE, DELETE ON github_redeliveries TO connectors_app;
  END IF;
END $$;
