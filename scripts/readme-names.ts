// Regenerates the README's NATS table from src/runtime/names.ts: `npx tsx scripts/readme-names.ts`.
import { readFileSync, writeFileSync } from 'node:fs';
import { describeNames } from '../src/runtime/names.js';

const rows = describeNames()
  .map((r) => `| \`${r.name}\` | ${r.what} | \`${r.watch}\` |`)
  .join('\n');
const s = readFileSync('README.md', 'utf8');
writeFileSync(
  'README.md',
  s.replace(
    /(<!-- names:start -->\n\| Name \| What \| Watch \|\n\|---\|---\|---\|\n)[\s\S]*?(<!-- names:end -->)/,
    (_m, a: string, b: string) => `${a}${rows}\n${b}`,
  ),
);
