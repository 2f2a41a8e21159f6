/**
 * The node's resume sweep (src/node/resume-sweep.ts): every shard it holds gets every
 * module's resume again, a failing resume is logged and retried on the next sweep, sweeps
 * never overlap, and stop waits for the running one.
 */
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { ResumeSweep } from '../../src/node/resume-sweep.js';
import { ManualClock } from '../support/clock.js';
import { LOG_LEVEL, LogCapture } from '../support/log-capture.js';

const logger = (logs: LogCapture) => pino({ level: 'warn' }, logs.stream);

describe('ResumeSweep', () => {
  it('resumes all held shards with every module in one call each, and a failed resume again on the next sweep', async () => {
    const logs = new LogCapture();
    const calls: string[] = [];
    let failShard2 = true;
    const sweep = new ResumeSweep({
      owned: () => [1, 2],
      resumers: [
        async (shards) => void calls.push(`a${[...shards].join(',')}`),
        async (shards) => {
          calls.push(`b${[...shards].join(',')}`);
          if (shards.has(2) && failShard2) throw new Error('nats: timeout');
        },
      ],
      periodMs: 60_000,
      log: logger(logs),
    });
    await sweep.sweep();
    expect(calls).toEqual(['a1,2', 'b1,2']);
    expect(logs.find('a shard resume failed', LOG_LEVEL.warn)).toHaveLength(1);
    expect(logs.find('a shard resume failed', LOG_LEVEL.warn)[0]).toMatchObject({ shards: [1, 2] });

    failShard2 = false;
    calls.length = 0;
    await sweep.sweep();
    expect(calls).toEqual(['a1,2', 'b1,2']);
    expect(logs.find('a shard resume failed', LOG_LEVEL.warn)).toHaveLength(1);
  });

  it('runs on its period, one sweep at a time, with the shards held at that moment, and stops', async () => {
    const logs = new LogCapture();
    let owned = [3];
    const seen: number[][] = [];
    let inFlight = 0;
    let maxInFlight = 0;
    let release: () => void = () => undefined;
    let gate = new Promise<void>((r) => (release = r));
    const clock = new ManualClock();
    const sweep = new ResumeSweep({
      owned: () => owned,
      resumers: [
        async (s) => {
          inFlight++;
          maxInFlight = Math.max(maxInFlight, inFlight);
          seen.push([...s]);
          await gate;
          inFlight--;
        },
      ],
      periodMs: 10,
      log: logger(logs),
      clock,
    });
    sweep.start();
    expect(seen).toHaveLength(0);
    await clock.advance(10);
    expect(seen).toEqual([[3]]);
    // Ten periods pass while the first sweep hangs: none stacks on it.
    await clock.advance(100);
    expect(seen).toHaveLength(1);
    owned = [4, 5];
    release();
    gate = Promise.resolve();
    await clock.advance(0); // the first sweep ends
    // The next period sweeps the shards held now.
    await clock.advance(10);
    expect(seen).toEqual([[3], [4, 5]]);
    expect(maxInFlight).toBe(1);
    await sweep.stop();
    expect(clock.pending).toBe(0);
    await clock.advance(100);
    expect(seen).toHaveLength(2);
  });
});
