// Copies the non-TypeScript files the compiled service reads at run time into dist/,
// next to the modules that locate them via import.meta.url (src/store/migrate.ts, and the
// console's static files, src/edge/routes/console.ts).
import { cpSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const ASSET_DIRS = ['store/migrations', 'console'];

for (const dir of ASSET_DIRS) {
  cpSync(`${root}src/${dir}`, `${root}dist/${dir}`, { recursive: true });
}
