/**
 * Where a shard's ingest consumer hands a batch (ARCHITECTURE.md "Inbound" 2): the install
 * actor of the batch's install (actors/install.ts), which commits it in one transaction,
 * shared with other installs' batches unless it must run alone, through the node's
 * committer (commit.ts).
 */
import type pg from 'pg';
import type { Config } from '../config.js';
import type { DriverRegistry } from '../connectors/driver.js';
import { projectBatches } from '../graph/project.js';
import type { Logger } from '../log.js';
import type { Kernel } from '../runtime/kernel.js';
import type { RuntimeMetrics } from '../runtime/metrics.js';
import { installKey, shardOf } from '../runtime/names.js';
import { tracingOn } from '../telemetry/tracing.js';
import type { DeliverBatch } from './batches.js';
import { IngestCommitter } from './commit.js';
import { startDeliverySpans } from './delivery-trace.js';

/** Generous: the install actor's transaction with its projection; past it the batch is retried. */
const INGEST_DEADLINE_MS = 60_000;

export function deliverToInstallActor(kernel: Kernel, metrics: RuntimeMetrics): DeliverBatch {
  return async (events, meta, opts) => {
    const alone = opts?.alone === true;
    const spans = tracingOn() ? startDeliverySpans(events, meta) : null;
    try {
      await kernel.dispatch(
        installKey(events[0]!.installId),
        { type: 'ingest', events, ...(alone ? { alone } : {}) },
        { deadline: Date.now() + INGEST_DEADLINE_MS },
      );
    } catch (err) {
      spans?.end(err);
      throw err;
    }
    spans?.end();
    const now = Date.now();
    for (const x of meta) metrics.eventToCommit.observe(Math.max(0, now - x.storedAtMs) / 1000);
  };
}

/** The node's one committer: its install actors share ingest transactions, timed for metrics. */
export function nodeIngestCommitter(
  config: Readonly<Config>,
  pool: pg.Pool,
  drivers: DriverRegistry,
  log: Logger,
  metrics: RuntimeMetrics,
): IngestCommitter {
  return new IngestCommitter({
    pool,
    drivers,
    log,
    project: projectBatches,
    shardOf: (installId) => shardOf(installKey(installId), config.shards),
    namespace: config.namespace,
    slots: config.ingestCommitSlots,
    onTransaction: (t) => {
      metrics.ingestCommit.observe(t.seconds);
      metrics.ingestBatchSize.observe(t.events);
      metrics.ingestBatchInstalls.observe(t.installs);
    },
  });
}
