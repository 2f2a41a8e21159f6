-- 001: the core schema (ARCHITECTURE "Storage"). Ids are uuids from gen_random_uuid();
-- every timestamp is timestamptz. Tenant-scoped rows carry tenant_id and every query
-- filters on it.

CREATE TABLE tenants (
  tenant_id  uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  name       text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);

-- Only a keyed hash of each API key is stored (INTERFACE §1 "tenants create");
-- key_prefix is the first characters of the key, enough for an operator to tell keys apart.
CREATE TABLE api_keys (
  key_hash   bytea PRIMARY KEY,
  tenant_id  uuid NOT NULL REFERENCES tenants (tenant_id),
  key_prefix text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  revoked_at timestamptz
);
CREATE INDEX api_keys_tenant ON api_keys (tenant_id);

CREATE TABLE users (
  user_id    uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  tenant_id  uuid NOT NULL REFERENCES tenants (tenant_id),
  email      text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX users_tenant_email ON users (tenant_id, lower(email));

CREATE TABLE installs (
  install_id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  tenant_id           uuid NOT NULL REFERENCES tenants (tenant_id),
  connector_id        text NOT NULL CHECK (connector_id IN ('chatapp', 'codehost')),
  status              text NOT NULL CHECK (status IN ('active', 'uninstalled')),
  -- The team id (chat) or the installation id as a string (code host), INTERFACE §3.
  external_id         text NOT NULL,
  display_name        text,
  created_at          timestamptz NOT NULL DEFAULT now(),
  updated_at          timestamptz NOT NULL DEFAULT now(),
  backfill_state      text NOT NULL DEFAULT 'pending'
                      CHECK (backfill_state IN ('pending', 'running', 'complete', 'failed')),
  backfill_progress   jsonb NOT NULL DEFAULT '{}',
  backfill_updated_at timestamptz
);
-- GET /installs lists a tenant's installs newest first, optionally by connector.
CREATE INDEX installs_tenant_listing ON installs (tenant_id, connector_id, created_at DESC);
-- One active install per (external id, tenant); also the webhook fan-out lookup
-- "every active install bound to installation.id" (INTERFACE §3).
CREATE UNIQUE INDEX installs_active_external ON installs (connector_id, external_id, tenant_id)
  WHERE status = 'active';

-- AES-256-GCM ciphertext only (credential-cipher.ts); the associated data binds
-- tenant_id, install_id and key_version, so a row copied elsewhere does not decrypt.
CREATE TABLE credentials (
  install_id  uuid PRIMARY KEY REFERENCES installs (install_id),
  tenant_id   uuid NOT NULL REFERENCES tenants (tenant_id),
  key_version int NOT NULL,
  nonce       bytea NOT NULL,
  ciphertext  bytea NOT NULL,
  tag         bytea NOT NULL,
  revoked_at  timestamptz,
  updated_at  timestamptz NOT NULL DEFAULT now()
);

-- The ingest log. (install_id, id) is the dedup key of ARCHITECTURE "Inbound" step 2.
-- received_at is clock_timestamp() (not the transaction start) and seq breaks ties, so
-- the listing order (INTERFACE §8.27) follows the order rows were stored.
CREATE TABLE events (
  install_id   uuid NOT NULL REFERENCES installs (install_id),
  id           text NOT NULL,
  tenant_id    uuid NOT NULL,
  connector_id text NOT NULL,
  kind         text NOT NULL,
  occurred_at  timestamptz,
  received_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
  seq          bigint GENERATED ALWAYS AS IDENTITY,
  payload      jsonb NOT NULL,
  PRIMARY KEY (install_id, id)
);
CREATE INDEX events_listing ON events (install_id, received_at DESC, seq DESC);
CREATE INDEX events_listing_kind ON events (install_id, kind, received_at DESC, seq DESC);

-- What the service itself emitted upstream, for the self-emit filters (spec: the
-- five-field unique key). For chat rows repo_full_name holds the channel id and
-- issue_or_pr_number is 0.
CREATE TABLE emitted_events (
  install_id         uuid NOT NULL REFERENCES installs (install_id),
  tenant_id          uuid NOT NULL,
  kind               text NOT NULL,
  repo_full_name     text NOT NULL DEFAULT '',
  issue_or_pr_number bigint NOT NULL DEFAULT 0,
  provider_id        text NOT NULL,
  by_actor_login     text,
  emitted_at         timestamptz NOT NULL DEFAULT now(),
  UNIQUE (install_id, kind, repo_full_name, issue_or_pr_number, provider_id)
);
-- Tier-2 self-emit lookup: "did this install emit provider id X?"
CREATE INDEX emitted_events_provider ON emitted_events (install_id, provider_id);

-- JetStream messages that exhausted their deliveries. No foreign key on install_id:
-- a dead letter must be recordable even when its install id is bogus.
CREATE TABLE dead_letters (
  id         bigserial PRIMARY KEY,
  stream     text NOT NULL,
  stream_seq bigint NOT NULL,
  subject    text NOT NULL,
  msg_id     text,
  install_id uuid,
  deliveries int NOT NULL,
  error      text NOT NULL,
  payload    bytea NOT NULL,
  failed_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX dead_letters_failed_at ON dead_letters (failed_at);

-- Payloads too big for a NATS message (webhooks up to 25 MiB) are stored here first and
-- the message carries the ref; the consumer deletes the blob once the event is stored.
CREATE TABLE ingest_blobs (
  ref        uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  data       bytea NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX ingest_blobs_created_at ON ingest_blobs (created_at);
