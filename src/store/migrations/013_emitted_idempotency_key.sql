-- 013: the Idempotency-Key (INTERFACE §9.3) of the emit that made an emitted-event record,
-- written in the same statement as the record right after the upstream write. A retry that
-- takes over a claim whose node died before storing its receipt finds the write here and
-- replays it instead of writing again (src/edge/idempotency.ts).
ALTER TABLE emitted_events ADD COLUMN idempotency_key text;
CREATE INDEX emitted_events_idempotency ON emitted_events (tenant_id, idempotency_key)
  WHERE idempotency_key IS NOT NULL;
