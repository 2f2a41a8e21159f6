/**
 * What a batch's graph writes changed, event by event (the change feed, INTERFACE §7),
 * for the graph writer (graph-writer.ts): a change is a node whose props or install changed,
 * or an edge added or removed (both its ends changed), attributed to the event that made it.
 * One notice per node and event, in first-change order; `op` is `deleted` for a node marked
 * deleted, else `upserted`.
 */
import type { GraphChange } from './change.js';
import type { NodeRef } from './graph-write.js';

export class BatchChanges {
  private readonly byEvent: Array<Map<string, GraphChange>> = [new Map()];
  private readonly deleted = new Map<string, boolean>();

  /** The event writes are attributed to now (0 for the batch's first). */
  get event(): number {
    return this.byEvent.length - 1;
  }

  /** Writes after this belong to the next event of the batch. */
  nextEvent(): void {
    this.byEvent.push(new Map());
  }

  /** Whether the node is marked deleted, as its latest props say (its notices' `op`). */
  setDeleted(nodeId: string, deleted: boolean): void {
    this.deleted.set(nodeId, deleted);
  }

  /** The node changed in `event` (by default the current one). */
  node(ref: NodeRef, event = this.event): void {
    const op = this.deleted.get(ref.id) ? 'deleted' : 'upserted';
    // A node changed again later in the event keeps its first position and takes its latest op.
    const changes = this.byEvent[event]!;
    const prev = changes.get(ref.id);
    if (prev) prev.op = op;
    else changes.set(ref.id, { node_id: ref.id, kind: ref.kind, op });
  }

  /** An edge between `from` and `to` was added or removed in `event`: both ends changed. */
  edge(from: NodeRef, to: NodeRef, event: number): void {
    this.node(from, event);
    this.node(to, event);
  }

  /** Per event of the batch, its changes. */
  byEventList(): GraphChange[][] {
    return this.byEvent.map((m) => [...m.values()]);
  }
}
