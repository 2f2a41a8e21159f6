/**
 * Where a word is stored (INTERFACE §10.5 tests): every text, JSON, bytea and tsvector column
 * of every table of the schema, enumerated from the catalog, so a table added later is
 * searched too. Answers `table.column` for each column holding it. Run as the test's
 * owner login, which row-level security does not fence.
 */
import type { Pool } from 'pg';

const TYPES = ['text', 'character varying', 'json', 'jsonb', 'bytea', 'tsvector', 'ARRAY'];

export async function columnsHolding(pool: Pool, word: string): Promise<string[]> {
  const { rows: cols } = await pool.query<{ table_name: string; column_name: string; data_type: string }>(
    `SELECT c.table_name, c.column_name, c.data_type FROM information_schema.columns c
       JOIN pg_tables t ON t.schemaname = c.table_schema AND t.tablename = c.table_name
      WHERE c.table_schema = 'public' AND c.data_type = ANY($1::text[])`,
    [TYPES],
  );
  const hits: string[] = [];
  for (const c of cols) {
    const col = `"${c.column_name}"`;
    const cond =
      c.data_type === 'bytea'
        ? `position(convert_to($1, 'UTF8') IN ${col}) > 0`
        : `strpos(lower(${col}::text), lower($1)) > 0`;
    const { rows } = await pool.query(`SELECT 1 FROM "${c.table_name}" WHERE ${cond} LIMIT 1`, [word]);
    if (rows.length > 0) hits.push(`${c.table_name}.${c.column_name}`);
  }
  return hits;
}
