/**
 * The import-direction rules of eslint.config.js (docs/architecture.md "Layout") reach every
 * file of src/: each .ts file is in exactly one layer block, as ESLint itself matches them. A
 * file in no block is checked by no layer rule; a file in two keeps only the last block's rule.
 * The blocks are the config's objects that set `no-restricted-imports`; each is given to an
 * ESLint of its own, which answers whether it applies to a file.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { ESLint, type Linter } from 'eslint';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const RULE = 'no-restricted-imports';

/** Every .ts file under src/, relative to the repository root. */
const sourceFiles = readdirSync(join(ROOT, 'src'), { recursive: true, encoding: 'utf8' })
  .filter((f) => f.endsWith('.ts'))
  .map((f) => join('src', f))
  .sort();

/** The layer blocks of eslint.config.js, each named by its files. */
const layerBlocks = async () => {
  const config: Linter.Config[] = (await import(pathToFileURL(join(ROOT, 'eslint.config.js')).href)).default;
  return config.filter((block) => block.rules?.[RULE] !== undefined);
};

/** Whether `block` alone applies to `file`, as ESLint matches its files and ignores. */
const appliesTo = (block: Linter.Config) => {
  const eslint = new ESLint({ cwd: ROOT, overrideConfigFile: true, overrideConfig: [block] });
  return async (file: string) => {
    const merged = (await eslint.calculateConfigForFile(join(ROOT, file))) as Linter.Config | undefined;
    return merged?.rules?.[RULE] !== undefined;
  };
};

describe('layer blocks of eslint.config.js', () => {
  it('put every .ts file of src/ in exactly one block', async () => {
    const blocks = await layerBlocks();
    expect(blocks.length).toBeGreaterThan(10);
    expect(sourceFiles).toContain(join('src', 'backoff.ts'));
    const matchers = blocks.map((block) => ({ files: block.files, applies: appliesTo(block) }));
    const wrong: string[] = [];
    for (const file of sourceFiles) {
      const hits = [];
      for (const m of matchers) if (await m.applies(file)) hits.push(JSON.stringify(m.files));
      if (hits.length !== 1) wrong.push(`${file}: ${hits.length} blocks ${hits.join(' ')}`);
    }
    expect(wrong).toEqual([]);
  });
});
