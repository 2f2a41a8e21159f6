import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { describeNames, names, token } from '../../src/runtime/names.js';

/** The README's NATS table is the generated one (STYLE.md: one file names every subject). */
export function namesTable(): string {
  return describeNames()
    .map((r) => `| \`${r.name}\` | ${r.what} | \`${r.watch}\` |`)
    .join('\n');
}

describe('NATS names', () => {
  it('README lists every subject, stream, consumer and bucket', () => {
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
    const block = readme.split('<!-- names:start -->')[1]?.split('<!-- names:end -->')[0] ?? '';
    expect(block).toContain(namesTable());
  });

  it('ids can never widen a subscription', () => {
    const n = names('ns');
    for (const bad of ['a.b', '*', '>', 'a b', 'x.>', '']) {
      const t = token(bad);
      expect(t).not.toMatch(/[.*> ]/);
      expect(n.actorSubject(1, { kind: 'install', id: [bad] }).split('.')).toHaveLength(5);
    }
    expect(token('abc-123_X')).toBe('abc-123_X');
    expect(token('=x')).not.toBe('=x');
  });
});
