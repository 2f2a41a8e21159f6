-- 035: API keys with scopes (INTERFACE §10.4).
--
-- scopes: what the key may do (src/api-scopes.ts names them). Every key made before scopes
-- existed could do everything, so each gets every scope; from now on the service always
-- writes the column (no default, so no code path makes a key by accident).
-- label: an operator's name for the key (`api-keys create --label`).
-- expires_at: past it the key answers 401 like a revoked one; NULL never expires.
-- last_used_at: when a request last authenticated with it, written at most once a minute per
-- key (src/store/api-key-usage.ts), never as part of the request.
ALTER TABLE api_keys
  ADD COLUMN scopes text[] NOT NULL
    DEFAULT ARRAY['graph:read', 'graph:write', 'installs:read', 'installs:write', 'webhooks:write', 'audit:read'],
  ADD COLUMN label text CHECK (label IS NULL OR length(label) <= 200),
  ADD COLUMN expires_at timestamptz,
  ADD COLUMN last_used_at timestamptz;
ALTER TABLE api_keys ALTER COLUMN scopes DROP DEFAULT;

-- `api-keys list` reads a tenant's keys oldest first.
CREATE INDEX api_keys_tenant_created ON api_keys (tenant_id, created_at);
DROP INDEX api_keys_tenant;
