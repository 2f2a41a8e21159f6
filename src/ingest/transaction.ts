/**
 * What one ingest transaction writes (ARCHITECTURE.md "Inbound" 2), for the ready batches of
 * one or more installs (commit.ts decides which go together): the self-emit filters' verdicts
 * (one call per connector for all its installs), the kept events' rows (one statement,
 * `ON CONFLICT DO NOTHING` on `(install_id, id)`), their graph projection, and the durable
 * effects they trigger (INTERFACE §9.4). A replayed event inserts nothing, so it is neither
 * projected nor given effects again; a crash anywhere before COMMIT replays the whole batch.
 */
import type { DriverRegistry, IngestBatch, SelfEmitDrop } from '../connectors/driver.js';
import type { GraphChange } from '../graph/change.js';
import type { InstallEvents } from '../graph/project.js';
import type { Logger } from '../log.js';
import type { IngestEvent } from '../runtime/ports.js';
import type { Queryable } from '../store/db.js';
import { insertEffects } from '../store/effects.js';
import { insertEvents, newEventOf } from '../store/events.js';
import type { Install } from '../store/installs.js';

/**
 * One install's ready events, already fenced to that install (actors/install.ts), with the
 * install actor's context (its install, log and message deadline) for the driver.
 */
export type IngestPart = IngestBatch;

export interface PartOutcome {
  /** Per event of the part: stored now (false: a replay, or dropped by the self-emit filter). */
  stored: boolean[];
  drops: SelfEmitDrop[];
  changes: GraphChange[];
  effects: number;
}

export interface IngestWritePorts {
  drivers: DriverRegistry;
  log: Logger;
  /** Graph projection of new events, per install, inside the transaction (INTERFACE §5). */
  project?(tx: Queryable, batches: readonly InstallEvents[], log: Logger): Promise<GraphChange[][]>;
  /** The shard of the install's key: its owner runs the install's effects. */
  shardOf(installId: string): number;
  /** SERVICE_NAMESPACE, stored with each effect (deployments may share a database). */
  namespace: string;
}

/** Inside the transaction `tx`: every part's rows, and each part's outcome, in order. */
export async function writeIngest(
  tx: Queryable,
  parts: readonly IngestPart[],
  ports: IngestWritePorts,
): Promise<PartOutcome[]> {
  const verdicts = await selfEmitVerdicts(tx, parts, ports.drivers);
  const kept = parts.map((p, i) => p.events.filter((_, j) => verdicts[i]![j] === null));
  const inserted = await insertEvents(tx, kept.flat().map(newEventOf));
  let at = 0;
  const fresh = kept.map((events) => events.filter(() => inserted[at++]));
  const changes =
    ports.project && fresh.some((f) => f.length > 0)
      ? await ports.project(
          tx,
          parts.map((p, i) => ({ install: p.ctx.install, events: fresh[i]! })),
          ports.log,
        )
      : parts.map(() => []);
  const effects = parts.map((p, i) => effectsOf(p.ctx.install, fresh[i]!, ports));
  await insertEffects(tx, effects.flat());
  return parts.map((p, i) => {
    const stored = new Set(fresh[i]);
    return {
      stored: p.events.map((e) => stored.has(e)),
      drops: verdicts[i]!.filter((v) => v !== null),
      changes: changes[i] ?? [],
      effects: effects[i]!.length,
    };
  });
}

/** The drivers' self-emit filters, each once for all of its installs' parts. */
async function selfEmitVerdicts(
  tx: Queryable,
  parts: readonly IngestPart[],
  drivers: DriverRegistry,
): Promise<Array<Array<SelfEmitDrop | null>>> {
  const out = parts.map((p) => p.events.map((): SelfEmitDrop | null => null));
  for (const connector of new Set(parts.map((p) => p.ctx.install.connector_id))) {
    const driver = drivers.get(connector);
    if (!driver?.ingest) continue;
    const mine = [...parts.keys()].filter((i) => parts[i]!.ctx.install.connector_id === connector);
    const got = await driver.ingest(
      tx,
      mine.map((i) => parts[i]!),
    );
    for (const [k, i] of mine.entries()) out[i] = got[k]!;
  }
  return out;
}

function effectsOf(install: Install, events: readonly IngestEvent[], ports: IngestWritePorts) {
  const driver = ports.drivers.get(install.connector_id);
  if (!driver?.effectsOf) return [];
  return events.flatMap((ev) =>
    driver.effectsOf!(install, ev).map((e) => ({
      installId: install.install_id,
      tenantId: install.tenant_id,
      connectorId: install.connector_id,
      namespace: ports.namespace,
      shard: ports.shardOf(install.install_id),
      eventId: ev.id,
      kind: e.kind,
      serialKey: e.serialKey,
    })),
  );
}
