/**
 * The contract of the chat-workspace-bucket actor (chat-workspace-bucket.ts): its kind, key and messages, kept apart
 * from the actor so that callers depend on the contract only.
 */
import type { KeyOf } from '../../runtime/ports.js';

export const CHAT_WORKSPACE_KIND = 'chat-workspace';

export type WorkspaceReservation = { ok: true; waitMs: number } | { ok: false; retryAfterMs: number };

/** The workspace bucket's one message (spec §8: charged only after the channel bucket allowed). */
export type ChatWorkspaceProtocol = {
  /** `reserveId`: a resent reservation is answered again, not charged twice. */
  reserve: { msg: { maxWaitMs?: number; reserveId?: string }; answer: WorkspaceReservation };
};

export function chatWorkspaceKey(teamId: string): KeyOf<ChatWorkspaceProtocol> {
  return { kind: CHAT_WORKSPACE_KIND, id: [teamId] };
}
