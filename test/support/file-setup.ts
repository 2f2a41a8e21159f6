/**
 * Runs before each test file (vitest setupFiles): a file outside test/unit and test/actor gets a
 * database of its own (file-database.ts), dropped when the file ends.
 *
 * A file that traces (it imports support/tracing.js first) has tracing started here, before this
 * setup loads `pg`: the pg instrumentation patches pg only as it loads.
 */
import { readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { afterAll, expect, inject } from 'vitest';

const testPath = expect.getState().testPath ?? '';
const file = path.relative(process.cwd(), testPath);
if (testPath && /from '\.\.\/support\/tracing\.js'/.test(readFileSync(testPath, 'utf8'))) {
  await import('./tracing.js');
}
if (!/^test[/\\](unit|actor)[/\\]/.test(file)) {
  const { createFileDatabase } = await import('./file-database.js');
  const { useFileDatabase } = await import('./env.js');
  const db = await createFileDatabase({
    adminUrl: inject('adminDatabaseUrl'),
    templateUrl: inject('databaseUrl'),
    appUrl: inject('appDatabaseUrl'),
    suffix: `f${randomBytes(3).toString('hex')}`,
  });
  useFileDatabase(db);
  afterAll(async () => {
    if (!process.env.KEEP_TEST_DB) await db.drop();
  });
}
