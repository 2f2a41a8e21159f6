import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { listMigrations, migrate, MIGRATIONS_DIR } from '../../src/store/migrate.js';
import { testAdminDatabaseUrl } from '../support/env.js';
import { createTempDatabase, type TempDatabase } from '../support/migrate-temp-db.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

async function tempDb(label: string): Promise<TempDatabase> {
  const db = await createTempDatabase(testAdminDatabaseUrl(), label);
  cleanups.push(() => db.drop());
  return db;
}

function poolFor(url: string): pg.Pool {
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  // The database is dropped WITH (FORCE) right after: a client still closing must not
  // surface the server's goodbye as an uncaught error.
  pool.on('error', () => undefined);
  pool.on('connect', (client) => client.on('error', () => undefined));
  cleanups.push(() => pool.end());
  return pool;
}

const allNames = async () => (await listMigrations(MIGRATIONS_DIR)).map((m) => m.name);

const TABLES = [
  'tenants',
  'api_keys',
  'users',
  'installs',
  'credentials',
  'events',
  'emitted_events',
  'dead_letters',
  'ingest_blobs',
];

describe('migrate', () => {
  it('builds the schema from an empty database, then applies nothing a second time', async () => {
    const pool = poolFor((await tempDb('fresh')).url);
    const names = await allNames();
    expect(names[0]).toBe('001_schema');

    expect(await migrate(pool)).toEqual({ applied: names });
    const { rows } = await pool.query<{ table_name: string }>(
      "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'",
    );
    expect(rows.map((r) => r.table_name)).toEqual(expect.arrayContaining([...TABLES, 'schema_migrations']));

    expect(await migrate(pool)).toEqual({ applied: [] });
    const recorded = await pool.query('SELECT name FROM schema_migrations ORDER BY name');
    expect(recorded.rows.map((r) => r.name)).toEqual(names);
  });

  it('is safe when two processes migrate one empty database at once', async () => {
    const db = await tempDb('race');
    const run = () =>
      new Promise<{ code: number | null; out: string; err: string }>((resolve) => {
        const child = spawn('npx', ['tsx', 'test/support/migrate-child.ts', db.url], {
          cwd: process.cwd(),
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let out = '';
        let err = '';
        child.stdout.on('data', (d) => (out += d));
        child.stderr.on('data', (d) => (err += d));
        child.on('close', (code) => resolve({ code, out, err }));
      });
    const [a, b] = await Promise.all([run(), run()]);
    expect(a.code, a.err).toBe(0);
    expect(b.code, b.err).toBe(0);

    const names = await allNames();
    const applied = [a, b].map((r) => (JSON.parse(r.out.trim().split('\n').pop()!) as { applied: string[] }).applied);
    // Exactly one of them did the work; the other waited on the lock and found nothing.
    expect(applied.map((x) => x.length).sort()).toEqual([0, names.length]);

    const pool = poolFor(db.url);
    const { rows } = await pool.query<{ name: string; n: string }>(
      'SELECT name, count(*) AS n FROM schema_migrations GROUP BY name ORDER BY name',
    );
    expect(rows).toEqual(names.map((name) => ({ name, n: '1' })));
  }, 60_000);

  it('rolls back a failing migration, records nothing for it, and names it', async () => {
    const pool = poolFor((await tempDb('broken')).url);
    const dir = await mkdtemp(join(tmpdir(), 'migrations-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    await writeFile(join(dir, '001_ok.sql'), 'CREATE TABLE ok_table (id int);');
    await writeFile(join(dir, '002_bad.sql'), 'CREATE TABLE half_done (id int);\nSELECT no_such_column FROM ok_table;');

    await expect(migrate(pool, { dir })).rejects.toMatchObject({ name: 'MigrationError', migration: '002_bad' });
    const recorded = await pool.query('SELECT name FROM schema_migrations');
    expect(recorded.rows.map((r) => r.name)).toEqual(['001_ok']);
    const half = await pool.query("SELECT to_regclass('half_done') AS t");
    expect(half.rows[0].t).toBeNull();

    // Fixed, it applies on the next run.
    await writeFile(join(dir, '002_bad.sql'), 'CREATE TABLE half_done (id int);');
    expect(await migrate(pool, { dir })).toEqual({ applied: ['002_bad'] });
  });

  it('refuses a stray file name instead of skipping it', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'migrations-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    await writeFile(join(dir, 'schema.sql'), 'SELECT 1;');
    await expect(listMigrations(dir)).rejects.toThrow(/NNN_name\.sql/);
  });
});
