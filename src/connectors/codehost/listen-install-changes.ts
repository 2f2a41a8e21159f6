/**
 * Hears the `installs_changed` announcements (migration 007: a trigger NOTIFYs on every
 * committed change to which installs are active) on one dedicated pooled connection.
 *
 * `live(true)` is called only once LISTEN is in effect, `live(false)` as soon as the
 * connection is lost (then it reconnects with a growing delay): a cache that trusts the
 * announcements must stop trusting them for exactly that gap.
 */
import type pg from 'pg';
import type { Logger } from '../../log.js';

export const INSTALLS_CHANGED_CHANNEL = 'installs_changed';

export interface InstallChangeHandlers {
  /** An install of `connectorId` was created, changed status, or was deleted. */
  changed(connectorId: string): void;
  live(listening: boolean): void;
}

const RETRY_MIN_MS = 500;
const RETRY_MAX_MS = 15_000;

export function listenInstallChanges(pool: pg.Pool, log: Logger, on: InstallChangeHandlers): { stop(): Promise<void> } {
  let stopped = false;
  let client: pg.PoolClient | null = null;
  let timer: NodeJS.Timeout | null = null;
  let failures = 0;

  const lost = (c: pg.PoolClient, err: unknown) => {
    if (client !== c) return;
    client = null;
    on.live(false);
    c.release(err instanceof Error ? err : true);
    if (stopped) return;
    const delay = Math.min(RETRY_MAX_MS, RETRY_MIN_MS * 2 ** failures++);
    log.warn(
      { err, retryInMs: delay },
      'install change announcements not heard; webhook fan-out lists are looked up per request meanwhile',
    );
    timer = setTimeout(() => void connect(), delay);
  };

  const connect = async () => {
    timer = null;
    let c: pg.PoolClient;
    try {
      c = await pool.connect();
    } catch (err) {
      if (stopped) return;
      const delay = Math.min(RETRY_MAX_MS, RETRY_MIN_MS * 2 ** failures++);
      log.warn({ err, retryInMs: delay }, 'cannot connect to hear install change announcements');
      timer = setTimeout(() => void connect(), delay);
      return;
    }
    if (stopped) return c.release(true);
    client = c;
    c.on('error', (err) => lost(c, err));
    c.on('end', () => lost(c, new Error('connection ended')));
    c.on('notification', (m) => {
      if (m.channel === INSTALLS_CHANGED_CHANNEL) on.changed(m.payload ?? '');
    });
    try {
      await c.query(`LISTEN ${INSTALLS_CHANGED_CHANNEL}`);
    } catch (err) {
      return lost(c, err);
    }
    if (client !== c) return;
    failures = 0;
    on.live(true);
  };

  void connect();
  return {
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      const c = client;
      client = null;
      on.live(false);
      // Destroyed, not returned: a pooled connection must not keep listening.
      c?.release(true);
    },
  };
}
