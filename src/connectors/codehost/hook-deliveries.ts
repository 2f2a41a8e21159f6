/**
 * GitHub App webhook deliveries, as the App itself (JWT) sees them (INTERFACE §9.4):
 * `GET /app/hook/deliveries` (newest first, `cursor` pagination through the Link header)
 * and `POST /app/hook/deliveries/{delivery_id}/attempts` (ask GitHub to deliver again).
 * Platform calls only: what to redeliver is decided by `reconcile-deliveries.ts`.
 */
import type { Octokit } from '@octokit/rest';

/** The fields of GitHub's delivery summary the reconciliation reads. */
export interface HookDelivery {
  id: number;
  /** The `X-GitHub-Delivery` of the webhook: one guid, whatever the number of attempts. */
  guid: string;
  delivered_at: string;
  redelivery: boolean;
  /** 0 when GitHub could not connect at all. */
  status_code: number;
  event: string;
  installation_id: number | null;
}

/** GitHub's maximum page size for this listing. */
const PAGE_SIZE = 100;

/** Pages of deliveries, newest first; the caller stops iterating once it has seen enough. */
export async function* listHookDeliveries(app: Octokit, signal: AbortSignal): AsyncGenerator<HookDelivery[]> {
  const pages = app.paginate.iterator(app.rest.apps.listWebhookDeliveries, {
    per_page: PAGE_SIZE,
    request: { signal },
  });
  for await (const page of pages) {
    yield page.data.map((d) => ({
      id: d.id,
      guid: d.guid,
      delivered_at: d.delivered_at,
      redelivery: d.redelivery,
      status_code: d.status_code,
      event: d.event,
      installation_id: d.installation_id ?? null,
    }));
  }
}

/** Ask GitHub to send this delivery again (202 Accepted: the attempt happens later). */
export async function requestRedelivery(app: Octokit, deliveryId: number, signal: AbortSignal): Promise<void> {
  await app.rest.apps.redeliverWebhookDelivery({ delivery_id: deliveryId, request: { signal } });
}
