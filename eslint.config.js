// ESLint (flat config): the recommended rules of ESLint and typescript-eslint, plus the
// import direction of ARCHITECTURE.md "Layout", enforced on src/ with ESLint's own
// no-restricted-imports (one block per layer, matching the import specifiers). Prettier
// owns formatting; nothing here is about layout of text.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/** An import of another layer's folder, e.g. `../store/db.js` or `../../actors/install.js`. */
const layer = (name, except) => ({
  regex: except ? `(^|/)${name}/(?!${except.replaceAll('.', '\\.')}$)` : `(^|/)${name}/`,
});
/** An import of an actor's code; its protocol file (`*-protocol.js`, the contract callers ask it by) is allowed. */
const actorCode = { regex: '(^|/)actors/(?!(.*/)?[^/]*-protocol\\.js$)' };
/** The entry points: the command (cli), `connectors dev` (dev) and the node's composition (node.ts, node/). */
const ENTRY = [{ regex: '(^|/)(cli|dev|node)(/|\\.js$)' }];
/** The published fakes (`connector-service/testing`): only `connectors dev` runs them. */
const TESTING = layer('testing');
/** The layers below the entry points, top down. */
const LAYERS = ['wiring', 'edge', 'actors', 'ingest', 'effects', 'connectors', 'graph', 'store', 'runtime'];
/** Every layer above `name` in LAYERS. */
const above = (name) => LAYERS.slice(0, LAYERS.indexOf(name)).map((l) => layer(l));
/** nact is reached only through its adapter, the kernel (runtime/kernel.ts, runtime/activation.ts). */
const NACT_ADAPTER = ['src/runtime/kernel.ts', 'src/runtime/activation.ts'];
const NACT = { name: 'nact', message: 'nact is used only behind the actor kernel (runtime/kernel.ts)' };

/**
 * ARCHITECTURE.md "Layout": (cli → dev →) node → wiring → edge | actors → ingest | effects → connectors →
 * graph → store → runtime, every one of them over the root files (config, errors, log) and
 * telemetry. Contracts (`runtime/ports.ts`) may be imported from every layer; the rest of
 * `runtime/` (NATS) only from actors, edge, ingest, wiring and the entry points. Every .ts file of
 * src/ is in exactly one block below (a file in two would keep only the last block's rule);
 * test/unit/layer-blocks.test.ts fails on a file in none or in two.
 */
const direction = [
  {
    files: ['src/cli.ts', 'src/cli/**/*.ts'],
    message: 'the command runs nodes and dev, never the fakes themselves',
    patterns: [TESTING],
  },
  {
    files: ['src/dev/**/*.ts'],
    message: '`connectors dev` starts a node with the fakes; it is not reached from the command layer down',
    patterns: [{ regex: '(^|/)cli(/|\\.js$)' }],
  },
  {
    files: ['src/node.ts', 'src/node/**/*.ts'],
    message: 'a node composes the layers below it, never the command, dev or the fakes',
    patterns: [{ regex: '(^|/)(cli|dev)(/|\\.js$)' }, TESTING],
  },
  {
    files: ['src/wiring/**/*.ts'],
    message: 'wiring composes the layers below it, never the entry points or the fakes',
    patterns: [...ENTRY, TESTING],
  },
  {
    files: ['src/edge/**/*.ts'],
    message: 'the edge reaches actors through ActorAsk and their protocol files, never their code',
    patterns: [...ENTRY, TESTING, layer('wiring'), layer('actors', 'install-protocol.js')],
  },
  {
    files: ['src/actors/**/*.ts'],
    message: 'actors import ingest, connectors, graph, store and runtime only',
    patterns: [...ENTRY, TESTING, layer('wiring'), layer('edge')],
  },
  {
    files: ['src/ingest/**/*.ts'],
    message: 'the ingest path imports connectors, graph, store and runtime only: actors are reached through the kernel',
    patterns: [...ENTRY, TESTING, layer('wiring'), layer('edge'), layer('actors'), layer('effects')],
  },
  {
    files: ['src/effects/**/*.ts'],
    message: 'effects import connectors, graph, store and runtime, and ask actors through their protocol files only',
    patterns: [...ENTRY, TESTING, layer('wiring'), layer('edge'), actorCode, layer('ingest')],
  },
  {
    files: ['src/connectors/**/*.ts'],
    message: 'connector code is platform code: no actors, routes, wiring, nor NATS beyond runtime/ports.ts',
    patterns: [
      ...ENTRY,
      TESTING,
      layer('wiring'),
      layer('edge'),
      layer('actors'),
      layer('ingest'),
      layer('effects'),
      layer('runtime', 'ports.js'),
    ],
  },
  {
    files: ['src/graph/**/*.ts'],
    message: 'the graph imports store and runtime only',
    patterns: [...ENTRY, TESTING, ...above('graph')],
  },
  {
    files: ['src/store/**/*.ts'],
    message: 'the store imports runtime contracts only',
    patterns: [...ENTRY, TESTING, ...above('store'), layer('runtime', 'ports.js')],
  },
  {
    files: ['src/runtime/**/*.ts'],
    ignores: NACT_ADAPTER,
    message: 'runtime knows NATS and nothing of Slack, GitHub, SQL, routes or the ingest path',
    patterns: [...ENTRY, TESTING, ...above('runtime')],
  },
  {
    files: NACT_ADAPTER,
    nact: true,
    message: 'runtime knows NATS and nothing of Slack, GitHub, SQL, routes or the ingest path',
    patterns: [...ENTRY, TESTING, ...above('runtime')],
  },
  {
    files: ['src/telemetry/**/*.ts'],
    message: 'tracing is used by every layer and imports none of them (only the root files)',
    patterns: [...ENTRY, TESTING, ...LAYERS.map((l) => layer(l))],
  },
  {
    // Every file at the root of src/ but the two entry points above, so a new root file cannot be missed.
    files: ['src/*.ts'],
    ignores: ['src/cli.ts', 'src/node.ts'],
    message: 'the root files (settings, errors, log) are under every layer: they import only each other and telemetry',
    patterns: [...ENTRY, TESTING, ...LAYERS.map((l) => layer(l))],
  },
  {
    files: ['src/testing/**/*.ts'],
    message: 'the fakes are published on their own (connector-service/testing): they import nothing of the service',
    patterns: [{ regex: '^\\.\\./' }],
  },
].map(({ files, ignores, nact, message, patterns }) => ({
  files,
  ...(ignores ? { ignores } : {}),
  rules: {
    'no-restricted-imports': [
      'error',
      { paths: nact ? [] : [NACT], patterns: patterns.map((p) => ({ ...p, message })) },
    ],
  },
}));

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', '.data/**', 'coverage/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  ...direction,
  // The console's browser modules: tsc checks their names against the DOM's (tsconfig.console.json),
  // as typescript-eslint advises for typed code, so ESLint's own no-undef (which knows no browser) stays off.
  { files: ['src/console/**/*.js'], rules: { 'no-undef': 'off' } },
  // Tests read JSON bodies of fakes and responses loosely; the service's own code may not.
  { files: ['test/**/*.ts'], rules: { '@typescript-eslint/no-explicit-any': 'off' } },
);
