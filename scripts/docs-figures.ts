/**
 * `npm run docs:figures`: rewrites every generated block of the README and docs/ from its
 * source, never by hand (STYLE.md "Docs"). A block lies between `<!-- NAME:start -->` and
 * `<!-- NAME:end -->`:
 *
 * - `names`: the NATS names table, from src/runtime/names.ts;
 * - `figures:ingest`: the bench's figures, from bench/results/ingest.jsonl (`npm run bench -- … --results`);
 * - `figures:tracing`: what tracing costs, from bench/results/tracing.jsonl (the same bench, per variant);
 * - `figures:feed`: what the change feed costs and how fast it delivers, from bench/results/feed.jsonl;
 * - `figures:chaos` and `figures:chaos-history`: the chaos runs, from bench/results/chaos.jsonl;
 * - `figures:retention`: ingest while retention purges, from bench/results/retention.jsonl (`npm run bench:retention`).
 *
 * Running it twice changes nothing; test/unit/readme-names.test.ts fails while a block
 * differs from what this renders.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { ChaosResult } from '../bench/results/chaos-result.js';
import { IngestResult } from '../bench/results/ingest-result.js';
import { RetentionResult } from '../bench/results/retention-result.js';
import { describeNames } from '../src/runtime/names.js';
import { renderChaosFigures, renderChaosHistory } from './chaos-figures.js';
import { renderIngestFigures } from './ingest-figures.js';
import { renderTracingFigures } from './tracing-figures.js';
import { renderFeedFigures } from './feed-figures.js';
import { renderRetentionFigures } from './retention-figures.js';

const ROOT = fileURLToPath(new URL('../', import.meta.url));

/** Every line of a results file, checked against its schema (a bad line names its file and line). */
function readResults<T>(file: string, schema: { parse(v: unknown): T }): T[] {
  return readFileSync(join(ROOT, file), 'utf8')
    .split('\n')
    .flatMap((line, i) => {
      if (line.trim() === '') return [];
      try {
        return [schema.parse(JSON.parse(line))];
      } catch (err) {
        throw new Error(`${file}:${i + 1}: ${(err as Error).message}`, { cause: err });
      }
    });
}

export function namesTable(): string {
  return [
    '| Name | What | Watch |',
    '|---|---|---|',
    ...describeNames().map((r) => `| \`${r.name}\` | ${r.what} | \`${r.watch}\` |`),
  ].join('\n');
}

/** What each block holds now. */
export function renderBlocks(): Record<string, string> {
  const ingest = readResults('bench/results/ingest.jsonl', IngestResult);
  const chaos = readResults('bench/results/chaos.jsonl', ChaosResult);
  return {
    names: namesTable(),
    'figures:ingest': renderIngestFigures(ingest),
    'figures:tracing': renderTracingFigures(readResults('bench/results/tracing.jsonl', IngestResult)),
    'figures:feed': renderFeedFigures(readResults('bench/results/feed.jsonl', IngestResult)),
    'figures:chaos': renderChaosFigures(chaos),
    'figures:chaos-history': renderChaosHistory(chaos),
    'figures:retention': renderRetentionFigures(readResults('bench/results/retention.jsonl', RetentionResult)),
  };
}

/** `text` with every block it holds rewritten; a block of an unknown name, or never ended, is an error. */
export function renderDoc(path: string, text: string, blocks: Record<string, string>): string {
  return text.replace(
    /<!-- ([a-z:-]+):start -->\n([\s\S]*?)(<!-- ([a-z:-]+):end -->|$)/g,
    (_m, name: string, _b, end) => {
      if (!end || !(end as string).includes(`${name}:end`)) throw new Error(`${path}: block ${name} is not ended`);
      const body = blocks[name];
      if (body === undefined) throw new Error(`${path}: no block named ${name}`);
      return `<!-- ${name}:start -->\n${body}\n<!-- ${name}:end -->`;
    },
  );
}

/** The README and every Markdown file under docs/, relative to the repository root. */
export function docPaths(): string[] {
  return [
    'README.md',
    ...readdirSync(join(ROOT, 'docs'))
      .filter((f) => f.endsWith('.md'))
      .map((f) => `docs/${f}`),
  ];
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const blocks = renderBlocks();
  for (const path of docPaths()) {
    const before = readFileSync(join(ROOT, path), 'utf8');
    const after = renderDoc(path, before, blocks);
    if (after !== before) {
      writeFileSync(join(ROOT, path), after);
      process.stdout.write(`docs:figures: rewrote ${path}\n`);
    }
  }
}
