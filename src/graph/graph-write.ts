/**
 * What projections hand the graph writer (graph-writer.ts), apart from how it writes them.
 */
import type { Props } from './merge-props.js';
import type { NodeKind } from './kinds.js';
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
