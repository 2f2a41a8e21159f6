/**
 * A verified GitHub webhook delivery as the ingest events of its installs (INTERFACE §4):
 * kind `{X-GitHub-Event}.{payload.action}` (or the bare event name when there is no
 * action, e.g. `push`), id `{X-GitHub-Delivery}`, payload GitHub's JSON as delivered.
 */
import type { IngestEvent } from '../../runtime/ingest-stream.js';
import type { Install } from '../../store/installs.js';

export interface WebhookDelivery {
  /** `X-GitHub-Event`. */
  event: string;
  /** `X-GitHub-Delivery`: the same for a redelivery, so it is the dedup id. */
  deliveryId: string;
  payload: Record<string, unknown>;
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

const isTime = (v: unknown): v is string => typeof v === 'string' && !Number.isNaN(Date.parse(v));

/** When it happened upstream: the touched object's `updated_at`, a push's head commit time. */
export function occurredAtOf(payload: Record<string, unknown>): string | null {
  for (const field of ['comment', 'review', 'pull_request', 'issue', 'installation']) {
    const o = payload[field] as { updated_at?: unknown; submitted_at?: unknown } | undefined;
    if (isTime(o?.updated_at)) return new Date(o.updated_at).toISOString();
    if (isTime(o?.submitted_at)) return new Date(o.submitted_at).toISOString();
  }
  const head = (payload.head_commit as { timestamp?: unknown } | null | undefined)?.timestamp;
  return isTime(head) ? new Date(head).toISOString() : null;
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
  };
}
