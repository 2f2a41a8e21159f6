/**
 * The README and docs/ against the code (STYLE.md "Docs"): every command and flag, npm
 * script, setting, emit or node kind, route and metric they name exists in the code, read
 * from the code itself (the CLI registry, package.json, the env schema, the emit schemas
 * and node kinds, the routes of a built edge, the metric definitions); every relative link
 * reaches a file and, with a `#fragment`, a heading of it; the generated blocks are current.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { ingestResultOf } from '../../bench/results/ingest-result.js';
import type { BenchFigures } from '../../bench/ingest/report.js';
import type { LoadResult } from '../../bench/ingest/load.js';
import { docPaths, namesTable, renderBlocks, renderDoc } from '../../scripts/docs-figures.js';
import { renderIngestFigures } from '../../scripts/ingest-figures.js';
import { names, token } from '../../src/runtime/names.js';
import {
  brokenLinks,
  codeNames,
  commandMentions,
  kindMentions,
  metricMentions,
  readDocs,
  ROOT,
  routeMatches,
  routeMentions,
  settingMentions,
  unknownCommands,
  type CodeNames,
  type Mention,
} from '../support/doc-check.js';

const docs = readDocs();
let code: CodeNames;
beforeAll(async () => {
  code = await codeNames();
});

const show = (ms: Mention[]) => ms.map((m) => `${m.at}: ${m.kind} ${m.name}`);

describe('generated blocks (npm run docs:figures)', () => {
  const blocks = renderBlocks();
  const text = (path: string) => readFileSync(join(ROOT, path), 'utf8');

  it('every block of the README and docs/ is what the script renders now', () => {
    const all = docPaths().map(text).join('\n');
    for (const name of ['names', 'figures:ingest', 'figures:chaos', 'figures:chaos-history'])
      expect(all, `a doc holds the ${name} block`).toContain(`<!-- ${name}:start -->`);
    const stale = docPaths().filter((p) => renderDoc(p, text(p), blocks) !== text(p));
    expect(stale, 'run npm run docs:figures').toEqual([]);
  });

  it('the NATS table lists every subject, stream, consumer and bucket (STYLE.md: one file names them)', () => {
    const all = docPaths().map(text).join('\n');
    expect(all).toContain(`<!-- names:start -->\n${namesTable()}\n<!-- names:end -->`);
  });

  it('rendering is idempotent, and a block must be ended and known', () => {
    const doc = 'a\n<!-- names:start -->\nold\n<!-- names:end -->\nb\n';
    const once = renderDoc('x.md', doc, blocks);
    expect(once).toContain(namesTable());
    expect(renderDoc('x.md', once, blocks)).toBe(once);
    expect(() => renderDoc('x.md', '<!-- names:start -->\nold\n', blocks)).toThrow(/not ended/);
    expect(() => renderDoc('x.md', '<!-- nope:start -->\n<!-- nope:end -->', blocks)).toThrow(/no block/);
  });

  it("a bench run's figures become a results line that renders them", () => {
    const load = (acceptedPerS: number): LoadResult => ({
      sent: acceptedPerS * 20,
      accepted: acceptedPerS * 20,
      refused: 0,
      errors: 0,
      durationS: 20,
      acceptedPerS,
      ackP50Ms: 6.04,
      ackP99Ms: 31.6,
      statusCodes: { 202: acceptedPerS * 20 },
      inFlightAtEnd: 0,
      serverCpuUsPerAccepted: 101.4,
    });
    const figures: BenchFigures = {
      machine: {
        cpus: 2,
        cpuModel: 'Test CPU',
        memoryGiB: 8,
        node: 'v20.20.2',
        natsServer: '2.9.10',
        postgres: '15.20 (Debian 15.20-1)',
        loadAvg1mAtStart: 0.5,
      },
      settings: { durationS: 20, connections: 64, shards: 16, installs: [32], routes: ['github'] },
      baselines: [{ route: 'github', saturated: load(7000), peakRssMiB: 150 }],
      alones: [],
      topologies: [
        {
          route: 'github',
          label: 'edge|actors',
          installs: 32,
          figures: {
            saturated: {
              ...load(3900),
              committed: 78_000,
              committedPerS: 3876.4,
              drainS: 21,
              e2cP50Ms: 88,
              e2cP99Ms: 250,
              cpuUsPerEvent: {
                'bench-gspliti32-1': 120,
                'bench-gspliti32-2': 130,
                'nats-server': 70,
                postgres: 150,
                bench: 45,
              },
              commits: null,
            },
            paced: [
              { ...load(3400), rate: 3400, pct: 90, committed: 68_000, e2cP50Ms: 40, e2cP99Ms: 300, commits: null },
            ],
            peakRssMiB: { 'bench-gspliti32-1': 160, 'bench-gspliti32-2': 170 },
          },
        },
      ],
      drains: [],
    };
    const line = ingestResultOf(figures, {
      session: 's1',
      startedAt: new Date('2026-12-01T10:00:00Z'),
      endedAt: new Date('2026-12-01T10:20:00Z'),
      command: 'npm run bench -- --only baseline,split --installs 32 --route github',
      note: null,
      drainText: null,
    });
    expect(line.rows.map((r) => [r.topology, r.load, r.committed_per_s])).toEqual([
      ['baseline', 'saturated', null],
      ['split', 'saturated', 3876],
      ['split', 'paced', 3400],
    ]);
    const out = renderIngestFigures([line]);
    expect(out).toContain('**2026-12-01 10:00–10:20 UTC, 2-vCPU Test CPU** (Node 20.20.2, nats-server 2.9.10');
    expect(out).toContain('| baseline (signature + one publish) | 7000 | 6 / 32 | – | – | – |');
    expect(out).toContain('| edge → actors, 32 installs, saturated | 3900 | 6 / 32 | 3876 | 88 / 250 |');
    expect(out).toContain('| edge → actors, 32 installs, saturated | 120 + 130 / 70 / 150 / 45 | – |');
    expect(out).not.toContain('n/r');
  });
});

describe('NATS names', () => {
  it('ids can never widen a subscription', () => {
    const n = names('ns');
    for (const bad of ['a.b', '*', '>', 'a b', 'x.>', '']) {
      const t = token(bad);
      expect(t).not.toMatch(/[.*> ]/);
      expect(n.actorSubject(1, { kind: 'install', id: [bad] }).split('.')).toHaveLength(5);
    }
    expect(token('abc-123_X')).toBe('abc-123_X');
    expect(token('=x')).not.toBe('=x');
  });
});

describe('what the docs name exists in the code', () => {
  it('reads names from every doc (the checks below cannot pass on nothing)', () => {
    expect(docs.map((d) => d.path)).toContain('README.md');
    const all = (f: (d: (typeof docs)[number]) => Mention[]) => docs.flatMap(f).length;
    expect(all(commandMentions)).toBeGreaterThan(10);
    expect(all(settingMentions)).toBeGreaterThan(30);
    expect(all(kindMentions)).toBeGreaterThan(10);
    expect(all(routeMentions)).toBeGreaterThan(15);
    expect(all(metricMentions)).toBeGreaterThan(20);
    expect(code.routes.length).toBeGreaterThan(15);
  });

  it('commands, their flags and npm scripts', () => {
    expect(show(unknownCommands(docs.flatMap(commandMentions), code.npmScripts))).toEqual([]);
  });

  it('settings', () => {
    expect(show(docs.flatMap(settingMentions).filter((m) => !code.settings.has(m.name)))).toEqual([]);
  });

  it('emit kinds and node kinds', () => {
    expect(show(docs.flatMap(kindMentions).filter((m) => !code.kinds.has(m.name)))).toEqual([]);
  });

  it('routes', () => {
    const known = (m: Mention) => {
      const [method, path] = m.name.split(' ') as [string, string];
      return code.routes.some(
        (r) =>
          (method === 'ANY' || r.method === method) &&
          (routeMatches(path, r.url) || (path.endsWith('…') && r.url.startsWith(path.slice(0, -1)))),
      );
    };
    expect(show(docs.flatMap(routeMentions).filter((m) => !known(m)))).toEqual([]);
  });

  it('metrics', () => {
    const metrics = [...code.metrics];
    const known = (name: string) =>
      name.endsWith('_*')
        ? metrics.some((k) => k.startsWith(name.slice(0, -1)))
        : code.metrics.has(name) || code.metrics.has(name.replace(/_(bucket|sum|count)$/, ''));
    expect(show(docs.flatMap(metricMentions).filter((m) => !known(m.name)))).toEqual([]);
  });
});

describe('the docs hold together', () => {
  it('every relative link reaches its file and heading', () => {
    expect(show(docs.flatMap(brokenLinks))).toEqual([]);
  });

  it('the README is a newcomer\'s page: at most 300 lines, the rest in docs/ (STYLE.md "Docs")', () => {
    const readme = docs.find((d) => d.path === 'README.md')!.text;
    expect(readme.split('\n').length).toBeLessThanOrEqual(300);
  });

  it("the README's test command is the one .ci/run runs", () => {
    const readme = docs.find((d) => d.path === 'README.md')!.text;
    const ci = readFileSync(join(ROOT, '.ci/run'), 'utf8')
      .split('\n')
      .filter((l) => /^npm /.test(l));
    expect(ci).toEqual(['npm ci', 'npm test']);
    expect(readme).toContain('```sh\nnpm ci && npm test\n```');
  });
});
