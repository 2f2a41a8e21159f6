/**
 * Unit: the tracing block of docs/performance.md (scripts/tracing-figures.ts): one row per
 * variant of the newest session, each figure the median of its runs with their range.
 */
import { describe, expect, it } from 'vitest';
import { IngestResult, type IngestRow } from '../../bench/results/ingest-result.js';
import { renderTracingFigures } from '../../scripts/tracing-figures.js';

const row = (load: 'saturated' | 'paced', v: number): IngestRow => ({
  route: 'github',
  topology: 'edge1',
  installs: 1,
  load,
  paced_pct: null,
  rate: load === 'paced' ? 1000 : null,
  accepted_per_s: v,
  ack_p50_ms: v / 100,
  ack_p99_ms: v / 10,
  committed_per_s: v,
  e2c_p50_ms: v / 50,
  e2c_p99_ms: v / 5,
  backlog_events: null,
  peak_rss_mib: [180],
  cpu_us_per_request: 100,
  cpu_us_per_event: load === 'saturated' ? { node: v / 10, 'nats-server': 40, postgres: 150, bench: 45 } : null,
  commits: null,
});

const run = (note: string, minute: number, v: number, session = 's1'): IngestResult =>
  IngestResult.parse({
    bench: 'ingest',
    session,
    started_at: `2026-11-27T15:${String(minute).padStart(2, '0')}:00.000Z`,
    ended_at: `2026-11-27T15:${String(minute).padStart(2, '0')}:50.000Z`,
    machine: {
      name: 'test VM',
      cpus: 2,
      cpu_model: 'x',
      memory_gib: 8,
      node: '20.20.2',
      nats_server: '2.9.10',
      postgres: '15.20',
      load_avg_1m: 1,
    },
    command: 'npm run bench -- --only edge1',
    settings: { duration_s: 20, connections: 64, shards: 16 },
    note,
    source: 'bench',
    rows: [row('saturated', v), row('paced', v)],
    drains: [],
  });

describe('tracing figures', () => {
  it('one row per variant of the newest session: medians and ranges', () => {
    const text = renderTracingFigures([
      run('old session', 1, 9999, 's0'),
      run('before', 10, 3000),
      run('off', 11, 3100),
      run('before', 12, 3300),
      run('off', 13, 2900),
      run('before', 14, 3200),
    ]);
    expect(text).not.toContain('old session');
    expect(text).toContain('2026-11-27 15:10–15:14 UTC, test VM');
    expect(text).toContain('| before | 3 | 3200 (3000–3300) | 3200 (3000–3300) | 320 (300–330) | 32 (30–33) |');
    expect(text).toContain('| off | 2 | 3000 (2900–3100) |');
    expect(text).toContain('ack p50 ms, paced 1000/s');
  });
});
