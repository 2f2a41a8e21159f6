/**
 * What a deleted tenant left in NATS (INTERFACE §10.5 `tenants delete`: "afterwards no ...
 * NATS notice shows anything of it"): the KV entries named after its installs, workspaces and
 * App installations, and the events of its installs still waiting in the ingest stream.
 *
 * | Bucket  | Key                                       | Named after             |
 * |---------|-------------------------------------------|-------------------------|
 * | cursors | `chat-backfill.<install>`                 | install                 |
 * | cursors | `codehost-backfill.<install>`             | install                 |
 * | cursors | `codehost-hold.<installation>`            | App installation        |
 * | dedup   | `codehost-summary.<install>.<event>`      | install                 |
 * | dedup   | `chat-bucket.<team>.<channel>`            | workspace               |
 * | dedup   | `chat-workspace.<team>`                   | workspace               |
 * | dedup   | `codehost-rate.<installation>`            | App installation        |
 *
 * Keys of the deployment (leases, heartbeats, the edge heartbeat, the App's redelivery claims,
 * ingest attempt counts by stream sequence) name no tenant and stay. A workspace or App
 * installation another tenant has installed now is left out of `externalIds` by the caller:
 * its buckets are that tenant's too.
 *
 * Bounded and best effort: every request has its own timeout, the whole pass a deadline; what
 * could not be removed is reported, never thrown, since the tenant's rows are gone already.
 * Entries are purged from their stream (`STREAM.PURGE` with the key's subject), so no earlier
 * value stays in the bucket's history either.
 */
import { JetStreamApiCodes, JetStreamApiError, jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { CHAT_BACKFILL_KIND } from '../actors/chatapp/chat-backfill-protocol.js';
import { CHAT_BUCKET_KIND } from '../actors/chatapp/chat-bucket-protocol.js';
import { CHAT_WORKSPACE_KIND } from '../actors/chatapp/chat-workspace-bucket-protocol.js';
import { CODEHOST_BACKFILL_KIND } from '../actors/codehost/codehost-backfill-protocol.js';
import { CODEHOST_RATE_KIND } from '../actors/codehost/codehost-rate-protocol.js';
import { CODEHOST_HOLD_PREFIX } from '../actors/codehost/codehost-writer.js';
import { CODEHOST_SUMMARY_PREFIX } from '../connectors/codehost/pr-summary.js';
import { errorText } from '../runtime/error-text.js';
import { token, untoken, type Names } from '../runtime/names.js';

/** The first part of a key, and whether its second part is an install id or a platform id. */
const NAMED_BY = new Map<string, 'install' | 'external'>([
  [CHAT_BACKFILL_KIND, 'install'],
  [CODEHOST_BACKFILL_KIND, 'install'],
  [CODEHOST_SUMMARY_PREFIX, 'install'],
  [CODEHOST_HOLD_PREFIX, 'external'],
  [CHAT_BUCKET_KIND, 'external'],
  [CHAT_WORKSPACE_KIND, 'external'],
  [CODEHOST_RATE_KIND, 'external'],
]);

export interface TenantNatsRefs {
  installIds: readonly string[];
  /** Chat team ids and App installation ids of the tenant's installs that no other tenant holds. */
  externalIds: readonly string[];
}

export interface NatsForgetReport {
  /** Per bucket or stream, how many keys (or waiting events) were removed. */
  removed: Record<string, number>;
  /** What could not be removed, and why (`<bucket or stream> <key or filter>: <reason>`). */
  not_removed: string[];
}

/** Whether a key of the cursors or dedup bucket names one of `refs`. */
function namesTenant(key: string, refs: { installIds: ReadonlySet<string>; externalIds: ReadonlySet<string> }) {
  const [kind, id] = key.split('.');
  if (kind === undefined || id === undefined) return false;
  const by = NAMED_BY.get(kind);
  if (by === 'install') return refs.installIds.has(untoken(id).toLowerCase());
  if (by === 'external') return refs.externalIds.has(untoken(id));
  return false;
}

export async function forgetTenantInNats(
  nc: NatsConnection,
  names: Names,
  refs: TenantNatsRefs,
  opts: { timeoutMs: number; deadlineMs: number },
): Promise<NatsForgetReport> {
  const report: NatsForgetReport = { removed: {}, not_removed: [] };
  const end = Date.now() + opts.deadlineMs;
  const late = () => Date.now() > end;
  const sets = {
    installIds: new Set(refs.installIds.map((i) => i.toLowerCase())),
    externalIds: new Set(refs.externalIds),
  };
  let jsm: JetStreamManager;
  try {
    jsm = await jetstreamManager(nc, { timeout: opts.timeoutMs, checkAPI: false });
  } catch (err) {
    report.not_removed.push(`JetStream: ${errorText(err)}`);
    return report;
  }

  for (const bucket of [names.cursorBucket, names.dedupBucket]) {
    const stream = `KV_${bucket}`;
    const prefix = `$KV.${bucket}.`;
    let keys: string[];
    try {
      const info = await jsm.streams.info(stream, { subjects_filter: `${prefix}>` });
      keys = Object.keys(info.state.subjects ?? {}).map((s) => s.slice(prefix.length));
    } catch (err) {
      if (isNotFound(err)) continue; // a bucket never made holds nothing
      report.not_removed.push(`${bucket}: not listed: ${errorText(err)}`);
      continue;
    }
    let n = 0;
    for (const key of keys.filter((k) => namesTenant(k, sets))) {
      if (late()) {
        report.not_removed.push(`${bucket} ${key}: deadline passed`);
        continue;
      }
      try {
        await jsm.streams.purge(stream, { filter: `${prefix}${key}` });
        n++;
      } catch (err) {
        report.not_removed.push(`${bucket} ${key}: ${errorText(err)}`);
      }
    }
    report.removed[bucket] = n;
  }

  // Events of its installs not yet taken by a shard consumer (the work-queue stream).
  let purged = 0;
  for (const installId of sets.installIds) {
    const filter = `${names.ns}.ingest.*.*.${token(installId)}`;
    if (late()) {
      report.not_removed.push(`${names.ingestStream} ${filter}: deadline passed`);
      continue;
    }
    try {
      purged += (await jsm.streams.purge(names.ingestStream, { filter })).purged;
    } catch (err) {
      if (isNotFound(err)) break;
      report.not_removed.push(`${names.ingestStream} ${filter}: ${errorText(err)}`);
    }
  }
  report.removed[names.ingestStream] = purged;
  return report;
}

function isNotFound(err: unknown): boolean {
  return err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound;
}
