/**
 * A verified GitHub webhook delivery as the ingest events of its installs (INTERFACE §4):
 * kind `{X-GitHub-Event}.{payload.action}` (or the bare event name when there is no
 * action, e.g. `push`), id `{X-GitHub-Delivery}`, payload GitHub's JSON as delivered.
 */
import type { IngestEvent } from '../../runtime/ports.js';
import type { Install } from '../../store/installs.js';

export interface WebhookDelivery {
  /** `X-GitHub-Event`. */
  event: string;
  /** `X-GitHub-Delivery`: the same for a redelivery, so it is the dedup id. */
  deliveryId: string;
  payload: Record<string, unknown>;
  /** `payload`'s JSON text as delivered, when known (see `IngestEvent.payloadJson`). */
  json?: Uint8Array;
}

export function ingestKind(event: string, payload: Record<string, unknown>): string {
  const action = payload.action;
  return typeof action === 'string' && action.length > 0 ? `${event}.${action}` : event;
}

/** The installation a delivery belongs to, or null (pings of a repository hook, for one). */
export function installationIdOf(payload: Record<string, unknown>): number | null {
  const id = (payload.installation as { id?: unknown } | undefined)?.id;
  return typeof id === 'number' && Number.isSafeInteger(id) && id > 0 ? id : null;
}

/** `v` as an ISO 8601 UTC timestamp, or null when it is not a time (parsed once: hot path). */
function isoOf(v: unknown): string | null {
  if (typeof v !== 'string') return null;
  const ms = Date.parse(v);
  return Number.isNaN(ms) ? null : new Date(ms).toISOString();
}

/** When it happened upstream: the touched object's `updated_at`, a push's head commit time. */
export function occurredAtOf(payload: Record<string, unknown>): string | null {
  for (const field of ['comment', 'review', 'pull_request', 'issue', 'installation']) {
    const o = payload[field] as { updated_at?: unknown; submitted_at?: unknown } | undefined;
    const at = isoOf(o?.updated_at) ?? isoOf(o?.submitted_at);
    if (at !== null) return at;
  }
  return isoOf((payload.head_commit as { timestamp?: unknown } | null | undefined)?.timestamp);
}

export function toIngestEvent(d: WebhookDelivery, install: Pick<Install, 'install_id' | 'tenant_id'>): IngestEvent {
  return {
    installId: install.install_id,
    tenantId: install.tenant_id,
    connectorId: 'codehost',
    id: d.deliveryId,
    kind: ingestKind(d.event, d.payload),
    occurredAt: occurredAtOf(d.payload),
    payload: d.payload,
    ...(d.json === undefined ? {} : { payloadJson: d.json }),
  };
}
