/**
 * Hears the `installs_changed` announcements (migration 007: a trigger NOTIFYs on every
 * committed change to which installs are active), through the store's one NOTIFY listener.
 *
 * `live(true)` is called only once LISTEN is in effect, `live(false)` as soon as the
 * connection is lost (then it reconnects with a growing delay): a cache that trusts the
 * announcements must stop trusting them for exactly that gap, and meanwhile looks the
 * webhook fan-out lists up per request.
 */
import type pg from 'pg';
import type { Logger } from '../../log.js';
import { listenNotify } from '../../store/listen-notify.js';

const INSTALLS_CHANGED_CHANNEL = 'installs_changed';

export interface InstallChangeHandlers {
  /** An install of `connectorId` was created, changed status, or was deleted. */
  changed(connectorId: string): void;
  live(listening: boolean): void;
}

export function listenInstallChanges(pool: pg.Pool, log: Logger, on: InstallChangeHandlers): { stop(): Promise<void> } {
  return listenNotify(pool, INSTALLS_CHANGED_CHANNEL, log, {
    notified: (payload) => on.changed(payload),
    live: on.live,
  });
}
