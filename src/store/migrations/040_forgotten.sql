-- 040: what a tenant's platform asked to forget (INTERFACE §10.5, ARCHITECTURE "Data lifecycle").
--
-- A deleted chat message leaves a tombstone here, named as its graph node is (kind and
-- external id, INTERFACE §5): the ingest transaction that stores the `message_deleted` writes
-- it and removes the message's text from every stored copy (src/store/forgotten.ts). An
-- event of that message stored later (a backfill that raced the deletion, a redelivery, a
-- replayed dead letter) is stored without its text, so the text never comes back. Erasing a
-- platform user (POST /api/v1/graph/erase) leaves one for the user's node the same way.
--
-- Per tenant, not per install: a reinstall of the same workspace must not bring a deleted
-- message back either. Deleted with the tenant.
CREATE TABLE forgotten (
  tenant_id    uuid NOT NULL REFERENCES tenants (tenant_id),
  kind         text NOT NULL,
  external_id  text NOT NULL,
  forgotten_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, kind, external_id)
);

-- The edits of a message are found by id prefix (`message_changed:{channel}:{ts}:`), under
-- any database collation (text_pattern_ops), and only edits pay for the entry. Building it
-- reads the events table once; on a large one, run `migrate` in a quiet moment.
CREATE INDEX events_message_changed ON events (install_id, id text_pattern_ops) WHERE kind = 'message_changed';

-- A deletion looks for the dead letters of its install (rare, but looked for in the
-- ingest transaction, so never by a scan of all of them).
CREATE INDEX dead_letters_install ON dead_letters (install_id) WHERE install_id IS NOT NULL;

-- The fence, as every tenant table has it (012, 013, 030).
ALTER TABLE forgotten ENABLE ROW LEVEL SECURITY;
ALTER TABLE forgotten FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_fence ON forgotten
  USING (tenant_id = (SELECT app_bound_tenant())) WITH CHECK (tenant_id = (SELECT app_bound_tenant()));
DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'connectors_app') THEN
    CREATE POLICY system_access ON forgotten TO connectors_app, CURRENT_USER USING (true) WITH CHECK (true);
    GRANT SELECT, INSERT, DELETE ON forgotten TO connectors_app;
  ELSE
    CREATE POLICY system_access ON forgotten TO CURRENT_USER USING (true) WITH CHECK (true);
  END IF;
  IF EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'connectors_tenant') THEN
    GRANT SELECT, INSERT ON forgotten TO connectors_tenant;
  END IF;
END $$;
