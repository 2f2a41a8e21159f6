/**
 * A per-event handler as the ingest consumer's batch delivery (group commit). Exact while
 * the handler does not throw; a throw fails the whole batch, as a rolled-back transaction
 * would, but what the handler recorded for the batch's earlier events stays recorded.
 */
import type { IngestDeliveryMeta } from '../../src/ingest/settle.js';
import type { IngestEvent } from '../../src/runtime/ports.js';

export function eachEvent(
  fn: (ev: IngestEvent, meta: IngestDeliveryMeta) => Promise<void>,
): (events: IngestEvent[], metas: IngestDeliveryMeta[]) => Promise<void> {
  return async (events, metas) => {
    for (const [i, ev] of events.entries()) await fn(ev, metas[i]!);
  };
}
