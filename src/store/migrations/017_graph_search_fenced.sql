-- 017: a graph search its indexes serve on the tenant routes (issue 12: the big tenant).
--
-- The tenant routes' login is bound by row-level security (013), and Postgres applies a
-- policy before any condition that is not leakproof. Neither `@@` nor `ILIKE` is, so on
-- those routes the GIN index on `search` (004) and the trigram index on `search_cjk` (016)
-- went unused: a search read every node of the tenant through the listing index and
-- tested each (measured: 53 000 nodes, a word no node has, 116 ms against 0.4 ms as the
-- owner; a tenant of a million nodes, seconds per search).
--
-- graph_search_page runs the search as its owner, whom the fence does not narrow (013's
-- system policy, or a superuser), so the planner may use either index, and applies the
-- fence itself: the tenant it searches must be the one the transaction names
-- (`app.tenant_id`, the very setting the policy reads). With no tenant named it searches
-- only for the nodes' own login (a member of connectors_app), the owner or a superuser,
-- who see every tenant anyway. It returns node ids, newest first; the caller reads the
-- rows themselves through the fence as before (src/graph/queries.ts listNodes).
--
-- The statement is built from fixed text and parameter numbers only (never from an
-- argument) and planned with the arguments' values (EXECUTE ... USING), so a rare word
-- takes the GIN index and a common one walks the listing index until the page is full.
-- search_path is pinned with pg_temp last: a caller cannot shadow the table. ROWS: a page
-- is at most 501 ids, so the caller's join reads them by primary key.
CREATE FUNCTION graph_search_page(
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
  -- Both configurations of the vector (004), as the listing without a search wrote it.
  tsq constant text :=
    '(websearch_to_tsquery(''english''::regconfig, %1$s) || websearch_to_tsquery(''simple''::regconfig, %1$s))';
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
    -- INTERFACE §9.5: every CJK run of q is a substring of the node's CJK runs, and the
    -- rest of q, if it has words, matches as words; or the whole of q matches as words.
    -- One ILIKE per run, so the partial trigram index serves each.
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

REVOKE ALL ON FUNCTION graph_search_page(uuid, text, text[], text, text, uuid, bigint, integer) FROM PUBLIC;
DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'connectors_tenant') THEN
    GRANT EXECUTE ON FUNCTION graph_search_page(uuid, text, text[], text, text, uuid, bigint, integer)
      TO connectors_tenant;
  END IF;
  IF EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'connectors_app') THEN
    GRANT EXECUTE ON FUNCTION graph_search_page(uuid, text, text[], text, text, uuid, bigint, integer)
      TO connectors_app;
  END IF;
END $$;
