-- 012 (security, part 1): API-key lifecycle (INTERFACE §9.1).
--
-- key_id names a key to operators (`api-keys create` / `revoke`) without the key itself;
-- key_version is the fingerprint of the master key that made key_hash (1: made before
-- fingerprints), so a rotation can tell which hashes still await their upgrade on next use.
ALTER TABLE api_keys ADD COLUMN key_id uuid NOT NULL DEFAULT gen_random_uuid();
ALTER TABLE api_keys ADD CONSTRAINT api_keys_key_id UNIQUE (key_id);
ALTER TABLE api_keys ADD COLUMN key_version integer NOT NULL DEFAULT 1;

-- INTERFACE §9.1: a revoked key is refused by every node within 5 s. Each edge caches
-- key lookups and LISTENs here (src/store/listen-notify.ts); NOTIFY is transactional, so
-- the cache is dropped only once the revocation has committed.
CREATE FUNCTION api_keys_changed_notify() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('api_keys_changed', OLD.key_id::text);
  RETURN NULL;
END
$$;

CREATE TRIGGER api_keys_changed
AFTER DELETE OR UPDATE OF revoked_at, tenant_id ON api_keys
FOR EACH ROW EXECUTE FUNCTION api_keys_changed_notify();
