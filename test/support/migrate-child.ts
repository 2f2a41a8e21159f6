/**
 * Runs `migrate` once in its own OS process and prints `{"applied": [...]}`: the
 * concurrency test starts two of these at once against one empty database.
 * Usage: npx tsx test/support/migrate-child.ts <database-url>
 */
import { createPool } from '../../src/store/db.js';
import { migrate } from '../../src/store/migrate.js';

const url = process.argv[2];
if (!url) {
  process.stderr.write('usage: migrate-child.ts <database-url>\n');
  process.exit(2);
}
const pool = createPool(url, { max: 2, applicationName: `migrate-child-${process.pid}` });
try {
  const result = await migrate(pool);
  process.stdout.write(`${JSON.stringify(result)}\n`);
} catch (err) {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 1;
} finally {
  await pool.end();
}
