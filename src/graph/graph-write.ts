/**
 * What projections hand the graph writer (graph-writer.ts), and the writes it queues from
 * them, apart from how it writes them.
 */
import type { Owner } from './graph-rows.js';
import type { Props } from './merge-props.js';
import type { EdgeType, NodeKind } from './kinds.js';
import type { Version } from './version.js';

/** A node named by a projection; `id` is known once the batch is flushed. */
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

/** A node write as the writer queues it until `flush` (`event`: its index in the batch). */
export interface NodeOp {
  event: number;
  /** The install whose event writes it (the node's `install_id` after the write). */
  owner: Owner;
  ref: NodeRef;
  key: string;
  kind: NodeKind;
  ext: string;
  identity: Props;
  props: Props;
  version: Version;
}

/** An edge write as the writer queues it. */
export interface EdgeOp {
  event: number;
  tenantId: string;
  type: EdgeType;
  from: NodeRef;
  to: NodeRef;
  key: string;
  props: Props;
  version: Version;
  removed: boolean;
}
