/**
 * Unit: the retention block of docs/performance.md (scripts/retention-figures.ts): the newest
 * run, quiet against purging, each figure the median of its rounds with their range, and
 * whether the purge ever ran out of rows during a load.
 */
import { describe, expect, it } from 'vitest';
import { RetentionResult, type RetentionRow } from '../../bench/results/retention-result.js';
import { renderRetentionFigures } from '../../scripts/retention-figures.js';

const row = (
  round: number,
  phase: RetentionRow['phase'],
  load: RetentionRow['load'],
  v: number,
  left = 1,
): RetentionRow => ({
  round,
  phase,
  load,
  rate: load === 'paced' ? 300 : null,
  accepted_per_s: v,
  ack_p50_ms: v / 100,
  ack_p99_ms: v / 10,
  committed_per_s: v,
  e2c_p50_ms: v / 50,
  e2c_p99_ms: v / 5,
  purged_rows: phase === 'purging' ? v * 100 : null,
  purged_per_s: phase === 'purging' ? v * 4 : null,
  backlog_left: phase === 'purging' ? left : null,
});

const run = (minute: number, rows: RetentionRow[]): RetentionResult =>
  RetentionResult.parse({
    bench: 'retention',
    started_at: `2026-11-28T00:${String(minute).padStart(2, '0')}:00.000Z`,
    ended_at: `2026-11-28T00:${String(minute + 5).padStart(2, '0')}:00.000Z`,
    machine: {
      name: 'test VM',
      cpus: 2,
      cpu_model: 'x',
      memory_gib: 8,
      node: '20.20.2',
      nats_server: '2.9.10',
      postgres: '15.20',
      load_avg_1m: 3,
    },
    command: 'npm run bench:retention',
    note: null,
    source: 'bench',
    settings: {
      expired: 250000,
      rounds: 2,
      duration_s: 20,
      rate: 300,
      connections: 32,
      shards: 16,
      events_retention_days: 90,
      batch_size: 1000,
      max_batches: 100,
      pause_ms: 20,
    },
    rows,
  });

describe('retention figures', () => {
  it('renders the newest run: quiet and purging rows, medians and ranges', () => {
    const text = renderRetentionFigures([
      run(1, [row(1, 'quiet', 'saturated', 9999)]),
      run(10, [
        row(1, 'quiet', 'saturated', 1000),
        row(1, 'quiet', 'paced', 300),
        row(1, 'purging', 'saturated', 800),
        row(1, 'purging', 'paced', 300),
        row(2, 'purging', 'saturated', 600, 0),
        row(2, 'purging', 'paced', 290),
        row(2, 'quiet', 'saturated', 1200),
        row(2, 'quiet', 'paced', 300),
      ]),
    ]);
    expect(text).toContain('2026-11-28 00:10–00:15 UTC, test VM (load average 3 at the start)');
    expect(text).toContain('250 000 events past 90 days');
    expect(text).toContain('The purge ran out of rows before 1 of 4 purging loads ended.');
    expect(text).toContain('| quiet: nothing purged | 1100 (1000–1200) | 1100 (1000–1200) | 3 (3–3) | 30 (30–30) |');
    expect(text).toContain(
      '| purging: the housekeeping pass running | 700 (600–800) | 700 (600–800) | 3.0 (2.9–3) | 30 (29–30) | ' +
        '5.9 (5.8–6) | 59 (58–60) | 1800 (1160–3200) |',
    );
    expect(text).not.toContain('9999');
  });

  it('says when nothing is recorded', () => {
    expect(renderRetentionFigures([])).toBe('No retention runs recorded yet.');
  });
});
