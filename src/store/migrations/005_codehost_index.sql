-- 005: code-host repos of an install and their indexer state (spec §2.3 "Repo index
-- state", §8 "Indexer daemons"; INTERFACE §6).

-- Repos the PR-diff backfill listing found for an install. The walker's cursor holds only
-- repo ids so it stays under 100 KB at the caps (spec §8); names and clone URLs live here,
-- and the indexer sessions read them too.
CREATE TABLE codehost_repos (
  install_id     uuid NOT NULL REFERENCES installs (install_id),
  repo_id        bigint NOT NULL CHECK (repo_id > 0),
  tenant_id      uuid NOT NULL,
  full_name      text NOT NULL,
  clone_url      text NOT NULL,
  default_branch text NOT NULL,
  listed_at      timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (install_id, repo_id)
);

-- One row per (install, repo) with an indexer daemon (one daemon each, spec §8). Rows
-- count toward the tenant's repo cap while their install is active.
-- lock_owner / lock_expires_at: the indexing lock of a running index/sync. It starts at
-- 5 minutes and every index/status poll that finds the daemon still indexing extends it
-- (a heartbeat), so a first index of a very large repo outlives the 5-minute default
-- (spec §8); a lock that lapses means the daemon stopped reporting and the index failed.
CREATE TABLE repo_index_state (
  install_id        uuid NOT NULL REFERENCES installs (install_id),
  repo_id           bigint NOT NULL CHECK (repo_id > 0),
  tenant_id         uuid NOT NULL,
  repo_full_name    text NOT NULL,
  clone_url         text NOT NULL,
  daemon_url        text,
  status            text NOT NULL DEFAULT 'pending'
                    CHECK (status IN ('pending', 'indexing', 'ready', 'failed')),
  last_indexed_sha  text,
  -- The sha the last index/sync asked for (null: the default branch head).
  target_sha        text,
  progress          jsonb,
  error             text,
  lock_owner        text,
  lock_expires_at   timestamptz,
  sync_requested_at timestamptz,
  indexed_at        timestamptz,
  created_at        timestamptz NOT NULL DEFAULT now(),
  updated_at        timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (install_id, repo_id)
);
CREATE INDEX repo_index_state_tenant ON repo_index_state (tenant_id);
-- Sessions to resume after a shard moves: pending or indexing rows.
CREATE INDEX repo_index_state_unsettled ON repo_index_state (status) WHERE status IN ('pending', 'indexing');
