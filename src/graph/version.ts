/**
 * Versions order the writes of the projection (INTERFACE §5: replaying an event changes
 * nothing; the graph's contract: any order of events leaves the same graph). A prop or a tombstoned
 * edge takes a write only when the write's version is not older than the stored one, so
 * the newest event wins whatever order events arrive in.
 *
 * A version is a plain string compared with `<`: `{µs since epoch, 20 digits}.{rank}.{tie}`.
 * - the time is when the fact became true upstream (a Slack `ts`/`event_ts`, a GitHub
 *   `updated_at`), never when the service received it;
 * - `rank` orders facts of one instant: a deletion outranks an edit made in the same
 *   second (GitHub's `updated_at` has one-second resolution and a delete does not move it);
 * - `tie` is the event id, so two different events of one instant still order the same way
 *   on every replay.
 */

export type Version = string;

const MICROS_WIDTH = 20;

/** Lowest possible version: facts derived from an identity (a message's channel and ts). */
export const IDENTITY_VERSION: Version = versionAt(0n, 0, '');

export function versionAt(micros: bigint, rank: number, tie: string): Version {
  if (micros < 0n) micros = 0n;
  return `${micros.toString().padStart(MICROS_WIDTH, '0')}.${rank}.${tie}`;
}

const SLACK_TS = /^(\d{1,12})(?:\.(\d{1,9}))?$/;

/**
 * Microseconds of a Slack timestamp (`"1700000000.000100"`), parsed as text: a double
 * cannot hold every Slack ts exactly, and two messages one microsecond apart must differ.
 * Digits past the sixth are dropped (Slack sends six; the event id still breaks a tie).
 * Null when it is not a Slack timestamp.
 */
export function slackTsMicros(ts: unknown): bigint | null {
  if (typeof ts !== 'string') return null;
  const m = SLACK_TS.exec(ts);
  if (!m) return null;
  return BigInt(m[1]!) * 1_000_000n + BigInt((m[2] ?? '').padEnd(6, '0').slice(0, 6));
}

/** Microseconds of an ISO 8601 string or of epoch seconds (GitHub uses both); null if neither. */
export function timeMicros(t: unknown): bigint | null {
  if (typeof t === 'number' && Number.isFinite(t) && t >= 0) return BigInt(Math.trunc(t * 1000)) * 1000n;
  if (typeof t !== 'string') return null;
  const ms = Date.parse(t);
  return Number.isNaN(ms) ? null : BigInt(ms) * 1000n;
}
