/** unit: the backfill cursor stays under 100 KB at the caps with the longest legal names (spec §8). */
import { describe, expect, it } from 'vitest';
import {
  initialCursor,
  SPEC_CAPS,
  type BackfillCursor,
} from '../../src/connectors/codehost/backfill/backfill-cursor.js';
import {
  CURSOR_MAX_BYTES,
  MAX_PR_NUMBER,
  decodeCursor,
  encodeCursor,
} from '../../src/connectors/codehost/backfill/cursor-codec.js';

const OWNER = 'o'.repeat(39);
const REPO = `r${'-_.x'.repeat(24)}abc`; // 100 characters of GitHub's repo-name alphabet
const KIB_100 = 100 * 1024;

function atCaps(prs: number[]): BackfillCursor {
  const c = initialCursor();
  c.phase = 'PrEnumerating';
  c.repos_resume_page = 999_999;
  c.repos_resume_after = Number.MAX_SAFE_INTEGER;
  c.pending_repos = Array.from({ length: SPEC_CAPS.pendingRepos }, (_, i) => Number.MAX_SAFE_INTEGER - i);
  c.repo = {
    id: Number.MAX_SAFE_INTEGER,
    full_name: `${OWNER}/${REPO}`,
    pulls_page: 999_999,
    pulls_after: MAX_PR_NUMBER,
    pulls_listed: false,
  };
  c.pending_prs = prs;
  for (const k of Object.keys(c.counts) as Array<keyof BackfillCursor['counts']>) c.counts[k] = Number.MAX_SAFE_INTEGER;
  return c;
}

/** 10 000 PR numbers spread evenly over 1..2^31-1: every gap as wide as it can be. */
function evenlySpread(): number[] {
  const step = Math.floor(MAX_PR_NUMBER / SPEC_CAPS.pendingPrs);
  return Array.from({ length: SPEC_CAPS.pendingPrs }, (_, i) => MAX_PR_NUMBER - (SPEC_CAPS.pendingPrs - 1 - i) * step);
}

/** The digit-maximising spread: as many 7-digit gaps as the range allows, the rest 6 digits. */
function digitHeavy(): number[] {
  const out: number[] = [];
  let n = 1;
  let budget = MAX_PR_NUMBER - 1 - (SPEC_CAPS.pendingPrs - 1) * 100_000;
  for (let i = 0; i < SPEC_CAPS.pendingPrs; i++) {
    out.push(n);
    const wide = budget >= 900_000;
    if (wide) budget -= 900_000;
    n += wide ? 1_000_000 : 100_000;
  }
  return out;
}

describe('unit: code-host backfill cursor', () => {
  it('the longest legal names fit the repo-name rule the codec enforces', () => {
    expect(OWNER).toHaveLength(39);
    expect(REPO).toHaveLength(100);
  });

  for (const [name, prs] of [
    ['evenly spread', evenlySpread()],
    ['digit-heavy', digitHeavy()],
  ] as const) {
    it(`stays under 100 KB at both caps with the longest names and ids (${name} PR numbers)`, () => {
      expect(Math.max(...prs)).toBeLessThanOrEqual(MAX_PR_NUMBER);
      const c = atCaps([...prs]);
      const bytes = encodeCursor(c);
      expect(bytes.byteLength).toBeLessThan(CURSOR_MAX_BYTES);
      expect(bytes.byteLength).toBeLessThan(KIB_100);
      // Not vacuous: the queues really are at their caps.
      expect(c.pending_repos).toHaveLength(1000);
      expect(c.pending_prs).toHaveLength(10000);
      expect(decodeCursor(bytes)).toEqual(c);
    });
  }

  it('round-trips an initial cursor', () => {
    const c = initialCursor();
    expect(decodeCursor(encodeCursor(c))).toEqual(c);
  });

  it('refuses a queue over its cap, an unsorted PR queue and out-of-range numbers', () => {
    const overRepos = atCaps([1, 2, 3]);
    overRepos.pending_repos.push(1);
    expect(() => encodeCursor(overRepos)).toThrow(/out of bounds/);
    expect(() => encodeCursor(atCaps([3, 2]))).toThrow(/ascending/);
    expect(() => encodeCursor(atCaps([MAX_PR_NUMBER + 1]))).toThrow(/out of bounds/);
    const longName = atCaps([1]);
    longName.repo!.full_name = `${OWNER}/${REPO}x`;
    expect(() => encodeCursor(longName)).toThrow(/out of bounds/);
  });

  it('refuses bytes it did not write', () => {
    expect(() => decodeCursor(new TextEncoder().encode('{"v":2}'))).toThrow(/malformed/);
    expect(() => decodeCursor(new TextEncoder().encode('not json'))).toThrow(/not JSON/);
  });
});
