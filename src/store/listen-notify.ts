/**
 * Hears one Postgres NOTIFY channel on a dedicated pooled connection, reconnecting with a
 * growing delay when the connection is lost.
 *
 * `live(true)` is called only once LISTEN is in effect, `live(false)` as soon as the
 * connection is lost: a cache that trusts the announcements must stop trusting them for
 * exactly that gap.
 */
import { backoffMs } from '../backoff.js';
import type pg from 'pg';
import type { Logger } from '../log.js';

export interface NotifyHandlers {
  notified(payload: string): void;
  live(listening: boolean): void;
}

/** Between reconnects of the listening client (backoff.ts). */
const RECONNECT = { firstMs: 500, capMs: 15_000 };

export function listenNotify(
  pool: pg.Pool,
  channel: string,
  log: Logger,
  on: NotifyHandlers,
): { stop(): Promise<void> } {
  if (!/^[a-z_][a-z0-9_]*$/.test(channel)) throw new Error(`bad channel name ${channel}`);
  let stopped = false;
  let client: pg.PoolClient | null = null;
  let timer: NodeJS.Timeout | null = null;
  let failures = 0;

  const retry = (err: unknown, message: string) => {
    const delay = backoffMs(RECONNECT, ++failures);
    log.warn({ err, channel, retryInMs: delay }, message);
    timer = setTimeout(() => void connect(), delay);
  };

  const lost = (c: pg.PoolClient, err: unknown) => {
    if (client !== c) return;
    client = null;
    on.live(false);
    c.release(err instanceof Error ? err : true);
    if (!stopped)
      retry(
        err,
        'Postgres announcements not heard; the caches that trust them look up directly or expire quickly meanwhile',
      );
  };

  const connect = async () => {
    timer = null;
    let c: pg.PoolClient;
    try {
      c = await pool.connect();
    } catch (err) {
      if (!stopped) retry(err, 'cannot connect to hear Postgres announcements');
      return;
    }
    if (stopped) return c.release(true);
    client = c;
    c.on('error', (err) => lost(c, err));
    c.on('end', () => lost(c, new Error('connection ended')));
    c.on('notification', (m) => {
      if (m.channel === channel) on.notified(m.payload ?? '');
    });
    try {
      await c.query(`LISTEN ${channel}`);
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
