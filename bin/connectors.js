#!/usr/bin/env node
// Thin launcher: the CLI is compiled to dist/ by `npm run build`. Tracing (OTEL_*) starts
// first, before the CLI's modules load (dist/telemetry/preload.js says why).
import('../dist/telemetry/preload.js')
  .then(() => import('../dist/cli.js'))
  .then((m) => m.main(process.argv.slice(2)))
  .catch((err) => {
    process.stderr.write(`connectors: ${err && err.message ? err.message : String(err)}\n`);
    process.exitCode = 1;
  });
