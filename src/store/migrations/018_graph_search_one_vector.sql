-- 018: a node's search vector is parsed once, not twice (issue 12: Postgres time per chat
-- event on one install's single lane).
--
-- 004 built `search` as to_tsvector('english') || to_tsvector('simple'): the text was parsed
-- twice, and each word was stored twice (its stem, then the word as written, so a search
-- for a stop word such as "the" could find it). Measured on the bench's Slack message
-- (~700 characters): the vector took 43 % of Postgres's CPU on a saturated one-install run.
--
-- Now one configuration, `connectors_search`: a copy of 'english' whose word dictionary is
-- the English Snowball stemmer with no stop-word list, so every word is kept, stemmed, at its
-- own position. The query side (graph_search_page) ORs two queries of `q`, as before:
--   - websearch_to_tsquery('english', q): stems, stop words dropped ("the release" finds
--     "release is out"; a quoted phrase keeps the stop words' positions as gaps), exactly as
--     it matched 004's english half;
--   - websearch_to_tsquery('connectors_search', q): every word stemmed, stop words included,
--     which takes over from 004's 'simple' half ("the" finds text with "the"). It matches
--     at least what 'simple' matched (a word as written has its own stem), and words
--     sharing that stem.
-- Measured on 20 000 such texts: 80 → 47 µs per vector, 37 → 29 distinct lexemes (fewer
-- GIN entries per node).
--
-- Replacing a stored generated column rewrites graph_nodes and rebuilds its indexes under an
-- ACCESS EXCLUSIVE lock, as 016 did. Measured: 14 s for 100 000 nodes of ~750-character
-- messages on a quiet 2-core machine (graph_nodes and its indexes 258 -> 232 MB, the vectors
-- being smaller); on a large graph, run `migrate` in a quiet moment. The table's grants and
-- row-level security cover the new column with no change; CREATE OR REPLACE keeps the
-- search function's owner and grants (017).
CREATE TEXT SEARCH DICTIONARY public.connectors_english_all (TEMPLATE = snowball, Language = english);
CREATE TEXT SEARCH CONFIGURATION public.connectors_search (COPY = pg_catalog.english);
ALTER TEXT SEARCH CONFIGURATION public.connectors_search
  ALTER MAPPING REPLACE english_stem WITH public.connectors_english_all;

-- The rewrite below compresses the existing rows' vectors as this transaction's default says:
-- lz4, like the column's later writes (015), where the server has it.
DO $$
BEGIN
  PERFORM set_config('default_toast_compression', 'lz4', true);
EXCEPTION WHEN feature_not_supported OR invalid_parameter_value THEN
  RAISE WARNING 'lz4 compression not available (%): search stays pglz-compressed', SQLERRM;
END
$$;

DROP INDEX graph_nodes_search;
ALTER TABLE graph_nodes DROP COLUMN search;
ALTER TABLE graph_nodes ADD COLUMN search tsvector GENERATED ALWAYS AS (
  to_tsvector('public.connectors_search'::regconfig, search_text)
) STORED;
CREATE INDEX graph_nodes_search ON graph_nodes USING gin (search);

DO $$
BEGIN
  ALTER TABLE graph_nodes ALTER COLUMN search SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported OR invalid_parameter_value THEN
  NULL; -- warned above
END
$$;

-- Dropping the column dropped its statistics, and a rewrite does not count towards
-- autovacuum's analyze: without this, the planner would take every word for a rare one
-- until a tenth of the graph had changed, and 017's choice between the GIN index and the
-- newest-first walk would go wrong for common words.
ANALYZE graph_nodes;

-- As 017, with the query of the new vector (the header above).
CREATE OR REPLACE FUNCTION graph_search_page(
  for_tenant uuid,
  q text,
  cjk_patterns text[],
  q_rest text,
  node_kind text,
  node_install uuid,
  before_seq bigint,
  page_size integer
) RETURNS TABLE (node_id uuid)
LANGUAGE plpgsql STABLE SECURITY DEFINER ROWS 100 SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
  named uuid := nullif(current_setting('app.tenant_id', true), '')::uuid;
  tsq constant text :=
    '(websearch_to_tsquery(''english''::regconfig, %1$s) || '
    'websearch_to_tsquery(''public.connectors_search''::regconfig, %1$s))';
  cond text;
  stmt text;
BEGIN
  IF named IS NOT NULL THEN
    IF for_tenant IS DISTINCT FROM named THEN
      RETURN;
    END IF;
  ELSIF NOT (
    session_user = current_user
    OR EXISTS (SELECT 1 FROM pg_roles r WHERE r.rolname = session_user AND (r.rolsuper OR r.rolbypassrls))
    OR (to_regrole('connectors_app') IS NOT NULL AND pg_has_role(session_user, 'connectors_app', 'MEMBER'))
  ) THEN
    RETURN;
  END IF;

  cond := 'n.search @@ ' || format(tsq, '$2');
  IF cardinality(cjk_patterns) > 0 THEN
    cond := format(
      '(%s OR (%s AND (numnode(%s) = 0 OR n.search @@ %s)))',
      cond,
      (SELECT string_agg(format('n.search_cjk ILIKE $3[%s]', i), ' AND ' ORDER BY i)
       FROM generate_subscripts(cjk_patterns, 1) AS i),
      format(tsq, '$4'),
      format(tsq, '$4')
    );
  END IF;
  stmt := 'SELECT n.node_id FROM public.graph_nodes n WHERE n.tenant_id = $1 AND ' || cond;
  IF node_kind IS NOT NULL THEN
    stmt := stmt || ' AND n.kind = $5';
  END IF;
  IF node_install IS NOT NULL THEN
    stmt := stmt || ' AND n.install_id = $6';
  END IF;
  IF before_seq IS NOT NULL THEN
    stmt := stmt || ' AND n.seq < $7';
  END IF;
  RETURN QUERY EXECUTE stmt || ' ORDER BY n.seq DESC LIMIT $8'
    USING for_tenant, q, cjk_patterns, q_rest, node_kind, node_install, before_seq, page_size;
END
$fn$;
