/**
 * The fence's refusal log (src/ingest/refusals.ts): every refused message is counted, but a
 * flood writes a bounded number of lines: the first refusal of each subject (up to a cap) in
 * a window, then one summary of the rest when the window ends.
 */
import { describe, expect, it } from 'vitest';
import { RefusalLog } from '../../src/ingest/refusals.js';
import { createLogger } from '../../src/log.js';
import { ManualClock } from '../support/clock.js';
import { LogCapture } from '../support/log-capture.js';

function setup() {
  const logs = new LogCapture();
  const clock = new ManualClock();
  let counted = 0;
  const refusals = new RefusalLog({
    log: createLogger({ level: 'info', node: 'n1' }, logs.stream),
    onRefused: () => counted++,
    windowMs: 60_000,
    maxSubjects: 3,
    clock,
  });
  return { logs, clock, refusals, counted: () => counted };
}

describe('RefusalLog', () => {
  it('counts every refusal and names each subject once a window', async () => {
    const { logs, clock, refusals, counted } = setup();
    for (let i = 0; i < 50; i++) refusals.refused('svc.ingest.0.chatapp.a');
    refusals.refused('svc.ingest.1.chatapp.b');
    expect(counted()).toBe(51);
    const named = logs.find('without a valid seal refused:');
    expect(named.map((l) => l.subject)).toEqual(['svc.ingest.0.chatapp.a', 'svc.ingest.1.chatapp.b']);
    expect(logs.find('more ingest messages')).toHaveLength(0);

    // The window ends: the 49 not named are told in one line, once.
    await clock.advance(60_000);
    expect(logs.find('more ingest messages').map((l) => l.refused)).toEqual([49]);
    await clock.advance(600_000);
    expect(logs.lines).toHaveLength(3);

    // A new window names the subject again.
    refusals.refused('svc.ingest.0.chatapp.a');
    expect(logs.find('without a valid seal refused:')).toHaveLength(3);
  });

  it('names at most maxSubjects subjects a window, whatever the flood', async () => {
    const { logs, clock, refusals, counted } = setup();
    for (let i = 0; i < 10_000; i++) refusals.refused(`svc.ingest.${i % 4}.chatapp.install-${i}`);
    expect(counted()).toBe(10_000);
    expect(logs.find('without a valid seal refused:')).toHaveLength(3);
    await clock.advance(60_000);
    expect(logs.find('more ingest messages').map((l) => l.refused)).toEqual([9_997]);
    expect(logs.lines).toHaveLength(4);
  });
});
