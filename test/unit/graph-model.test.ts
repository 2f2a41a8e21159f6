/** Pure pieces of the graph: versions, per-prop merge, search text, node actions, cursors. */
import { describe, expect, it } from 'vitest';
import { mergeProps } from '../../src/graph/merge-props.js';
import { emitForAction, NodeAction } from '../../src/graph/node-actions.js';
import { decodeNodeCursor, encodeNodeCursor } from '../../src/graph/queries.js';
import { SEARCH_TEXT_MAX, searchText } from '../../src/graph/search-text.js';
import { IDENTITY_VERSION, slackTsMicros, timeMicros, versionAt } from '../../src/graph/version.js';

describe('versions', () => {
  it('parses Slack timestamps exactly, to the microsecond', () => {
    expect(slackTsMicros('1700000000.000100')).toBe(1_700_000_000_000_100n);
    expect(slackTsMicros('1700000000.0001')).toBe(1_700_000_000_000_100n);
    expect(slackTsMicros('1700000000')).toBe(1_700_000_000_000_000n);
    expect(slackTsMicros('1700000000.123456789')).toBe(1_700_000_000_123_456n);
    // 2^53 µs would lose the last digit as a double.
    expect(slackTsMicros('9999999999.999999')).toBe(9_999_999_999_999_999n);
    for (const bad of ['', 'abc', '1.2.3', '-1.5', '1e9', '1.1234567890', null, 17])
      expect(slackTsMicros(bad)).toBeNull();
  });

  it('parses ISO strings and epoch seconds', () => {
    expect(timeMicros('2019-05-15T15:20:33Z')).toBe(BigInt(Date.parse('2019-05-15T15:20:33Z')) * 1000n);
    expect(timeMicros(1557933657)).toBe(1_557_933_657_000_000n);
    expect(timeMicros('not a date')).toBeNull();
    expect(timeMicros(undefined)).toBeNull();
  });

  it('orders by time, then rank, then tie-break, as plain strings', () => {
    const a = versionAt(5n, 0, 'z');
    const b = versionAt(10n, 0, 'a');
    expect(a < b).toBe(true);
    expect(versionAt(10n, 0, 'zzz') < versionAt(10n, 1, 'a')).toBe(true);
    expect(versionAt(10n, 0, 'a') < versionAt(10n, 0, 'b')).toBe(true);
    // Wider numbers must not sort before narrower ones.
    expect(versionAt(9n, 0, '') < versionAt(10n, 0, '')).toBe(true);
    expect(IDENTITY_VERSION <= versionAt(0n, 0, 'x')).toBe(true);
  });
});

describe('mergeProps', () => {
  const v1 = versionAt(1n, 0, 'e1');
  const v2 = versionAt(2n, 0, 'e2');

  it('takes newer writes and keeps newer stored values whatever the order', () => {
    const a = mergeProps({}, {}, { text: 'old', user: 'U1' }, v1);
    const ab = mergeProps(a.props, a.versions, { text: 'new' }, v2);
    const b = mergeProps({}, {}, { text: 'new' }, v2);
    const ba = mergeProps(b.props, b.versions, { text: 'old', user: 'U1' }, v1);
    expect(ab.props).toEqual({ text: 'new', user: 'U1' });
    expect(ba.props).toEqual(ab.props);
    expect(ba.versions).toEqual(ab.versions);
    expect(ba.changed).toBe(true); // user was new
  });

  it('is a no-op on replay, and records a newer version of an equal value', () => {
    const a = mergeProps({}, {}, { text: 'x' }, v1);
    const again = mergeProps(a.props, a.versions, { text: 'x' }, v1);
    expect(again).toMatchObject({ changed: false, versionsChanged: false });
    const newer = mergeProps(a.props, a.versions, { text: 'x' }, v2);
    expect(newer).toMatchObject({ changed: false, versionsChanged: true });
    // ... so a late, older edit cannot win over it.
    const late = mergeProps(newer.props, newer.versions, { text: 'stale' }, versionAt(1n, 5, 'e9'));
    expect(late.props.text).toBe('x');
  });

  it('skips undefined, keeps null as a value, compares structurally', () => {
    const a = mergeProps({}, {}, { files: [{ name: 'a' }], gone: undefined }, v1);
    expect(a.props).toEqual({ files: [{ name: 'a' }] });
    const same = mergeProps(a.props, a.versions, { files: [{ name: 'a' }] }, v1);
    expect(same.changed).toBe(false);
    const cleared = mergeProps(a.props, a.versions, { files: null }, v2);
    expect(cleared.props).toEqual({ files: null });
    expect(cleared.changed).toBe(true);
  });
});

describe('searchText', () => {
  it('joins the text props, labels and file names, never the diff', () => {
    const t = searchText({
      title: 'Fix login',
      body: 'see #2',
      labels: ['bug'],
      files: [{ name: 'a.png' }],
      diff: 'SECRETDIFF',
      number: 7,
    });
    expect(t.split('\n')).toEqual(['Fix login', 'see #2', 'bug', 'a.png']);
  });

  it('caps the text without leaving half a surrogate pair', () => {
    const t = searchText({ text: 'a'.repeat(SEARCH_TEXT_MAX - 1) + '😀😀' });
    expect(t.length).toBe(SEARCH_TEXT_MAX);
    expect(t.endsWith('\ufffd')).toBe(true);
  });
});

describe('node actions (INTERFACE §3 mapping)', () => {
  const msg = (props: Record<string, unknown>) => ({
    kind: 'chat.message',
    external_id: 'T1:C1:1700000000.000100',
    props,
  });
  const pr = {
    kind: 'codehost.pull_request',
    external_id: 'octo/repo#12',
    props: { repo_full_name: 'octo/repo', number: 12 },
  };

  it('replies to a chat message in its thread and reacts to it', () => {
    expect(emitForAction(msg({ channel_id: 'C1', ts: '1700000000.000100' }), { action: 'reply', text: 'hi' })).toEqual({
      kind: 'chatapp.message',
      body: { channel_id: 'C1', text: 'hi', thread_ts: '1700000000.000100' },
    });
    // A reply inside a thread answers in the same thread (Slack threads are one level deep).
    expect(
      emitForAction(msg({ channel_id: 'C1', ts: '1700000000.000200', thread_ts: '1700000000.000100' }), {
        action: 'reply',
        text: 'hi',
      }).body,
    ).toMatchObject({
      thread_ts: '1700000000.000100',
    });
    expect(emitForAction(msg({}), { action: 'react', name: 'eyes' })).toEqual({
      kind: 'chatapp.reaction',
      body: { channel_id: 'C1', timestamp: '1700000000.000100', name: 'eyes' },
    });
  });

  it('comments on and labels pull requests and issues', () => {
    expect(emitForAction(pr, { action: 'reply', text: 'LGTM' })).toEqual({
      kind: 'codehost.issue_comment',
      body: { repo_full_name: 'octo/repo', issue_number: 12, body: 'LGTM' },
    });
    const issue = { kind: 'codehost.issue', external_id: 'octo/my#repo#3', props: {} };
    expect(emitForAction(issue, { action: 'label', labels: ['bug'] })).toEqual({
      kind: 'codehost.label',
      body: { repo_full_name: 'octo/my#repo', issue_number: 3, labels: ['bug'] },
    });
  });

  it('refuses actions that do not fit the kind with bad_request', () => {
    const cases: Array<[{ kind: string; external_id: string; props: Record<string, unknown> }, NodeAction]> = [
      [msg({}), { action: 'label', labels: ['x'] }],
      [pr, { action: 'react', name: 'eyes' }],
      [
        { kind: 'chat.channel', external_id: 'T1:C1', props: {} },
        { action: 'reply', text: 'x' },
      ],
      [
        { kind: 'codehost.comment', external_id: '5', props: {} },
        { action: 'reply', text: 'x' },
      ],
    ];
    for (const [node, action] of cases)
      expect(() => emitForAction(node, action)).toThrow(expect.objectContaining({ code: 'bad_request' }));
  });

  it('validates action bodies strictly', () => {
    expect(NodeAction.safeParse({ action: 'reply', text: '' }).success).toBe(false);
    expect(NodeAction.safeParse({ action: 'reply', text: 'x', extra: 1 }).success).toBe(false);
    expect(NodeAction.safeParse({ action: 'label', labels: [] }).success).toBe(false);
    expect(NodeAction.safeParse({ action: 'delete' }).success).toBe(false);
    expect(NodeAction.safeParse({ action: 'react', name: 'tada' }).success).toBe(true);
  });
});

describe('node cursors', () => {
  it('round-trips and refuses anything else with bad_request', () => {
    expect(decodeNodeCursor(encodeNodeCursor('42'))).toBe('42');
    const forged = [
      '',
      '!!',
      Buffer.from('["n","0"]').toString('base64url'),
      Buffer.from('["e","5"]').toString('base64url'),
      Buffer.from('["n","99999999999999999999"]').toString('base64url'),
      Buffer.from('["n",5]').toString('base64url'),
      Buffer.from('nope').toString('base64url'),
    ];
    for (const c of forged) expect(() => decodeNodeCursor(c)).toThrow(expect.objectContaining({ code: 'bad_request' }));
  });
});
