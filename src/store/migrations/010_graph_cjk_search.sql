-- 010: `q` also matches CJK text (INTERFACE §9.5). Chinese and Japanese are written without
-- spaces, so the text-search parser makes one "word" of a whole run and a 2-character
-- query never equals it; the graph query adds a substring match for the CJK runs of `q`
-- (src/graph/queries.ts, escaped: user input is never a pattern). A trigram index serves
-- that match when pg_trgm can be installed (a trusted extension since Postgres 13: the
-- database owner may create it); without it the match is still correct, only unindexed.
DO $$
BEGIN
  CREATE EXTENSION IF NOT EXISTS pg_trgm;
EXCEPTION WHEN insufficient_privilege OR undefined_file OR feature_not_supported THEN
  RAISE WARNING 'pg_trgm not available (%): CJK search runs without its trigram index', SQLERRM;
END
$$;

DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm') THEN
    CREATE INDEX IF NOT EXISTS graph_nodes_search_trgm ON graph_nodes USING gin (search_text gin_trgm_ops);
  END IF;
END
$$;
