/**
 * The contract of the chat-names actor (chat-names.ts): its kind, key and messages, kept apart
 * from the actor so that callers depend on the contract only.
 */
import type { KeyOf } from '../../runtime/ports.js';

export const CHAT_NAMES_KIND = 'chat-names';

/** `want` queues the ids an event named; `tick` (its own ticker) makes one lookup. */
export type ChatNamesProtocol = {
  want: { msg: { users?: unknown; channels?: unknown }; answer: { queued: number } };
  tick: { msg: object; answer: Record<string, unknown> };
};

export function chatNamesKey(installId: string): KeyOf<ChatNamesProtocol> {
  return { kind: CHAT_NAMES_KIND, id: [installId] };
}
