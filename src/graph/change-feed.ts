/**
 * The public change feed (INTERFACE §7): after each committed graph change, a small notice
 * `{"node_id","kind","op"}` on `<ns>.graph.<tenant_id>.changed`. Core NATS publish: it is
 * a notification for live subscribers, not a durable log (the graph itself is the record).
 */
import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from '../log.js';
import type { Names } from '../runtime/names.js';
import type { Install } from '../store/installs.js';
import type { GraphChange } from './change.js';

export interface ChangeFeed {
  publish(install: Pick<Install, 'tenant_id'>, changes: GraphChange[]): void;
}

export function createChangeFeed(nc: NatsConnection, names: Names, log: Logger): ChangeFeed {
  return {
    publish(install: Pick<Install, 'tenant_id'>, changes: GraphChange[]): void {
      const subject = names.graphChanged(install.tenant_id);
      for (const c of changes) {
        try {
          nc.publish(subject, JSON.stringify({ node_id: c.node_id, kind: c.kind, op: c.op }));
        } catch (err) {
          log.warn({ err, subject }, 'graph change notice not published');
        }
      }
    },
  };
}
