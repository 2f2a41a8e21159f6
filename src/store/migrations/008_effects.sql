-- 008: durable side effects of ingested events (INTERFACE §9.4, ARCHITECTURE "Inbound" 4).
-- The install actor inserts a row per effect in the transaction that stores the event; an
-- effect runner on the shard's owner executes it later with its own retry schedule, so
-- committing an event never waits on GitHub or the indexer.
CREATE TABLE effects (
  id           bigserial PRIMARY KEY,
  install_id   uuid NOT NULL REFERENCES installs (install_id),
  tenant_id    uuid NOT NULL REFERENCES tenants (tenant_id),
  connector_id text NOT NULL,
  -- The install actor's shard: the owner of that shard runs the effect.
  shard        int NOT NULL,
  event_id     text NOT NULL,
  kind         text NOT NULL,
  -- Effects sharing (install_id, serial_key) run one at a time in id order (one summary
  -- comment per PR, one reply per slash comment).
  serial_key   text NOT NULL,
  state        text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'done', 'failed')),
  attempts     int NOT NULL DEFAULT 0,
  next_at      timestamptz NOT NULL DEFAULT now(),
  -- A runner's claim: nobody else runs it before this passes (a dead runner's claim lapses).
  claimed_until timestamptz,
  last_error   text,
  created_at   timestamptz NOT NULL DEFAULT now(),
  updated_at   timestamptz NOT NULL DEFAULT now(),
  UNIQUE (install_id, event_id, kind)
);
CREATE INDEX effects_due ON effects (shard, next_at) WHERE state = 'pending';
CREATE INDEX effects_serial ON effects (install_id, serial_key, id) WHERE state = 'pending';

-- INTERFACE §9.4: `installation` `suspend` makes installs `suspended`; `unsuspend` makes the
-- same installs `active` again. A suspended install still holds its (external id, tenant)
-- slot, so no second install can take it meanwhile and the unsuspend never conflicts.
ALTER TABLE installs DROP CONSTRAINT installs_status_check;
ALTER TABLE installs ADD CONSTRAINT installs_status_check CHECK (status IN ('active', 'suspended', 'uninstalled'));
DROP INDEX installs_active_external;
CREATE UNIQUE INDEX installs_active_external ON installs (connector_id, external_id, tenant_id)
  WHERE status IN ('active', 'suspended');
