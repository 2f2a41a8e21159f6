/**
 * `last_used_at` of API keys (INTERFACE §10.4) without a write per request: a node writes a
 * key's time at most once a minute, off the request's path (the request never waits for it),
 * and the statement itself leaves a row alone that another node stamped less than a minute
 * ago, so however many nodes serve a key, its row is rewritten at most about once a minute.
 */

const KEY_USAGE_INTERVAL_MS = 60_000;
const MAX_REMEMBERED = 10_000;

export interface KeyUsageOptions {
  now?: () => number;
  /** A failed write (logged by the caller; the next use a minute on tries again). */
  onError?: (err: unknown) => void;
}

/** `used(keyId)` for `createTenantAuth`; `flushed()` resolves once the writes started so far have ended (tests). */
/** What the recorder needs of Postgres: one statement (a pool). */
export interface UsageWriter {
  query(text: string, values: unknown[]): Promise<unknown>;
}

export function keyUsageRecorder(q: UsageWriter, opts: KeyUsageOptions = {}) {
  const now = opts.now ?? Date.now;
  const written = new Map<string, number>();
  const pending = new Set<Promise<void>>();

  function used(keyId: string): void {
    const t = now();
    const last = written.get(keyId);
    if (last !== undefined && t - last < KEY_USAGE_INTERVAL_MS) return;
    // Forgetting everything at the cap costs at most one extra write per key.
    if (last === undefined && written.size >= MAX_REMEMBERED) written.clear();
    written.set(keyId, t);
    const write = q
      .query(
        `UPDATE api_keys SET last_used_at = now()
         WHERE key_id = $1 AND (last_used_at IS NULL OR last_used_at < now() - make_interval(secs => $2))`,
        [keyId, KEY_USAGE_INTERVAL_MS / 1000],
      )
      .then(
        () => undefined,
        (err: unknown) => opts.onError?.(err),
      );
    pending.add(write);
    void write.finally(() => pending.delete(write));
  }

  const flushed = async (): Promise<void> => {
    await Promise.all([...pending]);
  };

  return { used, flushed };
}
