import { describe, expect, it } from 'vitest';
import { fromSlackEvent, messageEvent, tsToIso } from '../../src/connectors/chatapp/normalize-event.js';

describe('chat event normalisation (INTERFACE §4, §8.2)', () => {
  it('turns a channel message into message:{channel}:{ts} with the contract payload', () => {
    const ev = fromSlackEvent({
      type: 'message',
      channel: 'C1',
      channel_type: 'channel',
      user: 'U1',
      text: 'hi',
      ts: '1700000000.000100',
      event_ts: '1700000000.000100',
      team: 'T1',
      blocks: [{ type: 'rich_text' }],
    });
    expect(ev).toEqual({
      id: 'message:C1:1700000000.000100',
      kind: 'message',
      occurredAt: '2023-11-14T22:13:20.000Z',
      payload: { channel_id: 'C1', channel_type: 'channel', ts: '1700000000.000100', user: 'U1', text: 'hi' },
    });
  });

  it("carries a message's reactions as [{name, users}] on live and history messages (INTERFACE §9.5)", () => {
    const raw = {
      type: 'message',
      ts: '1700000003.000100',
      user: 'U1',
      text: 'ship it',
      reactions: [
        { name: 'tada', users: ['U2', 'U3'], count: 2 },
        { name: 'eyes', users: ['U2'], count: 1 },
        { name: '', users: ['U9'] },
        { count: 4 },
      ],
    };
    const history = messageEvent('C1', 'channel', raw)!;
    expect(history.payload.reactions).toEqual([
      { name: 'tada', users: ['U2', 'U3'] },
      { name: 'eyes', users: ['U2'] },
    ]);
    const live = fromSlackEvent({ ...raw, channel: 'C1', channel_type: 'channel', event_ts: raw.ts })!;
    expect(live.payload.reactions).toEqual(history.payload.reactions);
    expect(messageEvent('C1', 'channel', { ...raw, reactions: [] })!.payload).not.toHaveProperty('reactions');
  });

  it('keeps thread_ts, bot_id, app_id, subtype, edits and file references (never bytes)', () => {
    const ev = fromSlackEvent({
      type: 'message',
      subtype: 'file_share',
      channel: 'G1',
      channel_type: 'group',
      user: 'U1',
      bot_id: 'B1',
      app_id: 'A1',
      text: '',
      ts: '1700000001.000200',
      thread_ts: '1700000000.000100',
      edited: { user: 'U1', ts: '1700000002.000000' },
      files: [
        {
          id: 'F1',
          name: 'a.png',
          mimetype: 'image/png',
          size: 10,
          permalink: 'https://x/F1',
          url_private: 'https://files/F1',
        },
        { id: 'F2', mode: 'tombstone' },
        { nope: true },
      ],
    })!;
    expect(ev.payload).toEqual({
      channel_id: 'G1',
      channel_type: 'group',
      ts: '1700000001.000200',
      thread_ts: '1700000000.000100',
      user: 'U1',
      bot_id: 'B1',
      app_id: 'A1',
      subtype: 'file_share',
      text: '',
      edited: { ts: '1700000002.000000' },
      files: [
        { file_id: 'F1', name: 'a.png', mimetype: 'image/png', size: 10, permalink: 'https://x/F1' },
        { file_id: 'F2', name: null, mimetype: null, size: null, permalink: null },
      ],
    });
  });

  it('names edits and deletes by the original ts and the event ts', () => {
    const changed = fromSlackEvent({
      type: 'message',
      subtype: 'message_changed',
      hidden: true,
      channel: 'D1',
      channel_type: 'im',
      ts: '1700000009.000000',
      event_ts: '1700000009.000000',
      message: {
        type: 'message',
        user: 'U1',
        text: 'new',
        ts: '1700000001.000001',
        edited: { user: 'U1', ts: '1700000009.000000' },
      },
      previous_message: { type: 'message', user: 'U1', text: 'old', ts: '1700000001.000001' },
    });
    expect(changed).toEqual({
      id: 'message_changed:D1:1700000001.000001:1700000009.000000',
      kind: 'message_changed',
      occurredAt: '2023-11-14T22:13:29.000Z',
      payload: {
        channel_id: 'D1',
        channel_type: 'im',
        ts: '1700000001.000001',
        event_ts: '1700000009.000000',
        text: 'new',
        user: 'U1',
      },
    });
    const deleted = fromSlackEvent({
      type: 'message',
      subtype: 'message_deleted',
      hidden: true,
      channel: 'C1',
      channel_type: 'mpim',
      deleted_ts: '1700000001.000001',
      ts: '1700000010.000000',
      event_ts: '1700000010.000000',
    });
    expect(deleted).toMatchObject({
      id: 'message_deleted:C1:1700000001.000001:1700000010.000000',
      kind: 'message_deleted',
      payload: { channel_id: 'C1', channel_type: 'mpim', ts: '1700000001.000001', event_ts: '1700000010.000000' },
    });
  });

  it('names reactions by channel, item ts, user, name and event ts', () => {
    const r = fromSlackEvent({
      type: 'reaction_removed',
      user: 'U2',
      reaction: 'thumbsup',
      item: { type: 'message', channel: 'C1', ts: '1.000001' },
      event_ts: '2.000002',
    });
    expect(r).toEqual({
      id: 'reaction_removed:C1:1.000001:U2:thumbsup:2.000002',
      kind: 'reaction_removed',
      occurredAt: '1970-01-01T00:00:02.000Z',
      payload: { channel_id: 'C1', item_ts: '1.000001', user: 'U2', name: 'thumbsup', event_ts: '2.000002' },
    });
    // Reactions to files (not messages) are not part of the contract.
    expect(
      fromSlackEvent({
        type: 'reaction_added',
        user: 'U2',
        reaction: 'x',
        item: { type: 'file', file: 'F1' },
        event_ts: '2.0',
      }),
    ).toBeNull();
  });

  it('drops hidden bookkeeping subtypes, unknown types, unknown channel types and malformed input', () => {
    expect(
      fromSlackEvent({
        type: 'message',
        subtype: 'message_replied',
        hidden: true,
        channel: 'C1',
        channel_type: 'channel',
        ts: '1.1',
        message: {},
      }),
    ).toBeNull();
    expect(fromSlackEvent({ type: 'app_mention', channel: 'C1', ts: '1.1' })).toBeNull();
    expect(
      fromSlackEvent({ type: 'message', channel: 'C1', channel_type: 'app_home', ts: '1.1', text: 'x' }),
    ).toBeNull();
    expect(fromSlackEvent({ type: 'message', channel: 'C1', channel_type: 'channel', ts: 'yesterday' })).toBeNull();
    expect(fromSlackEvent(null)).toBeNull();
    expect(messageEvent('C1', 'channel', { ts: '1.1', hidden: true })).toBeNull();
  });

  it('converts Slack timestamps to ISO 8601 UTC', () => {
    expect(tsToIso('1700000000.123456')).toBe('2023-11-14T22:13:20.123Z');
    expect(tsToIso('nope')).toBeNull();
  });
});
