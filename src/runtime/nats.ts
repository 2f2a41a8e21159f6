/**
 * What every node opens on the NATS server once connected (ARCHITECTURE.md "Storage"); the
 * connection itself is nats-connect.ts.
 *
 * Contract:
 * - `checkServerVersion` refuses servers older than 2.9.0: KV create-if-absent over a
 *   delete marker and per-subject CAS (`Nats-Expected-Last-Subject-Sequence`) are what the
 *   lease protocol stands on. Nothing here needs anything newer than 2.9.10 (no per-message
 *   TTL, no multi-filter consumers).
 * - `openKv` creates a bucket or binds the existing one; it never rewrites an existing
 *   bucket's limits, because other nodes fence their leases against the TTL they saw.
 */
import { jetstream, jetstreamManager, JetStreamApiError, type JetStreamManager } from '@nats-io/jetstream';
import { Kvm, type KV, type KvOptions } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';

const MIN_SERVER_VERSION = '2.9.0';

/** The server is too old for the lease protocol; the operator must upgrade NATS. */
class UnsupportedServerError extends Error {
  readonly code = 'nats_server_unsupported';
  constructor(
    readonly version: string,
    message: string,
  ) {
    super(message);
    this.name = 'UnsupportedServerError';
  }
}

/** Throws `UnsupportedServerError` when the connected server is older than 2.9.0. */
export function checkServerVersion(nc: NatsConnection): void {
  const version = nc.info?.version ?? '';
  const have = parseVersion(version);
  if (have === null) {
    throw new UnsupportedServerError(
      version,
      `cannot read the NATS server version (${JSON.stringify(version)}); need nats-server >= ${MIN_SERVER_VERSION}`,
    );
  }
  if (compareVersions(have, parseVersion(MIN_SERVER_VERSION)!) < 0) {
    throw new UnsupportedServerError(
      version,
      `nats-server ${version} is too old: KV leases need >= ${MIN_SERVER_VERSION} with ` +
        `JetStream enabled; upgrade the server`,
    );
  }
}

function parseVersion(v: string): [number, number, number] | null {
  const m = /^v?(\d+)\.(\d+)\.(\d+)/.exec(v.trim());
  return m ? [Number(m[1]), Number(m[2]), Number(m[3])] : null;
}

function compareVersions(a: readonly number[], b: readonly number[]): number {
  for (let i = 0; i < 3; i++) {
    const d = (a[i] ?? 0) - (b[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}

export interface OpenKvOptions {
  /** Bucket TTL: a key not rewritten within it disappears. Omit for no expiry. */
  ttlMs?: number;
  maxValueSize?: number;
  /** Values kept per key (default 1). */
  history?: number;
  /** Per-request timeout of this handle's operations (JetStream default is 5 s). */
  timeoutMs?: number;
  /** INTERFACE §9.2 `SERVICE_NATS_REPLICAS`; an existing bucket is brought to it. */
  replicas?: number;
  /** Shown by `nats kv ls` / `nats stream info`. */
  description?: string;
}

/** JetStream API code: a stream of that name exists with another configuration. */
const STREAM_NAME_IN_USE = 10058;

/**
 * Create the bucket if absent, else bind the existing one as it is. Two nodes starting at
 * once may race to create it: the loser with identical limits succeeds anyway, and one with
 * different limits binds to the winner's bucket (callers that depend on a limit read it
 * back from `kv.status()`).
 */
export async function openKv(nc: NatsConnection, name: string, opts: OpenKvOptions = {}): Promise<KV> {
  const js = opts.timeoutMs === undefined ? jetstream(nc) : jetstream(nc, { timeout: opts.timeoutMs });
  const kvm = new Kvm(js);
  const kvOpts: Partial<KvOptions> = { history: opts.history ?? 1 };
  if (opts.ttlMs !== undefined) kvOpts.ttl = opts.ttlMs;
  if (opts.maxValueSize !== undefined) kvOpts.maxValueSize = opts.maxValueSize;
  if (opts.replicas !== undefined) kvOpts.replicas = opts.replicas;
  if (opts.description !== undefined) kvOpts.description = opts.description;
  let kv: KV;
  try {
    kv = await kvm.create(name, kvOpts);
  } catch (err) {
    if (!(err instanceof JetStreamApiError && err.code === STREAM_NAME_IN_USE)) {
      throw explainReplicaRefusal(err, `KV bucket ${name}`, opts.replicas);
    }
    kv = await kvm.open(name);
  }
  // Replicas and description may change in place; the TTL and value limits never do (see above).
  await alignStream(await jetstreamManager(nc), `KV_${name}`, {
    replicas: opts.replicas,
    description: opts.description,
    what: `KV bucket ${name}`,
  });
  return kv;
}

/**
 * Bring an existing stream's replicas and description to the configured ones. A server
 * that refuses (a single server asked for 3 replicas) stops the start with what to do.
 */
export async function alignStream(
  jsm: JetStreamManager,
  stream: string,
  want: { replicas?: number; description?: string; what: string; extra?: Record<string, unknown> },
): Promise<void> {
  const current = (await jsm.streams.info(stream)).config;
  const patch: Record<string, unknown> = {};
  if (want.replicas !== undefined && current.num_replicas !== want.replicas) patch.num_replicas = want.replicas;
  if (want.description !== undefined && current.description !== want.description) patch.description = want.description;
  for (const [k, v] of Object.entries(want.extra ?? {})) {
    if ((current as unknown as Record<string, unknown>)[k] !== v) patch[k] = v;
  }
  if (Object.keys(patch).length === 0) return;
  try {
    await jsm.streams.update(stream, patch);
  } catch (err) {
    throw explainReplicaRefusal(err, want.what, want.replicas, current.num_replicas);
  }
}

/** A clear start-up error for a replica count the server cannot hold. */
export function explainReplicaRefusal(err: unknown, what: string, replicas?: number, had?: number): Error {
  if (!(err instanceof JetStreamApiError) || replicas === undefined) return err as Error;
  const from = had === undefined ? '' : ` (it has ${had})`;
  return new Error(
    `${what}: NATS refused ${replicas} replica(s)${from}: ${err.message}. ` +
      `SERVICE_NATS_REPLICAS must not exceed the JetStream servers of the NATS cluster; ` +
      `set it to 1 for a single server, or run a cluster of at least ${replicas} JetStream servers`,
    { cause: err },
  );
}
