/**
 * The contract of the delivery-reconciler actor (delivery-reconciler.ts): its kind, key and messages, kept apart
 * from the actor so that callers depend on the contract only.
 */
import type { ReconcileOutcome } from '../../connectors/codehost/reconcile-deliveries.js';
import type { KeyOf } from '../../runtime/ports.js';

export const CODEHOST_RECONCILE_KIND = 'codehost-reconcile';

/** `resume` arms the next pass when none is pending; `tick` runs one pass and arms the next. */
export type CodehostReconcileProtocol = {
  resume: { msg: object; answer: { ok: true } };
  tick: { msg: object; answer: { ok: boolean } & Partial<ReconcileOutcome> };
};

export function codehostReconcileKey(appId: number): KeyOf<CodehostReconcileProtocol> {
  return { kind: CODEHOST_RECONCILE_KIND, id: [String(appId)] };
}
