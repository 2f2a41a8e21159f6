-- 041: what the housekeeping actor's retention (INTERFACE §10.5, src/store/retention.ts) needs to
-- find old rows without scanning, and to delete graph nodes at all.
--
-- Each index is built once by reading its table; on a large database, run `migrate` in a
-- quiet moment.

-- Stored events older than SERVICE_EVENTS_RETENTION_DAYS, oldest first, and the oldest kept
-- (a metric). received_at only grows, so inserts land on the index's rightmost page.
CREATE INDEX events_received_at ON events (received_at);

-- Finished effects (done, or given up) older than the retention. Pending ones, which the
-- runner reads, are not in it.
CREATE INDEX effects_finished ON effects (updated_at) WHERE state <> 'pending';

-- Deleting a graph node makes Postgres look for the edges that still reference it (the
-- foreign keys of 004) by `from_node = $1` and by `to_node = $1`: 004's indexes lead with
-- tenant_id and leave out removed edges, so each deleted node cost two scans of every edge.
-- These replace them: led by the node, every edge in them, in the same edge_id order, so the
-- listing of a node's edges (src/graph/queries.ts) reads them as it read 004's.
CREATE INDEX graph_edges_from_node ON graph_edges (from_node, edge_id DESC);
CREATE INDEX graph_edges_to_node ON graph_edges (to_node, edge_id DESC);
DROP INDEX graph_edges_from;
DROP INDEX graph_edges_to;
