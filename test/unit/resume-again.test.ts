/** Unit: a failed walker resume is tried once more after a jittered wait (wiring/resume-again.ts), on a manual clock. */
import { describe, expect, it } from 'vitest';
import { resumeAgain } from '../../src/wiring/resume-again.js';
import { ManualClock } from '../support/clock.js';

describe('resumeAgain', () => {
  it('tries each id once more after a draw in [2.5 s, 5 s), and names those that failed again', async () => {
    const clock = new ManualClock();
    const asked: string[] = [];
    const again = resumeAgain(
      ['a', 'b', 'c'],
      async (id) => {
        asked.push(id);
        if (id === 'b') throw new Error('no responders');
      },
      { clock, random: () => 0.5 },
    );
    await clock.advance(3_749); // 2.5 s + half of the 2.5 s spread
    expect(asked).toEqual([]);
    await clock.advance(1);
    expect(asked).toEqual(['a', 'b', 'c']);
    expect(await again).toEqual(['b']);
    expect(clock.pending).toBe(0);
  });

  it('never tries again before 2.5 s', async () => {
    const clock = new ManualClock();
    let asked = 0;
    const again = resumeAgain(['a'], async () => void asked++, { clock, random: () => 0 });
    await clock.advance(2_499);
    expect(asked).toBe(0);
    await clock.advance(1);
    expect(asked).toBe(1);
    expect(await again).toEqual([]);
  });

  it('never waits 5 s or more', async () => {
    const clock = new ManualClock();
    let asked = 0;
    const again = resumeAgain(['a'], async () => void asked++, { clock, random: () => 0.999_999 });
    await clock.advance(4_999);
    expect(asked).toBe(1);
    expect(await again).toEqual([]);
  });
});
