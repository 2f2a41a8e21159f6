/**
 * The body of the auto-managed PR summary comment (spec §1, §6.1 rule 1): what the PR is
 * (title, author, commits, head), what it changes (files with additions and deletions,
 * from one call to the files list), and a note when the diff is too large to review here.
 * Always within GitHub's comment limit, whatever the titles and file names hold.
 *
 * Text from the PR is escaped: it cannot break the markdown, open HTML, or @-mention
 * (and so notify) anyone.
 */
import { GITHUB_COMMENT_MAX_CHARS, PR_SUMMARY_SENTINEL } from './sentinels.js';

/** One entry of `GET /repos/{owner}/{repo}/pulls/{n}/files`. */
export interface PrFile {
  filename: string;
  status: string;
  additions: number;
  deletions: number;
  changes: number;
  /** Absent when GitHub will not show the file's diff (too large, or binary). */
  patch?: string;
}

export interface PrSummaryInput {
  title: string;
  author: string | null;
  commits: number | null;
  additions: number | null;
  deletions: number | null;
  changedFiles: number | null;
  headSha: string | null;
  files: PrFile[];
}

/** spec §8 / INTERFACE §8.9: a diff over 1,000,000 bytes of UTF-8 is oversized. */
export const DIFF_MAX_BYTES = 1_000_000;
/** GitHub's files list stops at 3000 files. */
const FILES_LIST_CAP = 3000;
/** Room kept under GitHub's limit for the footer and notes. */
const BODY_BUDGET = GITHUB_COMMENT_MAX_CHARS - 4_000;

/** Escapes markdown and HTML, and defuses @-mentions, in one line of PR text. */
export function escapeInline(s: string): string {
  return s
    .replace(/[\r\n]+/g, ' ')
    .replace(/[\\`*_{}[\]<>|~#!]/g, (c) => `\\${c}`)
    .replace(/@/g, '@\u200b');
}

/** A file name inside a table cell's code span: no backtick can close it, no pipe split the row. */
function codeCell(s: string): string {
  return `\`${s
    .replace(/[\r\n]+/g, ' ')
    .replace(/`/g, "'")
    .replace(/\|/g, '\\|')}\``;
}

const n = (v: number | null) => (v === null ? '?' : v.toLocaleString('en-US'));

/** Whether the PR's diff is too large for GitHub to return in full. */
export function isOversized(input: PrSummaryInput): boolean {
  const patchBytes = input.files.reduce((sum, f) => sum + (f.patch ? Buffer.byteLength(f.patch, 'utf8') : 0), 0);
  const withheld = input.files.some((f) => f.changes > 0 && f.patch === undefined);
  return patchBytes > DIFF_MAX_BYTES || withheld || (input.changedFiles ?? 0) > FILES_LIST_CAP;
}

export function renderPrSummary(input: PrSummaryInput): string {
  const head = input.headSha ? input.headSha.slice(0, 7) : null;
  const by = input.author ? ` by \`${input.author.replace(/`/g, "'")}\`` : '';
  const lineCounts = `+${n(input.additions)} / −${n(input.deletions)}`;
  const lines: string[] = [
    PR_SUMMARY_SENTINEL,
    '### Pull request summary',
    '',
    `**${escapeInline(input.title.slice(0, 1_000))}**${by}`,
    '',
    '| Commits | Files changed | Lines | Head |',
    '|--:|--:|--:|---|',
    `| ${n(input.commits)} | ${n(input.changedFiles)} | ${lineCounts} | ${head ? `\`${head}\`` : '?'} |`,
    '',
  ];
  const tail: string[] = [];
  if (isOversized(input)) {
    tail.push(
      '',
      '> [!NOTE]',
      `> This diff is oversized: GitHub does not return it in full (over ` +
        `${DIFF_MAX_BYTES.toLocaleString('en-US')} bytes, or files too large to diff). Review it on GitHub.`,
    );
  }
  tail.push('', `<sub>Kept up to date automatically${head ? ` (last updated for ${head})` : ''}.</sub>`);

  if (input.files.length > 0) {
    lines.push('| File | Status | + | − |', '|---|---|--:|--:|');
    let used = lines.join('\n').length + tail.join('\n').length;
    let shown = 0;
    for (const f of input.files) {
      const row = `| ${codeCell(f.filename)} | ${escapeInline(f.status)} | ${n(f.additions)} | ${n(f.deletions)} |`;
      if (used + row.length + 1 > BODY_BUDGET) break;
      lines.push(row);
      used += row.length + 1;
      shown++;
    }
    const total = Math.max(input.changedFiles ?? 0, input.files.length);
    if (shown < total)
      lines.push('', `…and ${n(total - shown)} more file${total - shown === 1 ? '' : 's'} not listed.`);
  }
  const body = [...lines, ...tail].join('\n');
  // The budget above keeps this true; the cut is a last guard for the limit.
  return body.length <= GITHUB_COMMENT_MAX_CHARS ? body : body.slice(0, GITHUB_COMMENT_MAX_CHARS);
}
