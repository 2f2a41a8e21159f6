/**
 * Batch rows as JSON documents for `jsonb_to_recordset` (issue 12): one native stringify of
 * a batch, payloads and props nested as they are, instead of one text array per column that
 * the driver escapes element by element and Postgres parses twice (array, then jsonb).
 */
import type { QueryResultRow } from 'pg';
import type { Queryable } from './db.js';
import { jsonText } from './sanitize.js';

/** Characters of one JSON document of rows: jsonb holds at most 256 MB, a character up to 3 bytes. */
const JSON_ROWS_MAX_CHARS = 32 * 1024 * 1024;

/**
 * A batch's rows as JSON documents (each a JSON array) for jsonb_to_recordset: one document
 * for any usual batch, split between rows where a batch of large payloads would pass what
 * jsonb holds. A row larger than the limit goes alone (webhook bodies stay under 25 MiB).
 */
export function jsonRowChunks(rows: readonly unknown[], maxChars = JSON_ROWS_MAX_CHARS): string[] {
  let whole: string | null = null;
  try {
    whole = jsonText(rows);
  } catch (err) {
    // Past V8's longest string (about 512 M characters) as one text: row by row below.
    if (!(err instanceof RangeError)) throw err;
  }
  if (whole !== null && whole.length <= maxChars) return [whole];
  const chunks: string[] = [];
  let part: string[] = [];
  let size = 0;
  for (const row of rows) {
    const text = jsonText(row);
    if (part.length > 0 && size + text.length + 1 > maxChars) {
      chunks.push(`[${part.join(',')}]`);
      part = [];
      size = 0;
    }
    part.push(text);
    size += text.length + 1;
  }
  if (part.length > 0) chunks.push(`[${part.join(',')}]`);
  return chunks;
}

/**
 * Runs `sql` once per document of `rows` (one for any usual batch), the document bound by
 * `params`, in order; returns the returned rows and the affected count of all of them.
 */
export async function queryJsonRows<R extends QueryResultRow = QueryResultRow>(
  q: Queryable,
  rows: readonly unknown[],
  sql: string,
  params: (doc: string) => unknown[],
): Promise<{ rows: R[]; rowCount: number }> {
  const out: R[] = [];
  let rowCount = 0;
  for (const doc of jsonRowChunks(rows)) {
    const res = await q.query<R>(sql, params(doc));
    out.push(...res.rows);
    rowCount += res.rowCount ?? 0;
  }
  return { rows: out, rowCount };
}
