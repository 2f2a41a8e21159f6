/**
 * After each committed graph change (INTERFACE §7), a small notice `{"node_id","kind","op"}`
 * on `<ns>.graph.<tenant_id>.changed`; and once per commit that advanced the tenant's change
 * feed (§10.1), `{"seq"}` on `<ns>.feed.<tenant_id>.advanced`, which wakes the feed's readers
 * (runtime/feed-notices.ts). Core NATS publishes: notifications for live subscribers, not a
 * durable log (the graph and its change log are the record).
 */
import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from '../log.js';
import { publishFeedAdvanced } from '../runtime/feed-notices.js';
import type { Names } from '../runtime/names.js';
import type { Install } from '../store/installs.js';
import type { GraphChange } from './change.js';

export interface ChangeFeed {
  /** After a commit: the notices of `changes`, and of the tenant's feed head `feedSeq` when it advanced. */
  publish(install: Pick<Install, 'tenant_id'>, changes: GraphChange[], feedSeq?: number | null): void;
}

export function createChangeFeed(nc: NatsConnection, names: Names, log: Logger): ChangeFeed {
  return {
    publish(install: Pick<Install, 'tenant_id'>, changes: GraphChange[], feedSeq: number | null = null): void {
      const subject = names.graphChanged(install.tenant_id);
      for (const c of changes) {
        try {
          nc.publish(subject, JSON.stringify({ node_id: c.node_id, kind: c.kind, op: c.op }));
        } catch (err) {
          log.warn({ err, subject }, 'graph change notice not published');
        }
      }
      if (feedSeq !== null) publishFeedAdvanced(nc, names, install.tenant_id, feedSeq, log);
    },
  };
}
