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
import { describeNames, names, token } from '../../src/runtime/names.js';
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
} from './doc-check.js';

/** The README's NATS table is the generated one (STYLE.md: one file names every subject). */
export function namesTable(): string {
  return describeNames()
    .map((r) => `| \`${r.name}\` | ${r.what} | \`${r.watch}\` |`)
    .join('\n');
}

const docs = readDocs();
let code: CodeNames;
beforeAll(async () => {
  code = await codeNames();
});

const show = (ms: Mention[]) => ms.map((m) => `${m.at}: ${m.kind} ${m.name}`);

describe('NATS names', () => {
  it('README lists every subject, stream, consumer and bucket', () => {
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
    const block = readme.split('<!-- names:start -->')[1]?.split('<!-- names:end -->')[0] ?? '';
    expect(block).toContain(namesTable());
  });

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

  it("the README's test command is the one .ci/run runs", () => {
    const readme = docs.find((d) => d.path === 'README.md')!.text;
    const ci = readFileSync(join(ROOT, '.ci/run'), 'utf8')
      .split('\n')
      .filter((l) => /^npm /.test(l));
    expect(ci).toEqual(['npm ci', 'npm test']);
    expect(readme).toContain('```sh\nnpm ci && npm test\n```');
  });
});
