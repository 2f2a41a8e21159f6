/**
 * The hook the admin install calls once its transaction committed (INTERFACE §3: "the
 * PR-diff backfill starts"). The walker itself is issue #6; it plugs in here by passing
 * its own starter to `codehostModule`'s wiring. Until then the install's backfill stays
 * `pending`, which is what the install record reports.
 */
import type { Logger } from '../../log.js';
import type { Install } from '../../store/installs.js';

export type BackfillStarter = (install: Install) => Promise<void>;

export function pendingBackfillStarter(log: Logger): BackfillStarter {
  return async (install) => {
    log.info({ installId: install.install_id }, 'PR-diff backfill not started: the walker arrives with issue #6');
  };
}
