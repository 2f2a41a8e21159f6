/**
 * The Events API side of the fake Slack: the `event_callback` envelope, Slack's request
 * signing (and deliberately bad signatures), and builders for the events Slack sends.
 */
import { createHmac, randomBytes } from 'node:crypto';
import {
  messageObject,
  type FakeChannel,
  type FakeMessage,
  type FakeSlackWorld,
  type FakeTeam,
} from './slack-model.js';

export type Signing = 'valid' | 'forged' | 'stale' | 'future' | 'missing';

export function eventEnvelope(
  fake: FakeSlackWorld,
  teamId: string,
  event: Record<string, unknown>,
  eventId?: string,
): Record<string, unknown> {
  const team = fake.teams.get(teamId);
  return {
    token: 'deprecated-verification-token',
    team_id: teamId,
    api_app_id: fake.appId,
    event,
    type: 'event_callback',
    event_id: eventId ?? `Ev${randomBytes(6).toString('hex').toUpperCase()}`,
    event_time: Math.floor(Date.now() / 1000),
    authorizations: [
      {
        enterprise_id: null,
        team_id: teamId,
        user_id: team?.botUserId ?? 'UBOT',
        is_bot: true,
        is_enterprise_install: false,
      },
    ],
    is_ext_shared_channel: false,
  };
}

export function signedHeaders(secret: string, body: string, signing: Signing): Record<string, string> {
  const now = Math.floor(Date.now() / 1000);
  const ts = signing === 'stale' ? now - 6 * 60 : signing === 'future' ? now + 6 * 60 : now;
  const key = signing === 'forged' ? `${secret}-not` : secret;
  const sig = `v0=${createHmac('sha256', key).update(`v0:${ts}:${body}`).digest('hex')}`;
  const h: Record<string, string> = { 'content-type': 'application/json' };
  if (signing !== 'missing') {
    h['x-slack-request-timestamp'] = String(ts);
    h['x-slack-signature'] = sig;
  }
  return h;
}

/** A `message` event as Slack sends it for `msg` in `ch`. */
export function messageEvent(team: FakeTeam, ch: FakeChannel, msg: FakeMessage): Record<string, unknown> {
  return {
    ...messageObject(msg, msg.thread_ts),
    channel: ch.id,
    channel_type: ch.type,
    event_ts: msg.ts,
    team: team.id,
    ...(msg.thread_ts ? { thread_ts: msg.thread_ts } : {}),
  };
}

export function messageChangedEvent(
  ch: FakeChannel,
  original: FakeMessage,
  newText: string,
  eventTs: string,
): Record<string, unknown> {
  return {
    type: 'message',
    subtype: 'message_changed',
    hidden: true,
    channel: ch.id,
    channel_type: ch.type,
    ts: eventTs,
    event_ts: eventTs,
    message: { ...messageObject(original), text: newText, edited: { user: original.user, ts: eventTs } },
    previous_message: messageObject(original),
  };
}

export function messageDeletedEvent(ch: FakeChannel, original: FakeMessage, eventTs: string): Record<string, unknown> {
  return {
    type: 'message',
    subtype: 'message_deleted',
    hidden: true,
    channel: ch.id,
    channel_type: ch.type,
    deleted_ts: original.ts,
    ts: eventTs,
    event_ts: eventTs,
    previous_message: messageObject(original),
  };
}

export function reactionEvent(
  type: 'reaction_added' | 'reaction_removed',
  ch: FakeChannel,
  itemTs: string,
  user: string,
  name: string,
  eventTs: string,
  itemUser?: string,
): Record<string, unknown> {
  return {
    type,
    user,
    reaction: name,
    item: { type: 'message', channel: ch.id, ts: itemTs },
    event_ts: eventTs,
    ...(itemUser ? { item_user: itemUser } : {}),
  };
}
