/**
 * Replay of dead letters (INTERFACE §9.1 `dead-letters replay`, §9.3 `POST
 * /api/v1/dead-letters/{id}/replay`): each stored message goes back on the durable ingest
 * path as it was (same subject, same envelope), and its row is removed once JetStream
 * acknowledged it. It is then ingested once, as if new: the install actor's unique key
 * absorbs an event that was stored after all, and the replay's own `Nats-Msg-Id` makes two
 * concurrent replays of one dead letter a single message. A replay is audited in the
 * transaction that removes the row, once JetStream took the event (INTERFACE §10.5: with the
 * receipt), in the log of the dead letter's tenant: a tenant's (the route) or an operator's
 * (the CLI, each dead letter in its own tenant's log).
 */
import type { JetStreamClient } from '@nats-io/jetstream';
import { Unavailable } from '../errors.js';
import type { Names } from '../runtime/names.js';
import type { Seal } from '../runtime/seal.js';
import type pg from 'pg';
import { recordAuditOk, type AuditStamp } from '../store/audit-log.js';
import { withTx } from '../store/db.js';
import { deleteDeadLetter, selectDeadLetters } from '../store/dead-letter-list.js';
import { spending } from '../wait-budget.js';

export interface ReplaySelection {
  id?: string;
  installId?: string;
  tenantId?: string;
  /**
   * The caller's entry, written with each replayed dead letter's removal in its tenant's log;
   * a null `target` names the dead letter (`dead-letter/<id>`). A dead letter of no known
   * install has no tenant, and so no entry.
   */
  audit?: AuditStamp;
}

export async function replayDeadLetters(
  o: { db: pg.Pool; js: JetStreamClient; names: Names; seal: Seal | null },
  sel: ReplaySelection,
): Promise<{ replayed: number; skipped: number }> {
  let replayed = 0;
  let skipped = 0;
  for (const dl of await selectDeadLetters(o.db, sel)) {
    // A deployment sharing the database under another SERVICE_NAMESPACE replays its own.
    if (dl.stream !== o.names.ingestStream || !dl.subject.startsWith(`${o.names.ns}.ingest.`)) {
      skipped++;
      continue;
    }
    try {
      // INTERFACE §9.4: sealed like every ingest message, or the shard consumer refuses it.
      // INTERFACE §9.3: on the replay route, within what the request has left of its 2 s.
      await spending(
        (timeout) =>
          o.js.publish(dl.subject, dl.payload, {
            msgID: `replay:${o.names.ns}:${dl.id}`,
            ...(Number.isFinite(timeout) ? { timeout } : {}),
            ...(o.seal ? { headers: o.seal.headers(dl.payload) } : {}),
          }),
        Infinity,
        'JetStream',
      );
    } catch (err) {
      throw new Unavailable('JetStream did not acknowledge the replayed event; retry', { cause: err });
    }
    const { audit } = sel;
    const tenantId = dl.tenant_id;
    const removed =
      audit && tenantId
        ? await withTx(o.db, async (tx) => {
            const gone = await deleteDeadLetter(tx, dl.id);
            if (gone) await recordAuditOk(tx, tenantId, { ...audit, target: audit.target ?? `dead-letter/${dl.id}` });
            return gone;
          })
        : await deleteDeadLetter(o.db, dl.id);
    if (removed) replayed++;
  }
  return { replayed, skipped };
}
