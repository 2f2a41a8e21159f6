-- 004: the knowledge graph (INTERFACE §5). Written only by the projection inside the
-- ingest transaction (src/graph/project.ts); read by the graph routes (INTERFACE §3).

-- Node identity is (tenant, kind, external_id); install_id is the install that last
-- wrote it (INTERFACE §8.15). Uninstalling an install keeps its nodes: the routes derive
-- `source_status` from the install row, so nothing here changes on uninstall.
--
-- prop_versions maps each prop to the version (event time + tie-break) of the event that
-- set it; a write only replaces a prop whose stored version is not newer, which makes the
-- projection idempotent and independent of event order (src/graph/merge-props.ts).
CREATE TABLE graph_nodes (
  node_id       uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  tenant_id     uuid NOT NULL REFERENCES tenants (tenant_id),
  kind          text NOT NULL,
  external_id   text NOT NULL,
  connector_id  text NOT NULL CHECK (connector_id IN ('chatapp', 'codehost')),
  install_id    uuid NOT NULL REFERENCES installs (install_id),
  props         jsonb NOT NULL DEFAULT '{}',
  prop_versions jsonb NOT NULL DEFAULT '{}',
  -- Plain text drawn from the props by src/graph/search-text.ts, capped in length
  -- (a tsvector must stay under 1 MB).
  search_text   text NOT NULL DEFAULT '',
  -- 'english' stems ("deploying" finds "deploy"); 'simple' keeps every word as written,
  -- stop words and non-English text included. The query side ORs both.
  search        tsvector GENERATED ALWAYS AS (
                  to_tsvector('english'::regconfig, search_text) || to_tsvector('simple'::regconfig, search_text)
                ) STORED,
  -- Listing order and cursor: fixed at insert, so a cursor stays valid while nodes change.
  seq           bigint GENERATED ALWAYS AS IDENTITY,
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now(),
  UNIQUE (tenant_id, kind, external_id)
);
CREATE INDEX graph_nodes_listing ON graph_nodes (tenant_id, seq DESC);
CREATE INDEX graph_nodes_listing_kind ON graph_nodes (tenant_id, kind, seq DESC);
CREATE INDEX graph_nodes_listing_install ON graph_nodes (tenant_id, install_id, seq DESC);
CREATE INDEX graph_nodes_search ON graph_nodes USING gin (search);

-- Edges between nodes of one tenant (directions: INTERFACE §8.14). `key` tells apart
-- several edges of one type between the same two nodes (a user's reactions to one message,
-- one per reaction name). A removed reaction leaves a tombstone (removed = true) carrying
-- the version of its event, so a removal that arrives before its add still wins.
CREATE TABLE graph_edges (
  edge_id    bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  tenant_id  uuid NOT NULL REFERENCES tenants (tenant_id),
  type       text NOT NULL,
  from_node  uuid NOT NULL REFERENCES graph_nodes (node_id),
  to_node    uuid NOT NULL REFERENCES graph_nodes (node_id),
  key        text NOT NULL DEFAULT '',
  props      jsonb NOT NULL DEFAULT '{}',
  version    text NOT NULL DEFAULT '',
  removed    boolean NOT NULL DEFAULT false,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (tenant_id, from_node, type, to_node, key)
);
CREATE INDEX graph_edges_to ON graph_edges (tenant_id, to_node, edge_id DESC) WHERE NOT removed;
CREATE INDEX graph_edges_from ON graph_edges (tenant_id, from_node, edge_id DESC) WHERE NOT removed;
