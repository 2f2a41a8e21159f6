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
import { recordChanges } from '../graph/change-log.js';
import type { InstallEvents } from '../graph/project.js';
import type { Logger } from '../log.js';
import type { IngestEvent } from '../runtime/ports.js';
import type { Queryable } from '../store/db.js';
import { insertEffects } from '../store/effects.js';
import { insertEvents, newEventOf } from '../store/events.js';
import { holdForgetLock } from '../store/forgotten.js';
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
  /** The head of the install's tenant's change feed after this commit (INTERFACE §10.1); null: unchanged. */
  feedSeq: number | null;
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
  // INTERFACE §10.5: before anything is read or written, so that an erase holding the lock
  // never waits for a row this transaction wrote while this one waits for the lock.
  await holdForgetLock(
    tx,
    parts.filter((p) => p.events.length > 0).map((p) => p.ctx.install.tenant_id),
    'shared',
  );
  const verdicts = await selfEmitVerdicts(tx, parts, ports.drivers);
  // Per part, the positions of its kept events, and those events as they may be stored (§10.5).
  const keptAt = parts.map((p, i) => p.events.flatMap((_, j) => (verdicts[i]![j] === null ? [j] : [])));
  const kept = await withoutForgotten(
    tx,
    parts.map((p, i) => ({ ctx: p.ctx, events: keptAt[i]!.map((j) => p.events[j]!) })),
    ports.drivers,
  );
  const inserted = await insertEvents(tx, kept.flat().map(newEventOf));
  let at = 0;
  const isNew = kept.map((events) => events.map(() => inserted[at++]!));
  const fresh = kept.map((events, i) => events.filter((_, k) => isNew[i]![k]));
  const changes =
    ports.project && fresh.some((f) => f.length > 0)
      ? await ports.project(
          tx,
          parts.map((p, i) => ({ install: p.ctx.install, events: fresh[i]! })),
          ports.log,
        )
      : parts.map(() => []);
  await forget(
    tx,
    parts.map((p, i) => ({ ctx: p.ctx, events: fresh[i]! })),
    ports.drivers,
  );
  const effects = parts.map((p, i) => effectsOf(p.ctx.install, fresh[i]!, ports));
  await insertEffects(tx, effects.flat());
  // Last: the feed's counter rows stay locked from here to COMMIT only (change-log.ts).
  const heads = await recordChanges(
    tx,
    parts.map((p, i) => ({
      tenantId: p.ctx.install.tenant_id,
      installId: p.ctx.install.install_id,
      connectorId: p.ctx.install.connector_id,
      changes: changes[i] ?? [],
    })),
  );
  return parts.map((p, i) => {
    const stored = new Set(keptAt[i]!.filter((_, k) => isNew[i]![k]));
    return {
      stored: p.events.map((_, j) => stored.has(j)),
      drops: verdicts[i]!.filter((v) => v !== null),
      changes: changes[i] ?? [],
      feedSeq: (changes[i]?.length ?? 0) > 0 ? (heads.get(p.ctx.install.tenant_id) ?? null) : null,
      effects: effects[i]!.length,
    };
  });
}

/** Parts grouped by connector, for a driver hook called once with all of its installs' parts. */
function byConnector(parts: readonly IngestPart[]): Map<string, number[]> {
  const out = new Map<string, number[]>();
  for (const [i, p] of parts.entries()) {
    const c = p.ctx.install.connector_id;
    out.set(c, [...(out.get(c) ?? []), i]);
  }
  return out;
}

/** INTERFACE §10.5: each part's events without what its platform asked to forget. */
async function withoutForgotten(
  tx: Queryable,
  parts: readonly IngestPart[],
  drivers: DriverRegistry,
): Promise<IngestEvent[][]> {
  const out = parts.map((p) => [...p.events]);
  for (const [connector, mine] of byConnector(parts)) {
    const driver = drivers.get(connector as Install['connector_id']);
    if (!driver?.withoutForgotten || mine.every((i) => parts[i]!.events.length === 0)) continue;
    const got = await driver.withoutForgotten(
      tx,
      mine.map((i) => parts[i]!),
    );
    for (const [k, i] of mine.entries()) out[i] = got[k]!;
  }
  return out;
}

/** INTERFACE §10.5: what the new events' deletions ask to forget, gone from every stored copy. */
async function forget(tx: Queryable, parts: readonly IngestPart[], drivers: DriverRegistry): Promise<void> {
  for (const [connector, mine] of byConnector(parts)) {
    const driver = drivers.get(connector as Install['connector_id']);
    if (!driver?.forget || mine.every((i) => parts[i]!.events.length === 0)) continue;
    await driver.forget(
      tx,
      mine.map((i) => parts[i]!),
    );
  }
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
    if (!driver?.selfEmitFilter) continue;
    const mine = [...parts.keys()].filter((i) => parts[i]!.ctx.install.connector_id === connector);
    const got = await driver.selfEmitFilter(
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
