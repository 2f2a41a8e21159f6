/**
 * Runs before each test file (vitest setupFiles): a file outside test/unit and test/actor gets a
 * database of its own (file-database.ts), dropped when the file ends.
 */
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { afterAll, expect, inject } from 'vitest';
import { createFileDatabase } from './file-database.js';
import { useFileDatabase } from './env.js';

const file = path.relative(process.cwd(), expect.getState().testPath ?? '');
if (!/^test[/\\](unit|actor)[/\\]/.test(file)) {
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
