-- 011: Idempotency-Key claims on emit and node actions (INTERFACE §9.3). One row per
-- (tenant, key): the first call inserts it (the claim, on whichever node), runs, and
-- stores its receipt; a later call with the key replays that receipt, waits while it is
-- still null, or is refused when its body's fingerprint differs. Rows live 24 hours.
CREATE TABLE idempotency_keys (
  tenant_id    uuid NOT NULL REFERENCES tenants (tenant_id),
  key          text NOT NULL,
  -- sha256 of the call's target and canonical JSON body.
  fingerprint  bytea NOT NULL,
  -- The first call's answer; null while it runs.
  receipt      jsonb,
  -- A claim still without a receipt past this time was abandoned (its node died) and
  -- may be taken over by a call with the same fingerprint.
  locked_until timestamptz NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, key)
);
CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);
