/**
 * actor: the housekeeping actor on the real kernel, its time on a manual clock: a resume arms
 * the first pass, each pass arms the next one a period later (also after a failed pass), and
 * a second resume while a pass is pending arms nothing more.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { housekeepingActor } from '../../src/actors/housekeeping.js';
import {
  housekeepingKey,
  type HousekeepingProtocol,
  type PassOutcome,
} from '../../src/actors/housekeeping-protocol.js';
import { createLogger } from '../../src/log.js';
import { Kernel } from '../../src/runtime/kernel.js';
import type { ActorAsk } from '../../src/runtime/ports.js';
import { ManualClock } from '../support/clock.js';
import { until } from '../support/until.js';

const PERIOD = 600_000;
const FIRST = 60_000;
let kernel: Kernel | null = null;
afterEach(async () => {
  await kernel?.stop();
  kernel = null;
});

function start(passes: Array<() => Promise<PassOutcome>>) {
  const clock = new ManualClock();
  kernel = new Kernel({ log: createLogger({ level: 'silent', node: 'test' }), clock });
  const k = kernel;
  const actors: ActorAsk = {
    ask: (key, msg) => k.dispatch(key, msg, { deadline: Date.now() + 5_000 }) as never,
  };
  const ran: number[] = [];
  const reported: PassOutcome[] = [];
  k.register(
    housekeepingActor({
      periodMs: PERIOD,
      firstDelayMs: FIRST,
      actors,
      clock,
      async pass() {
        ran.push(clock.now());
        const next = passes.shift();
        return next ? next() : {};
      },
      onPass: (d) => void reported.push(d),
    }),
  );
  const resume = () => actors.ask<HousekeepingProtocol, 'resume'>(housekeepingKey, { type: 'resume' });
  return { clock, ran, reported, resume };
}

describe('housekeeping actor', () => {
  it('runs its first pass a delay after the resume, then once a period, also after a failure', async () => {
    const { clock, ran, reported, resume } = start([
      async () => ({ events: 3 }),
      async () => {
        throw new Error('Postgres is away');
      },
      async () => ({ dead_letters: 1 }),
    ]);
    const t0 = clock.now();
    await resume();
    await resume(); // a second resume re-arms nothing
    await clock.advance(FIRST - 1);
    expect(ran).toEqual([]);
    await clock.advance(1);
    await until('the first pass run', () => ran.length === 1);
    expect(ran).toEqual([t0 + FIRST]);
    await until('the first pass reported', () => reported.length === 1);
    expect(reported).toEqual([{ events: 3 }]);

    await clock.advance(PERIOD);
    await until('second pass (fails)', () => ran.length === 2);
    await clock.advance(PERIOD);
    await until('the third pass run', () => ran.length === 3);
    expect(ran).toEqual([t0 + FIRST, t0 + FIRST + PERIOD, t0 + FIRST + 2 * PERIOD]);
    await until('two passes reported', () => reported.length === 2);
    expect(reported).toEqual([{ events: 3 }, { dead_letters: 1 }]);
  });
});
