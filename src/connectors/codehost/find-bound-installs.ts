/**
 * The active code-host installs bound to a GitHub `installation.id` (the webhook fan-out,
 * one per tenant, oldest first as `findActiveInstalls` orders them), looked up in batches:
 * every lookup asked during one turn of the event loop joins one query for all their ids.
 *
 * Every answer comes from a query sent after the lookup was asked, so it is exactly as
 * fresh as one query per request; under load one round trip (one socket write, which on a
 * busy edge costs more than the query) serves many requests. The cache in front of it
 * (bound-installs-cache.ts) sends only its misses here.
 */
import type { Queryable } from '../../store/db.js';
import type { Install } from '../../store/installs.js';

/** What the fan-out needs of an install: its coordinates in the ingest stream. */
export type BoundInstall = Pick<Install, 'install_id' | 'tenant_id'>;

export type FindBoundInstalls = (installationId: number) => Promise<readonly BoundInstall[]>;

/** Distinct ids per query: a burst of many installations splits into several queries. */
const MAX_IDS_PER_QUERY = 256;

interface Waiter {
  resolve(installs: readonly BoundInstall[]): void;
  reject(err: unknown): void;
}

export function boundInstallsFinder(q: Queryable): FindBoundInstalls {
  let open: Map<string, Waiter[]> | null = null;

  const run = async (batch: Map<string, Waiter[]>) => {
    try {
      const { rows } = await q.query<BoundInstall & { external_id: string }>(
        `SELECT external_id, install_id, tenant_id FROM installs
         WHERE connector_id = 'codehost' AND external_id = ANY($1::text[]) AND status = 'active'
         ORDER BY created_at, install_id`,
        [[...batch.keys()]],
      );
      const found = new Map<string, BoundInstall[]>();
      for (const r of rows) {
        const list = found.get(r.external_id) ?? [];
        list.push({ install_id: r.install_id, tenant_id: r.tenant_id });
        found.set(r.external_id, list);
      }
      for (const [id, waiters] of batch) for (const w of waiters) w.resolve(found.get(id) ?? []);
    } catch (err) {
      for (const waiters of batch.values()) for (const w of waiters) w.reject(err);
    }
  };

  const close = (batch: Map<string, Waiter[]>) => {
    if (open === batch) open = null;
    void run(batch);
  };

  return (installationId) =>
    new Promise((resolve, reject) => {
      const id = String(installationId);
      let batch = open;
      if (batch === null) {
        const b = (batch = open = new Map());
        // setImmediate, not a microtask: requests read from other sockets in the same
        // poll phase of the loop join this batch.
        setImmediate(() => open === b && close(b));
      }
      const waiters = batch.get(id);
      if (waiters) waiters.push({ resolve, reject });
      else batch.set(id, [{ resolve, reject }]);
      if (batch.size >= MAX_IDS_PER_QUERY) close(batch);
    });
}
