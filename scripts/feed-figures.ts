/**
 * The change feed's block of docs/performance.md, from bench/results/feed.jsonl: the variants
 * of one sitting (the code before the feed, the feed written with nobody following, and one
 * webhook and one SSE client following: `--follow`) as the tracing block shows its own, and
 * for the followed runs, commit → delivered to the webhook and on the stream at the paced rate.
 */
import type { IngestResult } from '../bench/results/ingest-result.js';
import { table } from './figures-format.js';
import { renderTracingFigures, spread } from './tracing-figures.js';

export function renderFeedFigures(results: IngestResult[]): string {
  if (results.length === 0) return 'No change-feed runs recorded yet.';
  const newest = [...results].sort((a, b) => a.started_at.localeCompare(b.started_at)).at(-1)!;
  const runs = results.filter((r) => r.session === newest.session);
  const followed = runs.flatMap((r) => r.rows.filter((x) => x.load === 'paced' && x.follow).map((x) => x.follow!));
  const cost = renderTracingFigures(runs, 'No change-feed runs recorded yet.');
  if (followed.length === 0) return cost;
  const rate = runs.flatMap((r) => r.rows).find((x) => x.load === 'paced' && x.follow)?.rate;
  return [
    cost,
    '',
    `Commit → delivered at the paced rate${rate ? ` (${rate}/s)` : ''}, from each change's commit ` +
      '(`changed_at`) to its arrival at the webhook receiver and on the SSE stream, both in the bench process:',
    '',
    table(
      ['runs', 'changes per run', 'missing', 'webhook p50 ms', 'webhook p99 ms', 'SSE p50 ms', 'SSE p99 ms'],
      [
        [
          String(followed.length),
          spread(followed.map((f) => f.changes)),
          String(followed.reduce((n, f) => n + f.missing, 0)),
          spread(followed.map((f) => f.webhook_p50_ms)),
          spread(followed.map((f) => f.webhook_p99_ms)),
          spread(followed.map((f) => f.sse_p50_ms)),
          spread(followed.map((f) => f.sse_p99_ms)),
        ],
      ],
    ),
  ].join('\n');
}
