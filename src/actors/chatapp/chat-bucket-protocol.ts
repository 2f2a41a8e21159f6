/**
 * The contract of the chat-bucket actor (chat-bucket.ts): its kind, key and messages, kept apart
 * from the actor so that callers depend on the contract only.
 */
import type { KeyOf } from '../../runtime/ports.js';
import type { Permit } from '../../connectors/chatapp/emit.js';

export const CHAT_BUCKET_KIND = 'chat-bucket';

/** The channel bucket's messages and answers (INTERFACE §8.4, §8.26). */
export type ChatBucketProtocol = {
  /** `takeId`: a resent take (INTERFACE §8.24) answers its first permit instead of charging again. */
  take: { msg: { maxWaitMs?: number; takeId?: string }; answer: Permit };
  /** The write of `takeId` never went out: the channel gets its token back. */
  refund: { msg: { takeId?: string }; answer: { refunded: boolean } };
  hold: { msg: { retryAfterMs: number }; answer: { ok: true } };
};

export function chatBucketKey(teamId: string, channelId: string): KeyOf<ChatBucketProtocol> {
  return { kind: CHAT_BUCKET_KIND, id: [teamId, channelId] };
}
