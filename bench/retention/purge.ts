/**
 * The purge of bench/retention: expired events seeded into the bench install (past the
 * service's default SERVICE_EVENTS_RETENTION_DAYS of 90), counted, and deleted by the
 * housekeeping actor's own pass (src/graph/housekeeping-pass.ts, its defaults), one pass
 * after another until stopped.
 */
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import { housekeepingPass, PASS_DEFAULTS } from '../../src/graph/housekeeping-pass.js';

const EVENTS_DAYS = 90;
/** Rows per INSERT while seeding: a statement of its own each, as a backfill would write them. */
const SEED_CHUNK = 25_000;

export const PURGE = { events_retention_days: EVENTS_DAYS, ...PASS_DEFAULTS };

/** Expired events of any install: what the purge has left to delete. */
export async function expiredLeft(pool: pg.Pool): Promise<number> {
  const { rows } = await pool.query<{ n: string }>(
    `SELECT count(*) AS n FROM events WHERE received_at < now() - make_interval(days => $1)`,
    [EVENTS_DAYS],
  );
  return Number(rows[0]!.n);
}

/**
 * Tops the backlog up to `target` expired `issues.opened` events of the install (about 1.3 KB
 * of payload each, received 120 days ago and before); returns how many it added.
 */
export async function seedExpired(pool: pg.Pool, installId: string, tenantId: string, target: number): Promise<number> {
  const missing = target - (await expiredLeft(pool));
  const tag = randomBytes(4).toString('hex');
  for (let from = 0; from < missing; from += SEED_CHUNK) {
    await pool.query(
      `INSERT INTO events (install_id, id, tenant_id, connector_id, kind, occurred_at, received_at, payload)
       SELECT $1, 'expired-' || $3 || '-' || g, $2, 'codehost', 'issues.opened', t, t,
              jsonb_build_object('action', 'opened',
                'issue', jsonb_build_object('number', g, 'title', 'an old issue ' || g, 'updated_at', t,
                                            'body', repeat(md5(g::text), 36)),
                'repository', jsonb_build_object('id', 1, 'full_name', 'bench-old/service'))
         FROM generate_series($4::int, $5::int) g,
              LATERAL (SELECT now() - interval '120 days' - g * interval '1 second' AS t) at`,
      [installId, tenantId, tag, from, Math.min(missing, from + SEED_CHUNK) - 1],
    );
  }
  await pool.query('ANALYZE events');
  return Math.max(0, missing);
}

/** Passes one after another on `pool` until `stop()` (which waits for the pass under way to end). */
export function startPurge(pool: pg.Pool): { stop(): Promise<void>; passes(): number } {
  const abort = new AbortController();
  let passes = 0;
  const running = (async () => {
    while (!abort.signal.aborted) {
      try {
        const out = await housekeepingPass({
          pool,
          policy: { eventsDays: EVENTS_DAYS, uninstalledDays: 30 },
          now: () => Date.now(),
          signal: abort.signal,
        });
        passes++;
        // The backlog is gone: look again in a second rather than spin.
        if (!out.events) await sleep(1_000, undefined, { signal: abort.signal }).catch(() => undefined);
      } catch (err) {
        if (!abort.signal.aborted) throw err;
      }
    }
  })();
  return {
    passes: () => passes,
    async stop() {
      abort.abort();
      await running;
    },
  };
}
