-- 036: envelope encryption and master-key-free API-key hashes (issue 32 item 1: a master-key
-- rotation that a cluster survives).
--
-- data_keys: keys the service encrypts with, each stored wrapped (AES-256-GCM) by the master
-- key whose fingerprint is `master_version` (src/store/data-keys.ts). `credentials` encrypts
-- credentials and webhook secrets, so a node on a new master key and a node still on the old
-- one read each other's writes; `api-key-hmac:<version>` keeps the API-key hash key of a master
-- key that hashed keys before SHA-256 was used, so such a key stays valid once that master key
-- is gone. `keys rotate` rewraps every row under the current master key (nothing else changes).
CREATE TABLE data_keys (
  name           text PRIMARY KEY,
  master_version integer NOT NULL,
  nonce          bytea NOT NULL,
  ciphertext     bytea NOT NULL,
  tag            bytea NOT NULL,
  created_at     timestamptz NOT NULL DEFAULT now(),
  rewrapped_at   timestamptz
);
REVOKE ALL ON data_keys FROM PUBLIC;
DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'connectors_app') THEN
    REVOKE ALL ON data_keys FROM connectors_app;
    GRANT SELECT, INSERT ON data_keys TO connectors_app;
  END IF;
END $$;

-- API keys are 256-bit random, so a plain SHA-256 is a safe lookup hash and needs no master
-- key: key_version 0 marks it. Rows hashed before (an HMAC under a master key, key_version its
-- fingerprint) move to SHA-256 on their next use; until then the node finds them with the
-- kept hash keys above.
COMMENT ON COLUMN api_keys.key_version IS '0: SHA-256 of the key; else the fingerprint of the master key whose HMAC made key_hash';
