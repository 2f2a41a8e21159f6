/** Unit: the PR summary comment body (spec §1, §6.1 rule 1; GitHub's 65 536-character limit). */
import { describe, expect, it } from 'vitest';
import {
  DIFF_MAX_BYTES,
  escapeInline,
  isOversized,
  renderPrSummary,
  type PrFile,
  type PrSummaryInput,
} from '../../src/connectors/codehost/pr-summary-body.js';
import { GITHUB_COMMENT_MAX_CHARS, PR_SUMMARY_SENTINEL } from '../../src/connectors/codehost/sentinels.js';

const file = (name: string, extra: Partial<PrFile> = {}): PrFile => ({
  filename: name,
  status: 'modified',
  additions: 3,
  deletions: 1,
  changes: 4,
  patch: '@@ -1 +1 @@\n-a\n+b',
  ...extra,
});
const input = (extra: Partial<PrSummaryInput> = {}): PrSummaryInput => ({
  title: 'Update the README',
  author: 'Codertocat',
  commits: 2,
  additions: 1234,
  deletions: 5,
  changedFiles: 2,
  headSha: 'ec26c3e57ca3a959ca5aad62de7213c562f8c821',
  files: [file('README.md'), file('docs/a.md', { status: 'added', additions: 10, deletions: 0 })],
  ...extra,
});

describe('renderPrSummary', () => {
  it('starts with the sentinel and says what the PR is and changes', () => {
    const body = renderPrSummary(input());
    expect(body.startsWith(PR_SUMMARY_SENTINEL)).toBe(true);
    expect(body).toContain('**Update the README** by `Codertocat`');
    expect(body).toContain('| 2 | 2 | +1,234 / −5 | `ec26c3e` |');
    expect(body).toContain('| `README.md` | modified | 3 | 1 |');
    expect(body).toContain('| `docs/a.md` | added | 10 | 0 |');
    expect(body).not.toContain('oversized');
    expect(body).not.toContain('more file');
  });

  it('escapes PR text: no markdown break-out, no HTML, no @-mention', () => {
    const body = renderPrSummary(
      input({ title: 'Fix <img src=x> | @octo-org/team *now*\n# heading', files: [file('a|b`c.ts')] }),
    );
    expect(body).toContain('Fix \\<img src=x\\> \\| @\u200bocto-org/team \\*now\\* \\# heading');
    expect(body).not.toMatch(/(^|[^\u200b])@octo/);
    expect(body).toContain("| `a\\|b'c.ts` |");
    expect(escapeInline('a_b')).toBe('a\\_b');
  });

  it('notes an oversized diff: over 1 MB of patches, a file GitHub will not diff, or past the files-list cap', () => {
    const big = 'x'.repeat(DIFF_MAX_BYTES / 2 + 1);
    expect(isOversized(input({ files: [file('a', { patch: big }), file('b', { patch: big })] }))).toBe(true);
    expect(isOversized(input({ files: [file('a', { patch: undefined })] }))).toBe(true);
    expect(
      isOversized(input({ files: [file('logo.png', { patch: undefined, changes: 0, additions: 0, deletions: 0 })] })),
    ).toBe(false);
    expect(isOversized(input({ changedFiles: 3001 }))).toBe(true);
    expect(renderPrSummary(input({ files: [file('a', { patch: undefined })] }))).toContain('This diff is oversized');
  });

  it('lists what one files-list page holds and counts the rest', () => {
    const files = Array.from({ length: 100 }, (_, i) => file(`f${i}.ts`));
    const body = renderPrSummary(input({ files, changedFiles: 250 }));
    expect(body.match(/^\| `f\d+\.ts` \|/gm)).toHaveLength(100);
    expect(body).toContain('…and 150 more files not listed.');
  });

  it('stays within GitHub’s comment limit whatever the names hold', () => {
    const files = Array.from({ length: 100 }, (_, i) => file(`${'very/long/path/'.repeat(60)}${i}.ts`));
    const body = renderPrSummary(input({ title: 'T'.repeat(5_000), files, changedFiles: 100 }));
    expect(body.length).toBeLessThanOrEqual(GITHUB_COMMENT_MAX_CHARS);
    expect(body).toMatch(/…and \d+ more files not listed\./);
    expect(body).toContain('Kept up to date automatically');
  });

  it('says "?" for what the payload did not carry', () => {
    const body = renderPrSummary(
      input({
        author: null,
        commits: null,
        additions: null,
        deletions: null,
        changedFiles: null,
        headSha: null,
        files: [],
      }),
    );
    expect(body).toContain('| ? | ? | +? / −? | ? |');
  });
});
