-- 002: the chat-workspace connector (spec §2.2, §3.1; INTERFACE §3 OAuth routes).

-- spec §2.2: one install per workspace across the deployment. team_id is the primary key,
-- so two tenants racing to install one workspace cannot both commit; the row is deleted
-- in the uninstall transaction (spec §3.1), which makes a reinstall possible.
CREATE TABLE chat_workspace_claims (
  team_id    text PRIMARY KEY,
  install_id uuid NOT NULL UNIQUE REFERENCES installs (install_id),
  tenant_id  uuid NOT NULL REFERENCES tenants (tenant_id),
  claimed_at timestamptz NOT NULL DEFAULT now()
);

-- Who the bot is in its workspace: not secret, read by the self-emit filter inside every
-- ingest transaction (INTERFACE §8.23) without decrypting credentials, and kept after an
-- uninstall so late events of the install are still recognised.
CREATE TABLE chat_bot_identities (
  install_id  uuid PRIMARY KEY REFERENCES installs (install_id),
  tenant_id   uuid NOT NULL REFERENCES tenants (tenant_id),
  team_id     text NOT NULL,
  bot_user_id text NOT NULL,
  bot_id      text,
  app_id      text NOT NULL,
  scopes      text[] NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);

-- INTERFACE §3 oauth/start: single-use, 10-minute states binding tenant, connector and
-- redirect_uri. Only a SHA-256 of the state is stored: a database reader cannot replay one.
CREATE TABLE oauth_states (
  state_hash   bytea PRIMARY KEY,
  tenant_id    uuid NOT NULL REFERENCES tenants (tenant_id),
  connector_id text NOT NULL,
  redirect_uri text NOT NULL,
  expires_at   timestamptz NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX oauth_states_expires_at ON oauth_states (expires_at);
