/**
 * The CJK class (INTERFACE §9.5) is written three times: as code-point ranges
 * (src/graph/cjk-ranges.ts), as the query's JS regexp built from them, and as the SQL class
 * of migration 016's `search_cjk`. A run of `q` must be a CJK run of the text exactly when
 * both sides agree, so these check each against the others, per code point.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CJK_RANGES, cjkClassSql } from '../../src/graph/cjk-ranges.js';
import { cjkRuns } from '../../src/graph/cjk-query.js';
import { MIGRATIONS_DIR } from '../../src/store/migrate.js';

/** What the query side split on before 016: Node's own Unicode script data. */
const SCRIPTS = /^[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}\u3005\u30fc\uff66-\uff9f]$/u;
const UNASSIGNED = /^\p{Cn}$/u;

const inRanges = (cp: number) => CJK_RANGES.some(([a, b]) => cp >= a && cp <= b);

/** Every code point a string can hold (no surrogate halves). */
function* codePoints(): Generator<number> {
  for (let cp = 0; cp <= 0x10ffff; cp++) if (cp < 0xd800 || cp > 0xdfff) yield cp;
}

describe('unit: the CJK class, one list for the query and migration 016 (INTERFACE §9.5)', () => {
  it('ranges are ascending, disjoint and not adjacent (each boundary is a real edge of the class)', () => {
    for (const [i, [a, b]] of CJK_RANGES.entries()) {
      expect(a).toBeLessThanOrEqual(b);
      if (i > 0) expect(a).toBeGreaterThan(CJK_RANGES[i - 1]![1] + 1);
    }
  });

  it("are Node's Han, Hiragana, Katakana and Hangul scripts plus 々, ー and half-width katakana", () => {
    const missing: string[] = [];
    const extra: string[] = [];
    for (const cp of codePoints()) {
      const ch = String.fromCodePoint(cp);
      const want = SCRIPTS.test(ch);
      // An older Node (older Unicode) lacks the newest ideographs: unassigned there, not wrong.
      if (want && !inRanges(cp)) missing.push(cp.toString(16));
      if (!want && inRanges(cp) && !UNASSIGNED.test(ch)) extra.push(cp.toString(16));
    }
    expect(missing).toEqual([]);
    expect(extra).toEqual([]);
  });

  it('the query splits on exactly the ranges, code point by code point', () => {
    const disagree: string[] = [];
    for (const cp of codePoints()) {
      const ch = String.fromCodePoint(cp);
      if ((cjkRuns(`a${ch}b`).join('') === ch) !== inRanges(cp)) disagree.push(cp.toString(16));
    }
    expect(disagree).toEqual([]);
    expect(cjkRuns('部署 deploy 東京でリリース、서울ｶﾞ')).toEqual(['部署', '東京でリリース', '서울ｶﾞ']);
  });

  it("migration 016's column uses the same class, and keeps runs whole", () => {
    const sql = readFileSync(join(MIGRATIONS_DIR, '016_graph_cjk_column.sql'), 'utf8');
    const classes = [...sql.matchAll(/'\[(\^?)([^\]']*)\](\+?)'/g)].map((m) => `${m[1]}${m[2]}${m[3]}`);
    expect(classes).toEqual([cjkClassSql(), `^${cjkClassSql()}+`]);
  });
});
