/**
 * Applies the plain SQL files of `migrations/` in name order, each once, each in its own
 * transaction (INTERFACE §1: `migrate` is idempotent; `serve` also runs it on start).
 *
 * Several nodes may start at once against one database, so the whole run holds a session
 * advisory lock on one client: the second node waits, then finds nothing pending.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Pool, PoolClient } from 'pg';

/** Fixed key of the migration advisory lock (any bigint; this one is ours alone). */
const LOCK_KEY = '7263540184420551009';

const FILE_NAME = /^(\d{3,}_[a-z0-9_]+)\.sql$/;

/**
 * Beside this module both as `src/store/migrate.ts` (tsx, vitest) and as
 * `dist/store/migrate.js` (the build copies the SQL files, scripts/copy-assets.mjs).
 */
export const MIGRATIONS_DIR = fileURLToPath(new URL('./migrations/', import.meta.url));

export interface MigrateOptions {
  /** Another directory of migrations (tests). */
  dir?: string;
}

export interface MigrateResult {
  /** Names (file name without `.sql`) applied by this call, in order. */
  applied: string[];
}

class MigrationError extends Error {
  constructor(
    readonly migration: string,
    cause: unknown,
  ) {
    super(`migration ${migration} failed: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    this.name = 'MigrationError';
  }
}

export async function migrate(pool: Pool, opts: MigrateOptions = {}): Promise<MigrateResult> {
  const files = await listMigrations(opts.dir ?? MIGRATIONS_DIR);
  const client = await pool.connect();
  try {
    // Waiting for another node's long migration must not trip the pool's statement timeout.
    await client.query('SET statement_timeout = 0');
    await client.query('SELECT pg_advisory_lock($1::bigint)', [LOCK_KEY]);
    try {
      return await applyPending(client, files);
    } finally {
      await client.query('SELECT pg_advisory_unlock($1::bigint)', [LOCK_KEY]);
    }
  } finally {
    // Destroy rather than return the client: its session settings go with it, and if the
    // unlock above failed the lock is released when the connection closes.
    client.release(true);
  }
}

async function applyPending(client: PoolClient, files: Array<{ name: string; path: string }>): Promise<MigrateResult> {
  // A role without CREATE on the schema (the service's own role, deploy/) may still run
  // `serve` once an owner migrated: only create the table when it is missing.
  const exists = await client.query<{ t: string | null }>(`SELECT to_regclass('schema_migrations')::text AS t`);
  if (exists.rows[0]?.t == null)
    await client.query(`
    CREATE TABLE IF NOT EXISTS schema_migrations (
      name       text PRIMARY KEY,
      applied_at timestamptz NOT NULL DEFAULT now()
    )`);
  const done = new Set(
    (await client.query<{ name: string }>('SELECT name FROM schema_migrations')).rows.map((r) => r.name),
  );
  const applied: string[] = [];
  for (const file of files) {
    if (done.has(file.name)) continue;
    const sql = await readFile(file.path, 'utf8');
    try {
      await client.query('BEGIN');
      await client.query(sql);
      await client.query('INSERT INTO schema_migrations (name) VALUES ($1)', [file.name]);
      await client.query('COMMIT');
    } catch (err) {
      // A failed ROLLBACK means a dead connection; the original error is the one to report.
      await client.query('ROLLBACK').catch(() => undefined);
      throw new MigrationError(file.name, err);
    }
    applied.push(file.name);
  }
  return { applied };
}

/** The migration files of `dir`, sorted by name; a stray file name is an error, not skipped. */
export async function listMigrations(dir: string): Promise<Array<{ name: string; path: string }>> {
  const entries = (await readdir(dir)).filter((f) => f.endsWith('.sql')).sort();
  return entries.map((f) => {
    const m = FILE_NAME.exec(f);
    if (!m) throw new Error(`migration file name ${f} does not match NNN_name.sql`);
    return { name: m[1]!, path: join(dir, f) };
  });
}
