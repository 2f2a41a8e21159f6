/**
 * Migration 016's `search_cjk` (INTERFACE §9.5) against the query side's CJK class: Postgres
 * keeps in the column exactly the runs the query splits `q` into (src/graph/cjk-query.ts),
 * for every code point and at every boundary of the class; a `q` run matches within one run
 * of the text only; the trigram index is the partial one on search_cjk.
 */
import type { Pool } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CJK_RANGES } from '../../src/graph/cjk-ranges.js';
import { cjkRuns } from '../../src/graph/cjk-query.js';
import { listNodes } from '../../src/graph/queries.js';
import { createPool } from '../../src/store/db.js';
import { testDatabaseUrl } from '../support/env.js';
import { graphDb } from '../support/graph-db.js';

let pool: Pool;
let g: ReturnType<typeof graphDb>;
beforeAll(() => {
  pool = createPool(testDatabaseUrl(), { max: 4 });
  g = graphDb(pool);
});
afterAll(() => pool.end());

const TEAM = 'T0CJKCOL';

/** What search_cjk must hold for a text: its CJK runs as the query finds them, or NULL. */
const expectedColumn = (text: string) => cjkRuns(text).join(' ') || null;

const isSurrogate = (cp: number) => cp >= 0xd800 && cp <= 0xdfff;

/** Each range's first and last code point and their outside neighbours. */
const BOUNDARY_TEXT = String.fromCodePoint(
  ...CJK_RANGES.flatMap(([a, b]) => [a - 1, a, b, b + 1]).filter((cp) => cp > 0x20 && !isSurrogate(cp)),
);

describe('graph: the search_cjk column agrees with the query side (INTERFACE §9.5, migration 016)', () => {
  it("the column's own expression keeps exactly the code points the query's CJK class has, all of Unicode", async () => {
    const { rows: expr } = await pool.query<{ expr: string }>(
      `SELECT pg_get_expr(d.adbin, d.adrelid) AS expr FROM pg_attrdef d
       JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum
       WHERE d.adrelid = 'graph_nodes'::regclass AND a.attname = 'search_cjk' AND a.attgenerated = 's'`,
    );
    expect(expr).toHaveLength(1);
    // The catalog's expression reads a column named search_text: give it one per code point.
    // A CJK one must be kept as it is, any other must give NULL (`odd` counts neither).
    const { rows } = await pool.query<{ a: number; b: number; odd: string }>(
      `WITH v AS (
         SELECT cp, search_text, (${expr[0]!.expr}) AS kept FROM (
           SELECT cp, chr(cp) AS search_text FROM generate_series(1, 1114111) cp WHERE cp NOT BETWEEN 55296 AND 57343
         ) s
       )
       SELECT min(cp) AS a, max(cp) AS b, (SELECT count(*) FROM v WHERE kept <> search_text) AS odd FROM (
         SELECT cp, cp - row_number() OVER (ORDER BY cp) AS grp FROM v WHERE kept = search_text
       ) t GROUP BY grp ORDER BY 1`,
    );
    expect(rows[0]?.odd).toBe('0');
    const js: Array<[number, number]> = [];
    for (let cp = 1; cp <= 0x10ffff; cp++) {
      if (isSurrogate(cp) || cjkRuns(String.fromCodePoint(cp)).length === 0) continue;
      const last = js.at(-1);
      if (last && last[1] === cp - 1) last[1] = cp;
      else js.push([cp, cp]);
    }
    expect(rows.map((r) => [r.a, r.b])).toEqual(js);
  });

  it('a projected node stores its CJK runs (boundaries included), NULL without any, and follows a text change', async () => {
    const inst = await g.freshInstall('chatapp', TEAM);
    const texts = [
      BOUNDARY_TEXT,
      '部署a東京でリリース、서울 배포 ｶﾞｲﾄﾞ 𠀀々ー done',
      'plain English, no CJK at all: deploy tomorrow',
    ];
    await g.projectMessages(inst, '17000006', texts);
    const read = () =>
      pool.query<{ node_id: string; search_text: string; search_cjk: string | null }>(
        `SELECT node_id, search_text, search_cjk FROM graph_nodes WHERE tenant_id = $1 AND kind = 'chat.message'
         ORDER BY seq`,
        [inst.tenant_id],
      );
    const { rows } = await read();
    expect(rows).toHaveLength(3);
    // Nothing on the way (sanitizing) dropped a boundary code point, or the check below is weaker.
    expect(rows[0]!.search_text).toContain(BOUNDARY_TEXT);
    for (const r of rows) expect(r.search_cjk).toBe(expectedColumn(r.search_text));
    expect(rows[1]!.search_cjk).toBe('部署 東京でリリース 서울 배포 ｶﾞｲﾄﾞ 𠀀々ー');
    expect(rows[2]!.search_cjk).toBeNull();

    await pool.query(`UPDATE graph_nodes SET search_text = $2 WHERE node_id = $1`, [rows[2]!.node_id, 'now 中文 too']);
    await pool.query(`UPDATE graph_nodes SET search_text = $2 WHERE node_id = $1`, [rows[1]!.node_id, 'English now']);
    const after = (await read()).rows;
    expect(after.map((r) => r.search_cjk)).toEqual([rows[0]!.search_cjk, null, '中文']);
  });

  it('a run of q matches inside one CJK run of the text only, never across other characters', async () => {
    const inst = await g.freshInstall('chatapp', `${TEAM}2`);
    const texts = ['部a署', '部 署', '部署', '新部署上线'];
    await g.projectMessages(inst, '17000007', texts);
    const found = async (q: string) =>
      (await listNodes(pool, inst.tenant_id, { q, kind: 'chat.message' })).nodes.map((n) => n.props.text).sort();
    expect(await found('部署')).toEqual(['部署', '新部署上线'].sort());
    expect(await found('部署 上线')).toEqual(['新部署上线']);
    expect(await found('部')).toEqual([...texts].sort());
    expect(await found('署上')).toEqual(['新部署上线']);
    expect(await found('a部署')).toEqual([]);
  });

  it('the trigram index is the partial one on search_cjk (when pg_trgm is installed), the whole-text one is gone', async () => {
    const { rows: ext } = await pool.query(`SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm'`);
    const { rows } = await pool.query<{ indexdef: string }>(
      `SELECT indexdef FROM pg_indexes WHERE tablename = 'graph_nodes' AND indexdef LIKE '%gin_trgm_ops%'`,
    );
    expect(rows.map((r) => r.indexdef)).toEqual(
      ext.length === 0
        ? []
        : [
            'CREATE INDEX graph_nodes_search_cjk_trgm ON public.graph_nodes USING gin (search_cjk gin_trgm_ops) ' +
              'WHERE (search_cjk IS NOT NULL)',
          ],
    );
  });
});
