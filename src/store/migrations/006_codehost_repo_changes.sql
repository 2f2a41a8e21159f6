-- 006: repos added to or removed from a GitHub installation after its install
-- (`installation_repositories` webhooks), and scheduled retries of failed indexes.

-- A repo added by webhook is known by id and full name only (the payload carries no
-- default branch); a later listing fills the branch in.
ALTER TABLE codehost_repos ALTER COLUMN default_branch DROP NOT NULL;
-- Set when the repo was removed from the installation: it is not indexed (its
-- repo_index_state row is deleted in the same transaction) and cannot be admitted again
-- until an `added` webhook clears it.
ALTER TABLE codehost_repos ADD COLUMN removed_at timestamptz;

-- A failed index is retried with backoff (1 minute doubling to 1 hour, jittered), a
-- bounded number of times in a row:
-- retries: consecutive failed syncs since the last `ready`;
-- retry_at: when the next automatic retry is due (null: none scheduled);
-- retry_owner: `{namespace}/{node}` that scheduled it, so a shard move resumes it in the
-- same deployment (as lock_owner does for a running index).
ALTER TABLE repo_index_state ADD COLUMN retries integer NOT NULL DEFAULT 0 CHECK (retries >= 0);
ALTER TABLE repo_index_state ADD COLUMN retry_at timestamptz;
ALTER TABLE repo_index_state ADD COLUMN retry_owner text;
CREATE INDEX repo_index_state_retry ON repo_index_state (retry_at) WHERE retry_at IS NOT NULL;
