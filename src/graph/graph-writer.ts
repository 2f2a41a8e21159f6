/**
 * Writes nodes and edges for a batch of events inside the ingest transaction (group
 * commit, ARCHITECTURE "Inbound" 2), and collects what changed for the change feed
 * (INTERFACE §7). A batch may hold several installs' events, of several tenants: each
 * event is written as its install's (`nextEvent`), and every row names its tenant.
 * Projections call `node` and `edge` per event; nothing reaches Postgres until `flush`,
 * which locks every node and edge the batch names with one statement per table, applies the
 * writes in memory in event order, and writes the result back with one statement per table
 * and direction (graph-rows.ts).
 *
 * - Node identity is `(tenant, kind, external_id)` (INTERFACE §8.15); a write merges props
 *   by version (merge-props.ts) and makes this install the node's `install_id` (the last
 *   writer). Another install of the same tenant may write the same node concurrently (one
 *   GitHub user seen by two installations): row locks order them; a row the other one
 *   created first makes `flush` throw `GraphWriteConflict`, and the whole transaction is
 *   retried (`retryGraphConflict`), now finding the row.
 * - A node named only as an edge end (a thread parent not yet seen) is created with the
 *   props its identity gives; its own event fills in the rest whenever it arrives.
 * - Edges are added once; a versioned edge (`reacted`) keeps the state of its newest event,
 *   and a removal is a tombstone, so an add that arrives after a newer removal loses.
 * - What changed is collected per event for the change feed (graph-changes.ts).
 * - `moveNode` and `dropOtherEdges` (rare: a transferred issue) write at once, after
 *   flushing what is pending (graph-transfer.ts).
 */
import { isDeepStrictEqual } from 'node:util';
import { v7 as uuidv7 } from 'uuid';
import type { Queryable } from '../store/db.js';
import type { Install } from '../store/installs.js';
import { sanitizeJson, sanitizeText } from '../store/sanitize.js';
import type { GraphChange } from './change.js';
import { BatchChanges } from './graph-changes.js';
import {
  insertEdges,
  insertNodes,
  lockEdges,
  lockNodes,
  updateEdges,
  updateNodeVersions,
  updateNodes,
  type NodeRowWrite,
  type Owner,
  type StoredEdge,
} from './graph-rows.js';
import { dropEdgesExcept, moveNodeRows } from './graph-transfer.js';
import type { EdgeOp, EdgeOptions, NodeOp, NodeRef, NodeWrite } from './graph-write.js';
import type { EdgeType, NodeKind } from './kinds.js';
import { mergeIdentityAndWrite, type PropVersions, type Props } from './merge-props.js';
import { searchText } from './search-text.js';
import { IDENTITY_VERSION } from './version.js';

/** A node or edge another transaction created between our lock and our insert. */
class GraphWriteConflict extends Error {
  constructor(what: string) {
    super(`graph ${what} was created concurrently; the transaction is retried`);
    this.name = 'GraphWriteConflict';
  }
}

/** `withTx` option: retry the whole transaction on a graph write conflict. */
export const retryGraphConflict = (err: unknown): boolean => err instanceof GraphWriteConflict;

interface NodeState {
  ref: NodeRef;
  tenantId: string;
  ext: string;
  installId: string;
  connectorId: string;
  props: Props;
  versions: PropVersions;
  stored: boolean;
  write: 'none' | 'versions' | 'touched';
}

interface EdgeState extends StoredEdge {
  stored: boolean;
  dirty: boolean;
  fromRef: NodeRef;
  toRef: NodeRef;
}

export class GraphWriter {
  private refs = new Map<string, NodeRef>();
  private nodeOps: NodeOp[] = [];
  private edgeOps: EdgeOp[] = [];
  private readonly changes = new BatchChanges();
  private owner: Owner;

  constructor(
    private readonly tx: Queryable,
    install: Install,
  ) {
    this.owner = ownerOf(install);
  }

  /**
   * Writes after this belong to the next event of the batch (change attribution), an event
   * of `install` when given (else of the same install as the event before).
   */
  nextEvent(install?: Install): void {
    this.changes.nextEvent();
    if (install) this.owner = ownerOf(install);
  }

  /**
   * Creates or updates a node: `props` are set at `version`; `identity` props (facts the
   * external id already states, such as a message's channel and ts) at the lowest version,
   * so they never outrank an event and any event can repeat them.
   */
  node(kind: NodeKind, externalId: string, w: NodeWrite = {}): Promise<NodeRef> {
    const ext = sanitizeText(externalId);
    const owner = this.owner;
    const key = `${owner.tenantId}\u0000${kind}\u0000${ext}`;
    let ref = this.refs.get(key);
    if (!ref) {
      ref = { id: '', kind };
      this.refs.set(key, ref);
    }
    const props = sanitizeJson(w.props ?? {});
    const identity = sanitizeJson(w.identity ?? {});
    const version = w.version ?? IDENTITY_VERSION;
    this.nodeOps.push({ event: this.changes.event, owner, ref, key, kind, ext, identity, props, version });
    return Promise.resolve(ref);
  }

  edge(type: EdgeType, from: NodeRef, to: NodeRef, opts: EdgeOptions = {}): Promise<void> {
    this.edgeOps.push({
      event: this.changes.event,
      tenantId: this.owner.tenantId,
      type,
      from,
      to,
      key: sanitizeText(opts.key ?? ''),
      props: sanitizeJson(opts.props ?? {}),
      version: opts.version ?? '',
      removed: opts.removed ?? false,
    });
    return Promise.resolve();
  }

  /** Writes every pending node and edge. */
  async flush(): Promise<void> {
    const nodeOps = this.nodeOps;
    const edgeOps = this.edgeOps;
    this.nodeOps = [];
    this.edgeOps = [];
    const created = nodeOps.length > 0 ? await this.flushNodes(nodeOps) : new Set<string>();
    if (edgeOps.length > 0) await this.flushEdges(edgeOps, created);
  }

  /** INTERFACE §9.5 (`issues.transferred`): the node `fromExt` takes the identity `toExt` (graph-transfer.ts). */
  async moveNode(kind: NodeKind, fromExt: string, toExt: string): Promise<void> {
    await this.flush();
    const move = await moveNodeRows(this.tx, this.owner, kind, sanitizeText(fromExt), sanitizeText(toExt));
    if (move.changed.length === 0) return;
    // Later writes of the batch name these nodes afresh.
    this.refs = new Map();
    if (move.removed !== null) this.changes.setDeleted(move.removed, true);
    for (const id of move.changed) this.changes.node({ id, kind });
  }

  /** Removes `from`'s edges of `type` to any node but `keep` (a transferred issue's old repository). */
  async dropOtherEdges(type: EdgeType, from: NodeRef, keep: NodeRef): Promise<void> {
    await this.flush();
    if (await dropEdgesExcept(this.tx, this.owner.tenantId, type, from.id, keep.id)) this.changes.node(from);
  }

  /**
   * What the batch changed, per event (a batch of several installs tells each its own): one
   * notice per node and event, in first-change order.
   */
  changesByEvent(): GraphChange[][] {
    return this.changes.byEventList();
  }

  /** Returns the ids of the nodes it created. */
  private async flushNodes(ops: NodeOp[]): Promise<Set<string>> {
    const keys = new Map<string, NodeOp>();
    for (const op of ops) if (!keys.has(op.key)) keys.set(op.key, op);
    const stored = await lockNodes(
      this.tx,
      [...keys.values()].map((op) => ({ tenantId: op.owner.tenantId, kind: op.kind, externalId: op.ext })),
    );
    const states = new Map<string, NodeState>();
    for (const row of stored) {
      const key = `${row.tenantId}\u0000${row.kind}\u0000${row.externalId}`;
      const ref = keys.get(key)?.ref ?? { id: row.nodeId, kind: row.kind as NodeKind };
      ref.id = row.nodeId;
      states.set(key, { ref, ext: row.externalId, connectorId: '', ...row, stored: true, write: 'none' });
    }
    for (const op of ops) {
      let s = states.get(op.key);
      if (!s) {
        // Time-ordered (RFC 9562 v7), not random: a new node's entry in the node key, and those
        // of its edges keyed by it (within the tenant's range), go to the end of the index
        // instead of a random page, which after every checkpoint costs a full-page image in the WAL. Per chat event
        // right after a checkpoint (bench/graph/chat-batch.ts, 3 interleaved runs): WAL 16.0 ->
        // 6.7-6.9 KB; the backend's CPU within the noise. Node ids are no secret (tenant-scoped
        // reads); each still has 42 fresh random bits besides its time and in-millisecond counter.
        op.ref.id = uuidv7();
        s = {
          ref: op.ref,
          tenantId: op.owner.tenantId,
          ext: op.ext,
          installId: '',
          connectorId: '',
          props: {},
          versions: {},
          stored: false,
          write: 'touched',
        };
        states.set(op.key, s);
      }
      const m = mergeIdentityAndWrite(s.props, s.versions, op.identity, op.props, op.version);
      const moved = m.changed || s.installId !== op.owner.installId;
      s.props = m.props;
      s.versions = m.versions;
      s.installId = op.owner.installId;
      s.connectorId = op.owner.connectorId;
      if (moved) s.write = 'touched';
      else if (m.versionsChanged && s.write === 'none') s.write = 'versions';
      this.changes.setDeleted(s.ref.id, s.props.deleted === true);
      if (moved) this.changes.node(s.ref, op.event);
    }
    const row = (s: NodeState): NodeRowWrite => ({
      nodeId: s.ref.id,
      tenantId: s.tenantId,
      installId: s.installId,
      connectorId: s.connectorId,
      kind: s.ref.kind,
      externalId: s.ext,
      props: s.props,
      versions: s.versions,
      searchText: searchText(s.props),
      touched: s.write === 'touched',
    });
    const all = [...states.values()];
    const fresh = all.filter((s) => !s.stored).map(row);
    if ((await insertNodes(this.tx, fresh)) < fresh.length) throw new GraphWriteConflict('node');
    await updateNodes(this.tx, all.filter((s) => s.stored && s.write === 'touched').map(row));
    await updateNodeVersions(this.tx, all.filter((s) => s.stored && s.write === 'versions').map(row));
    return new Set(fresh.map((r) => r.nodeId));
  }

  /**
   * `created`: nodes this flush just inserted. No stored edge can touch one (its id is new,
   * and nothing else saw it before this transaction commits), so edges to or from them are
   * not looked up: a new chat message's `in_channel` and `authored_by` (issue 12).
   */
  private async flushEdges(ops: EdgeOp[], created: ReadonlySet<string>): Promise<void> {
    const keyOf = (op: EdgeOp) => `${op.tenantId}\u0000${op.from.id}\u0000${op.type}\u0000${op.to.id}\u0000${op.key}`;
    const wanted = new Map<string, EdgeOp>();
    for (const op of ops) if (!wanted.has(keyOf(op))) wanted.set(keyOf(op), op);
    const lookup = [...wanted.values()]
      .filter((op) => !created.has(op.from.id) && !created.has(op.to.id))
      .map((op) => ({ tenantId: op.tenantId, from: op.from.id, type: op.type, to: op.to.id, key: op.key }));
    const states = new Map<string, EdgeState>();
    for (const row of await lockEdges(this.tx, lookup)) {
      const key = `${row.tenantId}\u0000${row.from}\u0000${row.type}\u0000${row.to}\u0000${row.key}`;
      const op = wanted.get(key)!;
      states.set(key, { ...row, stored: true, dirty: false, fromRef: op.from, toRef: op.to });
    }
    for (const op of ops) {
      const key = keyOf(op);
      const s = states.get(key);
      const next = { props: op.props, version: op.version, removed: op.removed };
      if (!s) {
        states.set(key, {
          tenantId: op.tenantId,
          from: op.from.id,
          type: op.type,
          to: op.to.id,
          key: op.key,
          ...next,
          stored: false,
          dirty: true,
          fromRef: op.from,
          toRef: op.to,
        });
        if (!op.removed) this.changes.edge(op.from, op.to, op.event);
        continue;
      }
      // Not newer than what is stored: the stored state stands (and a replay is a no-op).
      if (s.version >= op.version) continue;
      const changed = s.removed !== op.removed || (!op.removed && !isDeepStrictEqual(s.props, op.props));
      Object.assign(s, next, { dirty: true });
      if (changed) this.changes.edge(op.from, op.to, op.event);
    }
    const all = [...states.values()];
    const fresh = all.filter((s) => !s.stored);
    if ((await insertEdges(this.tx, fresh)) < fresh.length) throw new GraphWriteConflict('edge');
    await updateEdges(
      this.tx,
      all.filter((s) => s.stored && s.dirty),
    );
  }
}

function ownerOf(install: Install): Owner {
  return { tenantId: install.tenant_id, installId: install.install_id, connectorId: install.connector_id };
}
