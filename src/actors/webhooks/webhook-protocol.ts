/**
 * The contract of a tenant webhook's delivery actor (webhook-actor.ts): its kind, key and messages,
 * kept apart from the actor so that callers depend on the contract only.
 */
import type { KeyOf } from '../../runtime/ports.js';

export const WEBHOOK_KIND = 'webhook';

export type WebhookProtocol = {
  /** Start delivering if nothing is scheduled (created, enabled, shard acquired). */
  resume: { msg: object; answer: { ok: true } };
  /** One step: a read, or one attempt of the pending message. */
  tick: { msg: object; answer: { ok: boolean } };
};

export function webhookKey(webhookId: string): KeyOf<WebhookProtocol> {
  return { kind: WEBHOOK_KIND, id: [webhookId] };
}
