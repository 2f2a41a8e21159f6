/**
 * The chat events the connector makes of Slack's messages and events (INTERFACE §4): their
 * kinds and the shape of one before it is published (normalize-event.ts, normalize-names.ts).
 */
export type ChannelType = 'channel' | 'group' | 'im' | 'mpim';
type ChatKind =
  | 'message'
  | 'message_changed'
  | 'message_deleted'
  | 'reaction_added'
  | 'reaction_removed'
  | 'channel_info'
  | 'user_info';

/** An event ready to publish, minus the install's coordinates. */
export interface ChatEventDraft {
  id: string;
  kind: ChatKind;
  occurredAt: string | null;
  payload: Record<string, unknown>;
}
