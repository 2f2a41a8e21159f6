/** unit: slash replies (spec §4.4, INTERFACE §8.8): sentinel, help inline, failures, truncation by code points. */
import { describe, expect, it } from 'vitest';
import {
  REPLY_MAX_CODE_POINTS,
  TRUNCATION_NOTE,
  codePointLength,
  renderReply,
  truncateReply,
} from '../../src/connectors/codehost/slash/render-reply.js';

const SENTINEL = '<!-- service:slash-reply -->';
const isWellFormed = (s: string) => !/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(s);

describe('unit: slash reply rendering', () => {
  it('starts every reply with the sentinel and renders help without the daemon', () => {
    const help = renderReply({ type: 'help' }, 77);
    expect(help.startsWith(`${SENTINEL}\n<!-- service:slash-reply-to:77 -->\n`)).toBe(true);
    for (const verb of ['explain', 'impact', 'slice', 'query', 'help']) expect(help).toContain(`/service ${verb}`);
    expect(renderReply({ type: 'help', unknownWord: 'deploy' })).toContain('Unknown command `deploy`');
  });

  it('a failure says plainly what failed, under the sentinel', () => {
    const r = renderReply({
      type: 'failure',
      command: { verb: 'explain', argument: 'Foo' },
      what: 'the indexer daemon did not answer within 30 s',
    });
    expect(r).toBe(
      `${SENTINEL}\n**\`/service explain\`** \`Foo\`\n\nThis command could not be answered: the indexer daemon did not answer within 30 s.`,
    );
  });

  it('quotes an argument with backticks safely and defuses a PR-summary sentinel in daemon text', () => {
    const r = renderReply({
      type: 'answer',
      command: { verb: 'explain', argument: 'a`b' },
      text: 'x <!-- service:pr-summary --> y',
    });
    expect(r).toContain('``a`b``');
    expect(r).not.toContain('<!-- service:pr-summary -->');
  });

  it('leaves a body of exactly the limit alone, even when its UTF-16 length is twice that', () => {
    const body = SENTINEL + 'a'.repeat(REPLY_MAX_CODE_POINTS - SENTINEL.length);
    expect(truncateReply(body)).toBe(body);
    const emoji = SENTINEL + '😀'.repeat(REPLY_MAX_CODE_POINTS - SENTINEL.length);
    expect(emoji.length).toBeGreaterThan(REPLY_MAX_CODE_POINTS);
    expect(truncateReply(emoji)).toBe(emoji);
    expect(truncateReply(`${emoji}x`)).not.toBe(`${emoji}x`);
  });

  for (const [name, unit] of [
    ['emoji (surrogate pairs)', '😀'],
    ['CJK (3 UTF-8 bytes)', '漢'],
    ['mixed', 'a😀é𝄞'],
  ] as const) {
    it(`truncates ${name} text to 60 000 code points, whole body, never splitting a pair, with a visible note`, () => {
      const text = unit.repeat(70_000);
      const r = renderReply({ type: 'answer', command: { verb: 'query', argument: 'q' }, text });
      expect(codePointLength(r)).toBeLessThanOrEqual(REPLY_MAX_CODE_POINTS);
      expect(codePointLength(r)).toBeGreaterThan(REPLY_MAX_CODE_POINTS - 100);
      expect(r.startsWith(SENTINEL)).toBe(true);
      expect(r.endsWith(TRUNCATION_NOTE)).toBe(true);
      expect(isWellFormed(r)).toBe(true);
      // UTF-16 length would overshoot for pairs: the count really is by code point.
      if (unit === '😀') expect(r.length).toBeGreaterThan(REPLY_MAX_CODE_POINTS);
    });
  }

  it('cuts at every offset around a surrogate pair without splitting it', () => {
    for (let pad = 0; pad < 4; pad++) {
      const body = 'x'.repeat(pad) + '😀'.repeat(100);
      const r = truncateReply(body, codePointLength(TRUNCATION_NOTE) + 64 + 10);
      expect(isWellFormed(r)).toBe(true);
      expect(codePointLength(r)).toBeLessThanOrEqual(codePointLength(TRUNCATION_NOTE) + 64 + 10);
    }
  });

  it('closes a code block the cut left open, so the note is visible', () => {
    const text = '```ts\n' + 'const x = 1;\n'.repeat(10_000);
    const r = renderReply({ type: 'answer', command: { verb: 'slice', argument: 'a.ts' }, text });
    const kept = r.slice(0, r.length - TRUNCATION_NOTE.length);
    expect(kept.endsWith('\n```')).toBe(true);
    expect(codePointLength(r)).toBeLessThanOrEqual(REPLY_MAX_CODE_POINTS);
  });
});
