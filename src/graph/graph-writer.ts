/**
 * Writes nodes and edges for one event inside the ingest transaction, and collects what
 * changed for the change feed (INTERFACE §7).
 *
 * - Node identity is `(tenant, kind, external_id)` (INTERFACE §8.15); each write locks the
 *   row, merges props by version (merge-props.ts) and makes this install the node's
 *   `install_id` (the last writer). Another install of the same tenant may write the same
 *   node concurrently (one GitHub user seen by two installations): the row lock orders
 *   them, and a deadlock between two such transactions is retried whole by `withTx`.
 * - A node named only as an edge end (a thread parent not yet seen) is created with the
 *   props its identity gives; its own event fills in the rest whenever it arrives.
 * - Edges are added once; a versioned edge (`reacted`) keeps the state of its newest event,
 *   and a removal is a tombstone, so an add that arrives after a newer removal loses.
 * - A change is a node whose props or install changed, or an edge added or removed (both
 *   ends changed). `op` is `deleted` for a node marked deleted, else `upserted`.
 */
import { isDeepStrictEqual } from 'node:util';
import type { Queryable } from '../store/db.js';
import type { Install } from '../store/installs.js';
import { sanitizeJson, sanitizeText } from '../store/sanitize.js';
import type { GraphChange } from './change.js';
import type { EdgeType, NodeKind } from './kinds.js';
import { mergeProps, type PropVersions, type Props } from './merge-props.js';
import { searchText } from './search-text.js';
import { IDENTITY_VERSION, type Version } from './version.js';

export interface NodeRef {
  id: string;
  kind: NodeKind;
}

/** What a projection made of one event: `invalid` and `unknown` are worth an operator's look. */
export type ProjectOutcome = 'projected' | 'ignored' | 'invalid' | 'unknown';

export interface NodeWrite {
  identity?: Props;
  props?: Props;
  version?: Version;
}

export interface EdgeOptions {
  /** Tells apart several edges of one type between the same two nodes (reaction name). */
  key?: string;
  props?: Props;
  /** Only for edges that can be removed: the version of the event that set the state. */
  version?: Version;
  removed?: boolean;
}

interface NodeRow {
  node_id: string;
  install_id: string;
  props: Props;
  prop_versions: PropVersions;
}

interface EdgeRow {
  props: Props;
  version: string;
  removed: boolean;
}

/** A row created concurrently between our SELECT and INSERT is simply read again. */
const MAX_ATTEMPTS = 3;

export class GraphWriter {
  private readonly refs = new Map<string, NodeRef>();
  private readonly deleted = new Map<string, boolean>();
  private readonly changed = new Map<string, GraphChange>();

  constructor(
    private readonly tx: Queryable,
    private readonly install: Install,
  ) {}

  /**
   * Creates or updates a node: `props` are set at `version`; `identity` props (facts the
   * external id already states, such as a message's channel and ts) at the lowest version,
   * so they never outrank an event and any event can repeat them.
   */
  async node(kind: NodeKind, externalId: string, w: NodeWrite = {}): Promise<NodeRef> {
    const ext = sanitizeText(externalId);
    const cacheKey = `${kind}\u0000${ext}`;
    const props = sanitizeJson(w.props ?? {});
    const version = w.version ?? IDENTITY_VERSION;
    const identity = sanitizeJson(w.identity ?? {});
    const cached = this.refs.get(cacheKey);
    // Named again by one event with nothing new to say: the first write covered it.
    if (cached && Object.values(props).every((v) => v === undefined)) return cached;
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const { rows } = await this.tx.query<NodeRow>(
        `SELECT node_id, install_id, props, prop_versions FROM graph_nodes
         WHERE tenant_id = $1 AND kind = $2 AND external_id = $3 FOR UPDATE`,
        [this.install.tenant_id, kind, ext],
      );
      const row = rows[0];
      if (!row) {
        const m = mergeTwice({}, {}, identity, props, version);
        const ins = await this.tx.query<{ node_id: string }>(
          `INSERT INTO graph_nodes (tenant_id, kind, external_id, connector_id, install_id, props, prop_versions, search_text)
           VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7::jsonb, $8)
           ON CONFLICT (tenant_id, kind, external_id) DO NOTHING
           RETURNING node_id`,
          [
            this.install.tenant_id,
            kind,
            ext,
            this.install.connector_id,
            this.install.install_id,
            JSON.stringify(m.props),
            JSON.stringify(m.versions),
            searchText(m.props),
          ],
        );
        if (!ins.rows[0]) continue;
        return this.remember(cacheKey, { id: ins.rows[0].node_id, kind }, m.props, true);
      }
      const m = mergeTwice(row.props, row.prop_versions, identity, props, version);
      const moved = m.changed || row.install_id !== this.install.install_id;
      if (moved || m.versionsChanged) {
        await this.tx.query(
          `UPDATE graph_nodes
           SET props = $2::jsonb, prop_versions = $3::jsonb, search_text = $4, install_id = $5, connector_id = $6,
               updated_at = CASE WHEN $7 THEN now() ELSE updated_at END
           WHERE node_id = $1`,
          [
            row.node_id,
            JSON.stringify(m.props),
            JSON.stringify(m.versions),
            searchText(m.props),
            this.install.install_id,
            this.install.connector_id,
            moved,
          ],
        );
      }
      return this.remember(cacheKey, { id: row.node_id, kind }, m.props, moved);
    }
    throw new Error(`graph node ${kind} kept conflicting on insert`);
  }

  async edge(type: EdgeType, from: NodeRef, to: NodeRef, opts: EdgeOptions = {}): Promise<void> {
    const key = sanitizeText(opts.key ?? '');
    const props = sanitizeJson(opts.props ?? {});
    const version = opts.version ?? '';
    const removed = opts.removed ?? false;
    const where = [this.install.tenant_id, from.id, type, to.id, key];
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const { rows } = await this.tx.query<EdgeRow>(
        `SELECT props, version, removed FROM graph_edges
         WHERE tenant_id = $1 AND from_node = $2 AND type = $3 AND to_node = $4 AND key = $5 FOR UPDATE`,
        where,
      );
      const row = rows[0];
      if (!row) {
        const ins = await this.tx.query(
          `INSERT INTO graph_edges (tenant_id, from_node, type, to_node, key, props, version, removed)
           VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7, $8)
           ON CONFLICT (tenant_id, from_node, type, to_node, key) DO NOTHING`,
          [...where, JSON.stringify(props), version, removed],
        );
        if ((ins.rowCount ?? 0) === 0) continue;
        if (!removed) this.edgeChanged(from, to);
        return;
      }
      // Not older than what is stored: the stored state stands (and a replay is a no-op).
      if (row.version >= version) return;
      await this.tx.query(
        `UPDATE graph_edges SET props = $6::jsonb, version = $7, removed = $8, updated_at = now()
         WHERE tenant_id = $1 AND from_node = $2 AND type = $3 AND to_node = $4 AND key = $5`,
        [...where, JSON.stringify(props), version, removed],
      );
      if (row.removed !== removed || (!removed && !isDeepStrictEqual(row.props, props))) this.edgeChanged(from, to);
      return;
    }
    throw new Error(`graph edge ${type} kept conflicting on insert`);
  }

  /**
   * INTERFACE §9.5 (`issues.transferred`): the node `fromExt` takes the identity `toExt`,
   * keeping its id, props and edges. When `toExt` already exists (its own events came
   * first), the old node's edges move onto it and the old node goes. No node at `fromExt`
   * (a replay, or never seen): nothing to do.
   */
  async moveNode(kind: NodeKind, fromExt: string, toExt: string): Promise<void> {
    const [from, to] = [sanitizeText(fromExt), sanitizeText(toExt)];
    if (from === to) return;
    const { rows } = await this.tx.query<{ node_id: string; external_id: string }>(
      `SELECT node_id, external_id FROM graph_nodes
       WHERE tenant_id = $1 AND kind = $2 AND external_id = ANY($3::text[]) ORDER BY external_id FOR UPDATE`,
      [this.install.tenant_id, kind, [from, to]],
    );
    const old = rows.find((r) => r.external_id === from);
    const target = rows.find((r) => r.external_id === to);
    if (!old) return;
    this.refs.delete(`${kind}\u0000${from}`);
    if (!target) {
      await this.tx.query(
        `UPDATE graph_nodes SET external_id = $2, install_id = $3, connector_id = $4, updated_at = now() WHERE node_id = $1`,
        [old.node_id, to, this.install.install_id, this.install.connector_id],
      );
      this.mark({ id: old.node_id, kind });
      return;
    }
    const args = [this.install.tenant_id, old.node_id, target.node_id];
    await this.tx.query(
      `INSERT INTO graph_edges (tenant_id, from_node, type, to_node, key, props, version, removed)
       SELECT tenant_id, CASE WHEN from_node = $2 THEN $3 ELSE from_node END, type,
              CASE WHEN to_node = $2 THEN $3 ELSE to_node END, key, props, version, removed
       FROM graph_edges WHERE tenant_id = $1 AND (from_node = $2 OR to_node = $2)
       ON CONFLICT (tenant_id, from_node, type, to_node, key) DO NOTHING`,
      args,
    );
    await this.tx.query(
      `DELETE FROM graph_edges WHERE tenant_id = $1 AND (from_node = $2 OR to_node = $2)`,
      args.slice(0, 2),
    );
    await this.tx.query(`DELETE FROM graph_nodes WHERE node_id = $1`, [old.node_id]);
    this.deleted.set(old.node_id, true);
    this.mark({ id: old.node_id, kind });
    this.mark({ id: target.node_id, kind });
  }

  /** Removes `from`'s edges of `type` to any node but `keep` (a transferred issue's old repository). */
  async dropOtherEdges(type: EdgeType, from: NodeRef, keep: NodeRef): Promise<void> {
    const { rowCount } = await this.tx.query(
      `DELETE FROM graph_edges WHERE tenant_id = $1 AND from_node = $2 AND type = $3 AND to_node <> $4`,
      [this.install.tenant_id, from.id, type, keep.id],
    );
    if ((rowCount ?? 0) > 0) this.mark(from);
  }

  /** What this event changed, one notice per node, in the order nodes were first changed. */
  changes(): GraphChange[] {
    return [...this.changed.values()];
  }

  private remember(cacheKey: string, ref: NodeRef, props: Props, moved: boolean): NodeRef {
    this.refs.set(cacheKey, ref);
    this.deleted.set(ref.id, props.deleted === true);
    if (moved) this.mark(ref);
    return ref;
  }

  private edgeChanged(from: NodeRef, to: NodeRef): void {
    this.mark(from);
    this.mark(to);
  }

  private mark(ref: NodeRef): void {
    const op = this.deleted.get(ref.id) ? 'deleted' : 'upserted';
    // A node changed again later in the event keeps its first position and takes its latest op.
    const prev = this.changed.get(ref.id);
    if (prev) prev.op = op;
    else this.changed.set(ref.id, { node_id: ref.id, kind: ref.kind, op });
  }
}

function mergeTwice(props: Props, versions: PropVersions, identity: Props, write: Props, version: Version) {
  const a = mergeProps(props, versions, identity, IDENTITY_VERSION);
  const b = mergeProps(a.props, a.versions, write, version);
  return {
    props: b.props,
    versions: b.versions,
    changed: a.changed || b.changed,
    versionsChanged: a.versionsChanged || b.versionsChanged,
  };
}
