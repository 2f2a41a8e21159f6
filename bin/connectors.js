#!/usr/bin/env node
// Thin launcher: the CLI is compiled to dist/ by `npm run build`.
import('../dist/cli.js').then((m) => m.main(process.argv.slice(2))).catch((err) => {
  process.stderr.write(`connectors: ${err && err.message ? err.message : String(err)}\n`);
  process.exitCode = 1;
});
