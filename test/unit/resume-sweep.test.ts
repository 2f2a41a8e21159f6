/**
 * The node's resume sweep (src/node/resume-sweep.ts): every shard it holds gets every
 * module's resume again, a failing resume is logged and retried on the next sweep, sweeps
 * never overlap, and stop waits for the running one.
 */
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { ResumeSweep } from '../../src/node/resume-sweep.js';
import { LOG_LEVEL, LogCapture } from '../support/log-capture.js';
import { until } from '../support/until.js';

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
    });
    sweep.start();
    await until('first sweep started', async () => seen.length === 1, { timeoutMs: 5_000 });
    // Many periods pass while the first sweep hangs: none stacks on it.
    await new Promise((r) => setTimeout(r, 100));
    expect(seen).toHaveLength(1);
    owned = [4, 5];
    release();
    gate = Promise.resolve();
    await until('a later sweep over the shards held now', async () => seen.some((s) => s.includes(5)), {
      timeoutMs: 5_000,
    });
    expect(maxInFlight).toBe(1);
    await sweep.stop();
    const after = seen.length;
    await new Promise((r) => setTimeout(r, 100));
    expect(seen.length).toBe(after);
  });
});
