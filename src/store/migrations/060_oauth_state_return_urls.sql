-- 060: INTERFACE §10.7, the chat OAuth callback as a browser page. `oauth/start` may name
-- where the installer's browser goes afterwards (`success_url`, `failure_url`, absolute
-- http(s) URLs); they are bound to the state like `redirect_uri`, so only a caller holding the
-- tenant's key chooses them, and a callback with a bad state has none to go to.
ALTER TABLE oauth_states
  ADD COLUMN success_url text,
  ADD COLUMN failure_url text;
