/**
 * Migration 018 on a graph that already has nodes: every existing node gets the new vector
 * (one configuration, stems with stop words kept), searchable as graph_search_page queries
 * it, and the planner has statistics for the new column at once.
 */
import { copyFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listMigrations, migrate, MIGRATIONS_DIR } from '../../src/store/migrate.js';
import { testAdminDatabaseUrl } from '../support/env.js';
import { createTempDatabase, type TempDatabase } from '../support/migrate-temp-db.js';

const TEXTS = ['Deploying the café release tonight', 'the alpha build is green', 'nothing to see'];
let db: TempDatabase;
let pool: pg.Pool;
let dir: string;
let tenantId: string;

beforeAll(async () => {
  db = await createTempDatabase(testAdminDatabaseUrl(), 'search018');
  pool = new pg.Pool({ connectionString: db.url, max: 2 });
  pool.on('error', () => undefined);
  dir = await mkdtemp(join(tmpdir(), 'migrations-017-'));
  for (const m of await listMigrations(MIGRATIONS_DIR)) {
    if (m.name < '018') await copyFile(join(MIGRATIONS_DIR, `${m.name}.sql`), join(dir, `${m.name}.sql`));
  }
  expect((await migrate(pool, { dir })).applied.at(-1)).toBe('017_graph_search_fenced');
  const { rows } = await pool.query<{ tenant_id: string; install_id: string }>(
    `WITH t AS (INSERT INTO tenants (name) VALUES ('t') RETURNING tenant_id)
     INSERT INTO installs (tenant_id, connector_id, status, external_id)
     SELECT tenant_id, 'chatapp', 'active', 'T018' FROM t RETURNING tenant_id, install_id`,
  );
  const { tenant_id, install_id } = rows[0]!;
  tenantId = tenant_id;
  for (const [i, text] of TEXTS.entries()) {
    await pool.query(
      `INSERT INTO graph_nodes (tenant_id, kind, external_id, connector_id, install_id, search_text)
       VALUES ($1, 'chat.message', $2, 'chatapp', $3, $4)`,
      [tenant_id, `T018:C1:${i}`, install_id, text],
    );
  }
}, 60_000);

afterAll(async () => {
  await pool?.end();
  await db?.drop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('migration 018 on existing nodes', () => {
  it('rewrites every vector, keeps search working and leaves statistics', async () => {
    expect((await migrate(pool)).applied).toEqual(
      (await listMigrations(MIGRATIONS_DIR)).map((m) => m.name).filter((n) => n >= '018'),
    );
    const stale = await pool.query(
      `SELECT 1 FROM graph_nodes WHERE search IS DISTINCT FROM to_tsvector('public.connectors_search', search_text)`,
    );
    expect(stale.rowCount).toBe(0);
    const search = async (q: string) => {
      const { rows } = await pool.query<{ search_text: string }>(
        `SELECT n.search_text FROM graph_search_page($1, $2, '{}', '', NULL, NULL, NULL, 10) s
         JOIN graph_nodes n ON n.node_id = s.node_id ORDER BY n.search_text`,
        [tenantId, q],
      );
      return rows.map((r) => r.search_text);
    };
    expect(await search('deploy')).toEqual(['Deploying the café release tonight']);
    expect(await search('the')).toEqual(['Deploying the café release tonight', 'the alpha build is green']);
    expect(await search('an alpha build')).toEqual(['the alpha build is green']);
    const stats = await pool.query(`SELECT 1 FROM pg_stats WHERE tablename = 'graph_nodes' AND attname = 'search'`);
    expect(stats.rowCount).toBe(1);
  });
});
