/**
 * What the ingest path's spans say of an event (INTERFACE §10.7): its ids and kind, never
 * its payload.
 */
import type { IngestEvent } from '../runtime/ports.js';

export function eventAttributes(ev: IngestEvent): Record<string, string> {
  return {
    'connector.id': ev.connectorId,
    'install.id': ev.installId,
    'tenant.id': ev.tenantId,
    'event.id': ev.id,
    'event.kind': ev.kind,
    'messaging.system': 'nats',
  };
}
