-- 016: the CJK substring match (INTERFACE §9.5, migration 010) gets its own small column and
-- index, so a graph node write stops paying for trigrams of all its text (issue 12).
--
-- 010 indexed the whole search_text with pg_trgm: every insert and update of a node (mostly
-- English, ~2.4 KB) added trigram entries for all of it, though only CJK runs are ever
-- matched as substrings. Now `search_cjk` holds just the CJK runs of search_text, each
-- maximal run kept whole and the text between runs replaced by one space (so a run of `q`,
-- which is CJK only, is a substring of search_cjk exactly when it is one of search_text),
-- and NULL when the text has none: the trigram index is partial, over the nodes that have
-- CJK text only. An English node pays one regex scan of its text and no index entry.
--
-- The class is src/graph/cjk-ranges.ts (the same ranges the query splits `q` with), written
-- with \u / \U escapes; test/unit/graph-cjk-class.test.ts checks this file against it and
-- test/integration/graph-cjk-column.test.ts asks Postgres at every range boundary. The
-- expression is immutable (regexp and btrim are; ranges are code points whatever the
-- collation), as a generated column needs.
--
-- Adding a stored generated column rewrites graph_nodes (and rebuilds its indexes) under an
-- ACCESS EXCLUSIVE lock: every existing row gets its search_cjk here, and ingest and graph
-- reads wait meanwhile. Measured: 29 s for 53 500 rows of ~2.4 KB on a loaded 2-core machine,
-- about 9 minutes per million rows; on a large graph, run `migrate` in a quiet moment. The owner
-- role runs migrations (README "Security model"); the table's grants and row-level security
-- cover the new column with no change.
ALTER TABLE graph_nodes ADD COLUMN search_cjk text GENERATED ALWAYS AS (
  CASE WHEN search_text ~ '[\u1100-\u11ff\u2e80-\u2e99\u2e9b-\u2ef3\u2f00-\u2fd5\u3005\u3007\u3021-\u3029\u302e-\u302f\u3038-\u303b\u3041-\u3096\u309d-\u309f\u30a1-\u30fa\u30fc-\u30ff\u3131-\u318e\u31f0-\u321e\u3260-\u327e\u32d0-\u32fe\u3300-\u3357\u3400-\u4dbf\u4e00-\u9fff\ua960-\ua97c\uac00-\ud7a3\ud7b0-\ud7c6\ud7cb-\ud7fb\uf900-\ufa6d\ufa70-\ufad9\uff66-\uffbe\uffc2-\uffc7\uffca-\uffcf\uffd2-\uffd7\uffda-\uffdc\U00016fe2-\U00016fe3\U00016ff0-\U00016ff6\U0001aff0-\U0001aff3\U0001aff5-\U0001affb\U0001affd-\U0001affe\U0001b000-\U0001b122\U0001b132\U0001b150-\U0001b152\U0001b155\U0001b164-\U0001b167\U0001f200\U00020000-\U0002a6df\U0002a700-\U0002b81d\U0002b820-\U0002cead\U0002ceb0-\U0002ebe0\U0002ebf0-\U0002ee5d\U0002f800-\U0002fa1d\U00030000-\U0003134a\U00031350-\U00033479]'
    THEN btrim(regexp_replace(search_text, '[^\u1100-\u11ff\u2e80-\u2e99\u2e9b-\u2ef3\u2f00-\u2fd5\u3005\u3007\u3021-\u3029\u302e-\u302f\u3038-\u303b\u3041-\u3096\u309d-\u309f\u30a1-\u30fa\u30fc-\u30ff\u3131-\u318e\u31f0-\u321e\u3260-\u327e\u32d0-\u32fe\u3300-\u3357\u3400-\u4dbf\u4e00-\u9fff\ua960-\ua97c\uac00-\ud7a3\ud7b0-\ud7c6\ud7cb-\ud7fb\uf900-\ufa6d\ufa70-\ufad9\uff66-\uffbe\uffc2-\uffc7\uffca-\uffcf\uffd2-\uffd7\uffda-\uffdc\U00016fe2-\U00016fe3\U00016ff0-\U00016ff6\U0001aff0-\U0001aff3\U0001aff5-\U0001affb\U0001affd-\U0001affe\U0001b000-\U0001b122\U0001b132\U0001b150-\U0001b152\U0001b155\U0001b164-\U0001b167\U0001f200\U00020000-\U0002a6df\U0002a700-\U0002b81d\U0002b820-\U0002cead\U0002ceb0-\U0002ebe0\U0002ebf0-\U0002ee5d\U0002f800-\U0002fa1d\U00030000-\U0003134a\U00031350-\U00033479]+', ' ', 'g'))
  END
) STORED;

-- As in 010: pg_trgm is a trusted extension since Postgres 13 (the database owner may create
-- it); without it the match stays correct, only unindexed. Tried again here in case it has
-- become available since 010.
DO $$
BEGIN
  CREATE EXTENSION IF NOT EXISTS pg_trgm;
EXCEPTION WHEN insufficient_privilege OR undefined_file OR feature_not_supported THEN
  RAISE WARNING 'pg_trgm not available (%): CJK search runs without its trigram index', SQLERRM;
END
$$;

DROP INDEX IF EXISTS graph_nodes_search_trgm;

DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm') THEN
    CREATE INDEX graph_nodes_search_cjk_trgm ON graph_nodes USING gin (search_cjk gin_trgm_ops)
      WHERE search_cjk IS NOT NULL;
  END IF;
END
$$;

-- Like the other large text columns (015); a CJK-only message keeps all of its text here.
DO $$
BEGIN
  ALTER TABLE graph_nodes ALTER COLUMN search_cjk SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported OR invalid_parameter_value THEN
  RAISE WARNING 'lz4 compression not available (%): search_cjk stays pglz-compressed', SQLERRM;
END
$$;
