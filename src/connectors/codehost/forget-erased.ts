/**
 * An erased code-host user stays forgotten (INTERFACE §10.5, `POST /api/v1/graph/erase`):
 * every event that arrives after the erase (a later comment, edit or review of the login, a
 * redelivery, GitHub's reconciliation, the backfill re-reading a repository's pulls, a
 * replayed dead letter) is stored without the text the login wrote (graph/codehost-authored.ts,
 * the rule the erase applied to what was stored), checked against the erase's tombstone
 * (`forgotten`, kind `codehost.user`) in the ingest transaction that stores the event.
 */
import type { IngestEvent } from '../../runtime/ports.js';
import type { Queryable } from '../../store/db.js';
import { forgottenAmong, forgottenKey } from '../../store/forgotten.js';
import type { Install } from '../../store/installs.js';
import { authorsIn, withoutAuthorsText } from '../../graph/codehost-authored.js';

interface Batch {
  install: Install;
  events: readonly IngestEvent[];
}

/** Each batch's events as they may be stored: erased logins' text removed. One lookup for all. */
export async function withoutErased(tx: Queryable, batches: readonly Batch[]): Promise<IngestEvent[][]> {
  const keys = batches.flatMap(({ install, events }) =>
    events.flatMap((e) =>
      authorsIn(e.payload).map((login) => ({ tenantId: install.tenant_id, kind: 'codehost.user', externalId: login })),
    ),
  );
  if (keys.length === 0) return batches.map((b) => [...b.events]);
  const found = await forgottenAmong(tx, keys);
  if (found.size === 0) return batches.map((b) => [...b.events]);
  return batches.map(({ install, events }) =>
    events.map((e) => {
      const erased = (login: string) =>
        found.has(forgottenKey({ tenantId: install.tenant_id, kind: 'codehost.user', externalId: login }));
      const payload = withoutAuthorsText(e.kind, e.payload, erased);
      if (payload === e.payload) return e;
      // The text as received carries what is gone: the stored event is encoded from `payload`.
      const { payloadJson: _asReceived, ...rest } = e;
      return { ...rest, payload };
    }),
  );
}
