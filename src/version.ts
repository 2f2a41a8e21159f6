/** The package version (`connectors --version`, the OpenAPI document, the build info metric). */
import { readFileSync } from 'node:fs';

let cached: string | undefined;

/** package.json sits one level up from both `src/` and `dist/`. */
export function packageVersion(): string {
  cached ??= (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string })
    .version;
  return cached;
}
