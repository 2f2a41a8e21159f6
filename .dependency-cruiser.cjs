/**
 * Import cycles among the service's files (docs/architecture.md "Layout"): ESLint's layer
 * rules see one import at a time; a cycle is seen only across files. A cycle made only of
 * type imports vanishes when compiled and is not counted.
 */
module.exports = {
  forbidden: [
    {
      name: 'no-cycle',
      severity: 'error',
      comment: 'files that import each other, directly or around a circle: move what both need below both',
      from: { path: '^src/' },
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    exclude: { path: '^src/console/' },
  },
};
