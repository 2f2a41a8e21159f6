/**
 * The contract of the chat-backfill actor (chat-backfill.ts): its kind, key and messages, kept apart
 * from the actor so that callers depend on the contract only.
 */
import type { KeyOf } from '../../runtime/ports.js';

export const CHAT_BACKFILL_KIND = 'chat-backfill';

/** `resume` starts or continues the walk; `tick` (its own ticker) makes one step. */
export type ChatBackfillProtocol = {
  resume: { msg: object; answer: { ok: true } };
  tick: { msg: object; answer: Record<string, unknown> };
};

export function chatBackfillKey(installId: string): KeyOf<ChatBackfillProtocol> {
  return { kind: CHAT_BACKFILL_KIND, id: [installId] };
}
