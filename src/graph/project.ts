/**
 * Projection of ingested events into graph nodes and edges (INTERFACE §5). The install
 * actor calls it inside the ingest transaction, only for an event row it just inserted,
 * and publishes the returned changes once the transaction committed (change-feed.ts).
 *
 * Idempotent and order-independent (README "Knowledge graph"): every write is versioned by the upstream
 * time of its fact (version.ts), so replaying the log, or receiving an edit before its
 * message or a reaction's removal before its add, leaves the same graph.
 *
 * A payload the graph cannot read is not an ingest failure: the event is kept in the log
 * (nothing lost) and the projection is skipped with a warning naming the event.
 */
import type { Logger } from '../log.js';
import type { IngestEvent } from '../runtime/ports.js';
import type { Queryable } from '../store/db.js';
import type { Install } from '../store/installs.js';
import type { GraphChange } from './change.js';
import type { ProjectOutcome } from './graph-write.js';
import { GraphWriter } from './graph-writer.js';
import { projectChat } from './project-chat.js';
import { projectCodehost } from './project-codehost.js';

/** One event: `projectEvents` of a batch of one. */
export async function projectEvent(
  tx: Queryable,
  install: Install,
  event: IngestEvent,
  log?: Logger,
): Promise<GraphChange[]> {
  return projectEvents(tx, install, [event], log);
}

/**
 * A batch of one install's events, in order, written with one statement per table
 * (graph-writer.ts). Returns what changed, event by event.
 */
export async function projectEvents(
  tx: Queryable,
  install: Install,
  events: readonly IngestEvent[],
  log?: Logger,
): Promise<GraphChange[]> {
  const [changes] = await projectBatches(tx, [{ install, events }], log);
  return changes ?? [];
}

/** One install's share of a batch that spans installs. */
export interface InstallEvents {
  install: Install;
  events: readonly IngestEvent[];
}

/**
 * Several installs' events (group commit across installs: ARCHITECTURE "Inbound" 2), each
 * install's in order and the installs one after another, written together with one
 * statement per table. Returns what changed, per entry of `batches`.
 */
export async function projectBatches(
  tx: Queryable,
  batches: readonly InstallEvents[],
  log?: Logger,
): Promise<GraphChange[][]> {
  const first = batches.find((b) => b.events.length > 0);
  if (!first) return batches.map(() => []);
  const w = new GraphWriter(tx, first.install);
  let n = 0;
  for (const { install, events } of batches) {
    for (const event of events) {
      if (n++ > 0) w.nextEvent(install);
      const outcome = await projectOne(w, install, event);
      if (outcome === 'invalid' || outcome === 'unknown') {
        log?.warn(
          { installId: install.install_id, eventId: event.id, kind: event.kind },
          outcome === 'invalid'
            ? 'event payload does not fit its kind; kept in the log, not in the graph'
            : 'no graph projection for this event kind; kept in the log only',
        );
      }
    }
  }
  await w.flush();
  const byEvent = w.changesByEvent();
  let at = 0;
  return batches.map((b) => byEvent.slice(at, (at += b.events.length)).flat());
}

function projectOne(w: GraphWriter, install: Install, event: IngestEvent): Promise<ProjectOutcome> {
  switch (install.connector_id) {
    case 'chatapp':
      // The team id of a chat install is its external id (INTERFACE §3).
      return projectChat(w, install.external_id, event);
    case 'codehost':
      return projectCodehost(w, event);
  }
}
