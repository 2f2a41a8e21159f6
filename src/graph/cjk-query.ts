/**
 * The CJK part of a graph search (INTERFACE §9.5): Chinese, Japanese and Korean runs of
 * `q` become substring matches (the text-search parser cannot split unspaced text into
 * words), the rest stays a web-search query. Substrings are escaped for `LIKE … ESCAPE '\'`,
 * so `%`, `_` and `\` in user input match themselves only. Pure.
 *
 * A run is matched against `search_cjk` (migration 016), which keeps the runs of the same
 * class (cjk-ranges.ts), so the two sides cannot disagree on what a CJK character is.
 */
import { cjkClassJs } from './cjk-ranges.js';

const CJK_RUN = new RegExp(`[${cjkClassJs()}]+`, 'gu');

export interface SplitQuery {
  /** `%…%` patterns, escaped, one per CJK run; empty when `q` has none. */
  cjk: string[];
  /** `q` with its CJK runs taken out (for websearch_to_tsquery). */
  rest: string;
}

/** The maximal runs of CJK characters (Han, kana, Hangul; cjk-ranges.ts) of `s`, in order. */
export function cjkRuns(s: string): string[] {
  return s.match(CJK_RUN) ?? [];
}

export function splitCjk(q: string): SplitQuery {
  const cjk = [...new Set(cjkRuns(q))].map((run) => `%${escapeLike(run)}%`);
  return { cjk, rest: q.replace(CJK_RUN, ' ') };
}

export function escapeLike(s: string): string {
  return s.replace(/[\\%_]/g, (c) => `\\${c}`);
}
