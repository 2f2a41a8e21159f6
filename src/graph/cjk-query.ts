/**
 * The CJK part of a graph search (INTERFACE §9.5): Chinese, Japanese and Korean runs of
 * `q` become substring matches (the text-search parser cannot split unspaced text into
 * words), the rest stays a web-search query. Substrings are escaped for `LIKE … ESCAPE '\'`,
 * so `%`, `_` and `\` in user input match themselves only. Pure.
 */

const CJK_RUN = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}\u3005\u30fc\uff66-\uff9f]+/gu;

export interface SplitQuery {
  /** `%…%` patterns, escaped, one per CJK run; empty when `q` has none. */
  cjk: string[];
  /** `q` with its CJK runs taken out (for websearch_to_tsquery). */
  rest: string;
}

export function splitCjk(q: string): SplitQuery {
  const cjk = [...new Set(q.match(CJK_RUN) ?? [])].map((run) => `%${escapeLike(run)}%`);
  return { cjk, rest: q.replace(CJK_RUN, ' ') };
}

export function escapeLike(s: string): string {
  return s.replace(/[\\%_]/g, (c) => `\\${c}`);
}
