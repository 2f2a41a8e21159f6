// ESLint (flat config): the recommended rules of ESLint and typescript-eslint, plus the
// import direction of ARCHITECTURE.md "Layout", enforced on src/ by import-x's
// no-restricted-paths. Prettier owns formatting; nothing here is about layout of text.
import js from '@eslint/js';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';
import importX from 'eslint-plugin-import-x';
import tseslint from 'typescript-eslint';

/** Everything above a layer: a layer imports only what is listed after it in ARCHITECTURE.md. */
const ENTRY = ['./src/cli.ts', './src/node.ts', './src/cli', './src/dev'];

/**
 * ARCHITECTURE.md "Layout": wiring → edge | actors → connectors → graph → store → runtime.
 * Contracts (`runtime/ports.ts`) may be imported from every layer; the rest of `runtime/`
 * (NATS) only from actors, edge, wiring and the entry points.
 */
const zones = [
  { target: './src/wiring', from: ENTRY, message: 'wiring is imported only by the entry points' },
  {
    target: './src/edge',
    from: [...ENTRY, './src/wiring'],
    message: 'the edge is imported only by wiring and the entry points',
  },
  {
    target: './src/edge',
    from: './src/actors',
    except: ['./install-protocol.ts'],
    message: 'the edge reaches actors through ActorAsk and their protocol files, never their code',
  },
  {
    target: './src/actors',
    from: [...ENTRY, './src/wiring', './src/edge'],
    message: 'actors import connectors, graph, store and runtime only',
  },
  {
    target: './src/connectors',
    from: [...ENTRY, './src/wiring', './src/edge', './src/actors'],
    message: 'connector code is platform code: no actors, routes or wiring',
  },
  {
    target: './src/connectors',
    from: './src/runtime',
    except: ['./ports.ts'],
    message: 'connector code knows nothing of NATS: use the contracts in runtime/ports.ts',
  },
  {
    target: './src/graph',
    from: [...ENTRY, './src/wiring', './src/edge', './src/actors', './src/connectors'],
    message: 'the graph imports store and runtime only',
  },
  {
    target: './src/store',
    from: [...ENTRY, './src/wiring', './src/edge', './src/actors', './src/connectors', './src/graph'],
    message: 'the store imports runtime contracts only',
  },
  {
    target: './src/store',
    from: './src/runtime',
    except: ['./ports.ts'],
    message: 'the store implements runtime/ports.ts and knows nothing else of NATS',
  },
  {
    target: './src/runtime',
    from: [...ENTRY, './src/wiring', './src/edge', './src/actors', './src/connectors', './src/graph', './src/store'],
    message: 'runtime knows NATS and nothing of Slack, GitHub, SQL or routes',
  },
];

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', '.data/**', 'coverage/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    plugins: { 'import-x': importX },
    settings: {
      'import-x/resolver-next': [createTypeScriptImportResolver({ project: './tsconfig.json' })],
    },
    rules: {
      'import-x/no-restricted-paths': ['error', { zones }],
      'import-x/no-duplicates': 'error',
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  // Tests read JSON bodies of fakes and responses loosely; the service's own code may not.
  { files: ['test/**/*.ts'], rules: { '@typescript-eslint/no-explicit-any': 'off' } },
);
