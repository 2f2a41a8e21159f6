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
const ENTRY = [{ regex: '(^|/)(cli|dev)(/|\\.js$)' }, { regex: '(^|/)node\\.js$' }];

/**
 * ARCHITECTURE.md "Layout": wiring → edge | actors → ingest → connectors → graph → store → runtime.
 * Contracts (`runtime/ports.ts`) may be imported from every layer; the rest of `runtime/`
 * (NATS) only from actors, edge, wiring and the entry points.
 */
const direction = [
  {
    files: ['src/edge/**/*.ts'],
    message: 'the edge reaches actors through ActorAsk and their protocol files, never their code',
    patterns: [...ENTRY, layer('wiring'), layer('actors', 'install-protocol.js')],
  },
  {
    files: ['src/actors/**/*.ts'],
    message: 'actors import ingest, connectors, graph, store and runtime only',
    patterns: [...ENTRY, layer('wiring'), layer('edge')],
  },
  {
    files: ['src/ingest/**/*.ts'],
    message: 'the ingest path imports connectors, graph, store and runtime only: actors are reached through the kernel',
    patterns: [...ENTRY, layer('wiring'), layer('edge'), layer('actors')],
  },
  {
    files: ['src/connectors/**/*.ts'],
    message: 'connector code is platform code: no actors, routes, wiring, nor NATS beyond runtime/ports.ts',
    patterns: [
      ...ENTRY,
      layer('wiring'),
      layer('edge'),
      layer('actors'),
      layer('ingest'),
      layer('runtime', 'ports.js'),
    ],
  },
  {
    files: ['src/graph/**/*.ts'],
    message: 'the graph imports store and runtime only',
    patterns: [...ENTRY, layer('wiring'), layer('edge'), layer('actors'), layer('ingest'), layer('connectors')],
  },
  {
    files: ['src/store/**/*.ts'],
    message: 'the store imports runtime contracts only',
    patterns: [
      ...ENTRY,
      layer('wiring'),
      layer('edge'),
      layer('actors'),
      layer('ingest'),
      layer('connectors'),
      layer('graph'),
      layer('runtime', 'ports.js'),
    ],
  },
  {
    files: ['src/runtime/**/*.ts'],
    message: 'runtime knows NATS and nothing of Slack, GitHub, SQL, routes or the ingest path',
    patterns: [
      ...ENTRY,
      layer('wiring'),
      layer('edge'),
      layer('actors'),
      layer('ingest'),
      layer('connectors'),
      layer('graph'),
      layer('store'),
    ],
  },
  {
    files: ['src/telemetry/**/*.ts'],
    message: 'tracing is used by every layer and imports none of them (only the root files)',
    patterns: [
      ...ENTRY,
      layer('wiring'),
      layer('edge'),
      layer('actors'),
      layer('ingest'),
      layer('connectors'),
      layer('graph'),
      layer('store'),
      layer('runtime'),
    ],
  },
].map(({ files, message, patterns }) => ({
  files,
  rules: { 'no-restricted-imports': ['error', { patterns: patterns.map((p) => ({ ...p, message })) }] },
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
