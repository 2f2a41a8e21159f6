-- 070: a JetStream message is dead-lettered once (issue 32). The ingest consumer's dead
-- letters and those made from the server's MAX_DELIVERIES advisories (ingest/max-deliveries.ts)
-- are recorded only when no row holds the same stream message yet: a retried advisory, or an
-- ack that never reached the server, must not make a second row (and a second replay).
CREATE INDEX dead_letters_stream_seq ON dead_letters (stream, stream_seq);
