/**
 * What the docs name, read from their Markdown, and what the code has, read from the code
 * (STYLE.md "Docs": every command, setting, route and emit kind named in the docs exists
 * in the code). readme-names.test.ts compares the two; this file only reads them.
 */
import { generateKeyPairSync } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import GithubSlugger from 'github-slugger';
import { pino } from 'pino';
import { BENCH_OPTIONS } from '../../bench/ingest/bench-args.js';
import { CHAOS_OPTIONS } from '../../bench/chaos/chaos-args.js';
import { COMMANDS } from '../../src/cli/registry.js';
import { loadConfig } from '../../src/config.js';
import { envSchema } from '../../src/config-env.js';
import { CHAT_EMIT_KINDS } from '../../src/connectors/chatapp/emit.js';
import { CODEHOST_EMIT_KINDS } from '../../src/connectors/codehost/emit-schema.js';
import { buildEdge } from '../../src/edge/app.js';
import { createEdgeMetrics, createMetricsRegistry } from '../../src/edge/metrics.js';
import { NODE_KINDS } from '../../src/graph/kinds.js';
import { shardOf } from '../../src/runtime/names.js';
import type { ActorAsk, KvPort } from '../../src/runtime/ports.js';
import { CredentialCipher } from '../../src/store/credential-cipher.js';
import { createPool } from '../../src/store/db.js';
import type { JetStreamClient } from '@nats-io/jetstream';
import { nodeIngestCommitter } from '../../src/ingest/deliver.js';
import { createRuntimeMetrics } from '../../src/runtime/metrics.js';
import { names as makeNames } from '../../src/runtime/names.js';
import { createSeal } from '../../src/runtime/seal.js';
import type { ModuleDeps } from '../../src/wiring/module.js';
import { connectorModules, serviceModules } from '../../src/wiring/modules.js';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));

export interface Doc {
  /** Relative to the repository root, e.g. `docs/operating.md`. */
  path: string;
  text: string;
}

/** The README and every Markdown file under `docs/`. */
export function readDocs(): Doc[] {
  const docs = readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`);
  return ['README.md', ...docs].map((path) => ({ path, text: readFileSync(join(ROOT, path), 'utf8') }));
}

/** A name a doc uses, where it uses it (`docs/x.md:12`), and what it was read as. */
export interface Mention {
  at: string;
  kind: 'command' | 'flag' | 'npm script' | 'setting' | 'emit or node kind' | 'route' | 'metric' | 'link';
  name: string;
}

interface Piece {
  line: number;
  text: string;
}

/** A doc split into code (fenced blocks and inline spans) and prose, each with its line number. */
function splitMarkdown(text: string): { blocks: Piece[]; spans: Piece[]; prose: Piece[] } {
  const blocks: Piece[] = [];
  const spans: Piece[] = [];
  const prose: Piece[] = [];
  let fence: string[] | null = null;
  let fenceLine = 0;
  for (const [i, line] of text.split('\n').entries()) {
    if (/^\s*```/.test(line)) {
      if (fence === null) [fence, fenceLine] = [[], i + 1];
      else {
        blocks.push({ line: fenceLine, text: fence.join('\n') });
        fence = null;
      }
      continue;
    }
    if (fence !== null) {
      fence.push(line);
      continue;
    }
    // Inline code: ``a`b`` or `a`; what is left is prose.
    const rest = line.replace(/``(.+?)``|`([^`]+)`/g, (_m, a: string | undefined, b: string | undefined) => {
      spans.push({ line: i + 1, text: (a ?? b ?? '').trim() });
      return ' ';
    });
    prose.push({ line: i + 1, text: rest });
  }
  return { blocks, spans, prose };
}

/** Shell lines of a block, continuation lines (`\`) joined. */
function shellLines(block: Piece): Piece[] {
  const out: Piece[] = [];
  let acc: Piece | null = null;
  for (const [i, raw] of block.text.split('\n').entries()) {
    const line = raw.replace(/\s+#\s.*$/, '');
    acc = acc ? { line: acc.line, text: `${acc.text} ${line.trim()}` } : { line: block.line + 1 + i, text: line };
    if (!/\\\s*$/.test(line)) {
      out.push(acc);
      acc = null;
    } else acc.text = acc.text.replace(/\\\s*$/, '');
  }
  if (acc) out.push(acc);
  return out;
}

const WORD = /^[a-z][a-z0-9-]*$/;
/**
 * Tokens of a command line after its program, up to what ends it in a shell (`;`, `&&`, `>`,
 * a pipe outside parentheses).
 */
function argsOf(rest: string): string[] {
  const tokens: string[] = [];
  let depth = 0;
  for (const raw of rest.trim().split(/\s+/)) {
    if (raw === '') continue;
    if (depth === 0 && /^(\||\|\||;|&&|&|>|>>|<|#|\$\(|`)/.test(raw)) break;
    depth += (raw.match(/\(/g) ?? []).length - (raw.match(/\)/g) ?? []).length;
    tokens.push(raw.replace(/^[[(]+|[\])]+$/g, ''));
    if (/[;`]$/.test(raw)) break;
  }
  return tokens;
}

const flagsOf = (tokens: string[]) =>
  tokens.filter((t) => /^--?[a-z]/.test(t)).map((t) => t.split('=')[0]!.replace(/[,.;:]+$/, ''));

/** `connectors …` invocations and `npm …` commands, in code only. */
export function commandMentions(doc: Doc): Mention[] {
  const { blocks, spans } = splitMarkdown(doc.text);
  const lines = [...blocks.flatMap(shellLines), ...spans];
  const out: Mention[] = [];
  const at = (l: Piece) => `${doc.path}:${l.line}`;
  for (const l of lines) {
    // `connectors`, `npx connectors`, `bin/connectors.js`; never `nats-connectors` or `connectors_app`.
    for (const m of l.text.matchAll(/(?<=^|[\s(/])connectors(?:\.js)?(?=\s|$)/g)) {
      const args = argsOf(l.text.slice(m.index + m[0].length));
      if (args.length === 0 || !WORD.test(args[0]!)) {
        for (const f of flagsOf(args.slice(0, 1))) out.push({ at: at(l), kind: 'flag', name: `connectors ${f}` });
        continue;
      }
      out.push({ at: at(l), kind: 'command', name: ['connectors', ...args].join(' ') });
    }
    for (const m of l.text.matchAll(/(?<=^|[\s(])npm\s+(run\s+)?([a-z][a-z:-]*)/g)) {
      const args = argsOf(l.text.slice(m.index + m[0].length));
      const name = m[1] ? `run ${m[2]}` : m[2]!;
      out.push({ at: at(l), kind: 'npm script', name: [`npm ${name}`, ...args].join(' ') });
    }
  }
  // A span that starts with a command's own words (`serve --roles edge`, `keys rotate`).
  for (const s of spans) {
    const c = COMMANDS.find((k) => s.text === k.name || s.text.startsWith(`${k.name} `));
    if (c) out.push({ at: at(s), kind: 'command', name: `connectors ${argsOf(s.text).join(' ')}` });
  }
  return out;
}

/** Unknown commands or flags among `mentions` (each a `connectors …` or `npm …` line). */
export function unknownCommands(mentions: Mention[], npmScripts: Set<string>): Mention[] {
  const bad: Mention[] = [];
  const GLOBAL = new Set(['--help', '-h', '--version', '-v']);
  for (const m of mentions) {
    if (m.kind === 'flag') {
      if (!GLOBAL.has(m.name.replace(/^connectors /, ''))) bad.push(m);
      continue;
    }
    const tokens = m.name.split(' ').slice(1);
    if (m.kind === 'command') {
      if (tokens[0]?.startsWith('<')) continue; // `connectors <command> --help`
      const c = COMMANDS.filter((k) => k.name.split(' ').every((w, i) => tokens[i] === w)).sort(
        (a, b) => b.name.length - a.name.length,
      )[0];
      if (!c) {
        bad.push(m);
        continue;
      }
      const allowed = new Set([...Object.keys(c.options).map((o) => `--${o}`), ...GLOBAL]);
      for (const f of flagsOf(tokens.slice(c.name.split(' ').length)))
        if (!allowed.has(f)) bad.push({ ...m, kind: 'flag', name: `connectors ${c.name} ${f}` });
      continue;
    }
    // npm: `npm ci`, `npm test`, `npm run <script> [-- flags]`.
    const [verb, script] = tokens;
    const named = verb === 'run' ? script! : verb!;
    if (['ci', 'install', 'i', 'view', 'exec'].includes(named) && verb !== 'run') continue;
    if (!npmScripts.has(named)) {
      bad.push({ ...m, name: `npm ${verb === 'run' ? `run ${named}` : named}` });
      continue;
    }
    const dash = tokens.indexOf('--');
    const options = named === 'bench' ? BENCH_OPTIONS : named === 'chaos' ? CHAOS_OPTIONS : null;
    if (dash < 0 || options === null) continue;
    const allowed = new Set(Object.keys(options).map((o) => `--${o}`));
    for (const f of flagsOf(tokens.slice(dash + 1)))
      if (!allowed.has(f)) bad.push({ ...m, kind: 'flag', name: `npm run ${named} -- ${f}` });
  }
  return bad;
}

/** Environment settings named in code spans and blocks. */
export function settingMentions(doc: Doc): Mention[] {
  const { blocks, spans } = splitMarkdown(doc.text);
  return [...blocks, ...spans].flatMap((p) =>
    [...p.text.matchAll(/\b(?:SERVICE|CHATAPP|CODEHOST|NATS|DATABASE|BENCH|TEST)_[A-Z0-9_]*[A-Z0-9]\b/g)].map((m) => ({
      at: `${doc.path}:${p.line}`,
      kind: 'setting' as const,
      name: m[0],
    })),
  );
}

const FILE_EXTENSIONS = new Set(['ts', 'js', 'mjs', 'md', 'json', 'yaml', 'yml', 'sql', 'conf', 'sh']);

/** `chatapp.*` / `codehost.*` / `chat.*` kinds named in code (emit kinds and graph node kinds). */
export function kindMentions(doc: Doc): Mention[] {
  const { blocks, spans } = splitMarkdown(doc.text);
  return [...blocks, ...spans].flatMap((p) =>
    [...p.text.matchAll(/(?<![\w./-])(?:chatapp|codehost|chat)\.([A-Za-z_]+)(?![\w/-])/g)]
      // Slack methods (`chat.postMessage`) and file names (`codehost.ts`) are not kinds.
      .filter((m) => !/[A-Z]/.test(m[1]!) && !FILE_EXTENSIONS.has(m[1]!))
      .map((m) => ({ at: `${doc.path}:${p.line}`, kind: 'emit or node kind' as const, name: m[0] })),
  );
}

/** Metric names, anywhere in the doc; `connector_service_ingest_*` names every metric it starts. */
export function metricMentions(doc: Doc): Mention[] {
  return doc.text.split('\n').flatMap((line, i) =>
    [...line.matchAll(/\bconnector_service_[a-z0-9_]*[a-z0-9](?:_\*)?/g)].map((m) => ({
      at: `${doc.path}:${i + 1}`,
      kind: 'metric' as const,
      name: m[0],
    })),
  );
}

/**
 * The first path segments of GitHub's REST API, which the docs name as what the service
 * calls (`GET /app/hook/deliveries`); every other `METHOD /path` is one of ours.
 */
const UPSTREAM_SEGMENTS = new Set(['app', 'repos', 'installation', 'installations', 'orgs', 'user', 'users']);

/**
 * Routes of ours named in code: `GET /path`, a curl of `$URL/path`, or a bare `/api/v1/…`
 * path (`…` at its end: any route under it).
 */
export function routeMentions(doc: Doc): Mention[] {
  const { blocks, spans } = splitMarkdown(doc.text);
  const out: Mention[] = [];
  const clean = (p: string) =>
    p
      .replace(/\[[^\]]*\]/g, '')
      .replace(/[?#].*$/, '')
      .replace(/[.,;:'"]+$/, '');
  for (const p of [...spans, ...blocks.flatMap(shellLines)]) {
    const at = `${doc.path}:${p.line}`;
    for (const m of p.text.matchAll(/\b(GET|POST|PUT|PATCH|DELETE)\s+(\/[^\s`'"|)]*)/g)) {
      const path = clean(m[2]!);
      if (!UPSTREAM_SEGMENTS.has(path.split('/')[1] ?? '')) out.push({ at, kind: 'route', name: `${m[1]} ${path}` });
    }
    for (const m of p.text.matchAll(/\$\{?URL\}?(\/[^\s'"]*)/g)) {
      const method = /\s-X\s+([A-Z]+)/.exec(p.text)?.[1] ?? 'GET';
      out.push({ at, kind: 'route', name: `${method} ${clean(m[1]!)}` });
    }
    if (/^\/api\/v1\/\S*$/.test(p.text)) out.push({ at, kind: 'route', name: `ANY ${clean(p.text)}` });
  }
  return out;
}

/** Does `path` (doc form: `{id}`, `$VAR`, `<x>` for parameters) name the route `url` (`:id`)? */
export function routeMatches(path: string, url: string): boolean {
  const a = path.replace(/\/$/, '').split('/');
  const b = url.replace(/\/$/, '').split('/');
  if (a.length !== b.length) return false;
  return a.every((s, i) => {
    const r = b[i]!;
    const param = /^(\{[^}]*\}|\$\w+|\$\{\w+\}|<[^>]*>)$/.test(s);
    return r.startsWith(':') || r === '*' ? param || s !== '' : s === r;
  });
}

/** Relative links `[text](target)` in prose: the target file, and its heading when a `#fragment` names one. */
function linkMentions(doc: Doc): Mention[] {
  return splitMarkdown(doc.text).prose.flatMap((p) =>
    [...p.text.matchAll(/\[[^\]]*\]\(([^)\s]+)\)/g)]
      .map((m) => m[1]!)
      .filter((t) => !/^[a-z][a-z0-9+.-]*:/i.test(t))
      .map((t) => ({ at: `${doc.path}:${p.line}`, kind: 'link' as const, name: t })),
  );
}

/** GitHub's anchors of a Markdown file's headings (outside code blocks). */
function anchorsOf(text: string): Set<string> {
  const slugger = new GithubSlugger();
  const anchors = new Set<string>();
  let inFence = false;
  for (const line of text.split('\n')) {
    if (/^\s*```/.test(line)) inFence = !inFence;
    const h = !inFence && /^#{1,6}\s+(.*)$/.exec(line);
    if (h) anchors.add(slugger.slug(h[1]!.replace(/`/g, '').trim()));
  }
  return anchors;
}

/** Links of `doc` whose file or heading does not exist. */
export function brokenLinks(doc: Doc): Mention[] {
  return linkMentions(doc).filter((m) => {
    const [file, fragment] = m.name.split('#') as [string, string | undefined];
    const target = file === '' ? join(ROOT, doc.path) : resolve(ROOT, dirname(doc.path), file);
    if (!target.startsWith(ROOT) || !existsSync(target)) return true;
    if (fragment === undefined || !target.endsWith('.md') || statSync(target).isDirectory()) return false;
    return !anchorsOf(readFileSync(target, 'utf8')).has(fragment);
  });
}

function sourceFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts'))
    .map((f) => join(ROOT, dir, f));
}

/** What the code has, read from the code. */
export interface CodeNames {
  npmScripts: Set<string>;
  /** The env schema's settings, and what the dev command, the bench and the tests read beside it. */
  settings: Set<string>;
  kinds: Set<string>;
  metrics: Set<string>;
  /** `METHOD url` of every route a node with both connectors and the admin endpoints mounts. */
  routes: { method: string; url: string }[];
}

export async function codeNames(): Promise<CodeNames> {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
  const read = (dir: string) => sourceFiles(dir).map((f) => readFileSync(f, 'utf8'));
  const envRead = ['src', 'bench', 'scripts', 'test']
    .flatMap(read)
    .flatMap((s) => [...s.matchAll(/\benv(?:\.|\[')([A-Z][A-Z0-9_]+)/g)].map((m) => m[1]!));
  // Metrics are defined with their name as a string literal (`name: '…'`, `gauge('…', …)`).
  const metrics = read('src').flatMap((s) => [...s.matchAll(/'(connector_service_[a-z0-9_]+)'/g)].map((m) => m[1]!));
  return {
    npmScripts: new Set(Object.keys(pkg.scripts)),
    settings: new Set([...Object.keys(envSchema.shape), ...envRead]),
    kinds: new Set<string>([...CODEHOST_EMIT_KINDS, ...CHAT_EMIT_KINDS, ...NODE_KINDS]),
    metrics: new Set(metrics),
    routes: await edgeRoutes(),
  };
}

/**
 * Builds the edge as a node with both connectors and the admin endpoints does (the routes
 * of every module in wiring/modules.ts) on ports that refuse every call: registering
 * routes calls nothing.
 */
async function edgeRoutes(): Promise<{ method: string; url: string }[]> {
  const masterKey = 'docs-check-master-key-0123456789abcdef';
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const config = loadConfig({
    SERVICE_MASTER_KEY: masterKey,
    CHATAPP_CLIENT_ID: 'client',
    CHATAPP_CLIENT_SECRET: 'secret',
    CHATAPP_SIGNING_SECRET: 'signing',
    CODEHOST_CONNECTOR_ENABLED: 'true',
    CODEHOST_APP_ID: '1',
    CODEHOST_APP_PRIVATE_KEY_PEM: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    CODEHOST_WEBHOOK_SECRET: 'webhook',
    SERVICE_INDEXER_DAEMON_URL_TEMPLATE: 'http://127.0.0.1:9/{install}/{repo}',
    SERVICE_ADMIN_ENDPOINTS: '1',
    SERVICE_ADMIN_API_TOKEN: 'admin',
  });
  const refuse = () => Promise.reject(new Error('the docs check calls nothing'));
  const kv: KvPort = { get: refuse, create: refuse, update: refuse, put: refuse, delete: refuse };
  const actors: ActorAsk = { ask: refuse };
  const pool = createPool('postgres://docs@127.0.0.1:9/docs');
  const log = pino({ level: 'silent' });
  const deps: ModuleDeps = {
    config,
    log,
    pool,
    requestPool: pool,
    cipher: CredentialCipher.fromMasterKey(masterKey),
    actors,
    publish: refuse,
    cursors: kv,
    dedup: kv,
    shardOf: (key) => shardOf(key, 4),
  };
  const metrics = createRuntimeMetrics(createMetricsRegistry());
  const drivers = new Map();
  const modules = [
    ...connectorModules.map((make) => make(deps)),
    ...serviceModules.map((make) =>
      make({
        ...deps,
        drivers,
        committer: nodeIngestCommitter(config, pool, drivers, log, metrics),
        feed: { publish: () => undefined },
        feedNotices: { wait: async () => undefined },
        effects: null,
        runtimeMetrics: metrics,
        ingest: { js: {} as JetStreamClient, names: makeNames(config.namespace), seal: createSeal([masterKey]) },
      }),
    ),
  ];
  const app = await buildEdge({
    config,
    log,
    db: pool,
    actors,
    resolveTenant: refuse,
    ready: async () => ({ ready: true, checks: {} }),
    metrics: createEdgeMetrics(createMetricsRegistry()),
    plugins: modules.flatMap((m) => (m.routes ? [{ plugin: m.routes }] : [])),
  });
  const routes = app.registeredRoutes.map((r) => ({ method: r.method, url: r.url }));
  await app.close();
  await pool.end();
  return routes;
}
