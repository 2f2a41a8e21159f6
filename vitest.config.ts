import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  // The package's own `exports` entry, read from source so tests need no build.
  resolve: {
    alias: { 'connector-service/testing': fileURLToPath(new URL('./src/testing/index.ts', import.meta.url)) },
  },
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Integration tests start processes and servers; keep the 2-core machine responsive.
    maxWorkers: 2,
    globalSetup: ['test/global-setup.ts'],
    setupFiles: ['test/support/file-setup.ts'],
    reporters: ['default', './test/support/summary-reporter.ts'],
  },
});
