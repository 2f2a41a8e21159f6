-- 050: INTERFACE §10.6, chat catch-up. A gap in what Slack delivered (an `app_rate_limited`
-- minute, or a window in which no node accepted the install's events) is recorded on the
-- install as `catch_up_pending_since` (the earliest start of the gaps not yet re-read) and
-- `catch_up_due_at` (when the last of them ends: the re-read starts then). The install's
-- walker takes it: `catch_up_since` / `catch_up_until` are the window it re-reads, so a
-- walker that restarts rebuilds the same walk from the row. Progress updates, like the
-- backfill's, touch none of the columns the installs_changed trigger watches.
ALTER TABLE installs
  ADD COLUMN catch_up_state text NOT NULL DEFAULT 'none'
    CHECK (catch_up_state IN ('none', 'pending', 'running', 'complete', 'failed')),
  ADD COLUMN catch_up_pending_since timestamptz,
  ADD COLUMN catch_up_due_at timestamptz,
  ADD COLUMN catch_up_since timestamptz,
  ADD COLUMN catch_up_until timestamptz,
  ADD COLUMN catch_up_progress jsonb NOT NULL DEFAULT '{}',
  ADD COLUMN catch_up_updated_at timestamptz;

-- The resume sweep's listing: active chat installs with a catch-up to run.
CREATE INDEX installs_catch_up_open ON installs (install_id)
  WHERE connector_id = 'chatapp' AND catch_up_state IN ('pending', 'running');
