/**
 * The NATS connection and KV buckets every node opens (ARCHITECTURE.md "Storage").
 *
 * Contract:
 * - `connectNats` fails fast when no server answers at start (the process manager restarts
 *   us), but once connected it reconnects forever with a growing delay: a node that lost
 *   NATS must come back by itself, and its shard leases fence themselves meanwhile.
 * - `checkServerVersion` refuses servers older than 2.9.0: KV create-if-absent over a
 *   delete marker and per-subject CAS (`Nats-Expected-Last-Subject-Sequence`) are what the
 *   lease protocol stands on. Nothing here needs anything newer than 2.9.10 (no per-message
 *   TTL, no multi-filter consumers).
 * - `openKv` creates a bucket or binds the existing one; it never rewrites an existing
 *   bucket's limits, because other nodes fence their leases against the TTL they saw.
 */
import { jetstream, JetStreamApiError } from '@nats-io/jetstream';
import { Kvm, type KV, type KvOptions } from '@nats-io/kv';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import type { Logger } from '../log.js';

export const MIN_SERVER_VERSION = '2.9.0';

/** The server is too old for the lease protocol; the operator must upgrade NATS. */
export class UnsupportedServerError extends Error {
  readonly code = 'nats_server_unsupported';
  constructor(
    readonly version: string,
    message: string,
  ) {
    super(message);
    this.name = 'UnsupportedServerError';
  }
}

export interface ConnectNatsOptions {
  servers: string | string[];
  /** Connection name shown by `nats server report connections` (the node id). */
  name: string;
  log: Logger;
}

/** Reconnect delay grows with the outage: quick after a blip, gentle during a long one. */
const RECONNECT_MIN_MS = 250;
const RECONNECT_MAX_MS = 2_000;

export async function connectNats({ servers, name, log }: ConnectNatsOptions): Promise<NatsConnection> {
  const list = Array.isArray(servers) ? servers : [servers];
  let outageStart: number | null = null;
  let nc: NatsConnection;
  try {
    nc = await connect({
      servers: list,
      name,
      maxReconnectAttempts: -1,
      // nats.js otherwise captures a stack for every request and publish (about 15% of the
      // edge's CPU per webhook, bench/ingest --cpu-prof); its errors keep their messages.
      noAsyncTraces: true,
      reconnectDelayHandler: () => {
        outageStart ??= Date.now();
        const grown = Math.min(RECONNECT_MAX_MS, RECONNECT_MIN_MS + (Date.now() - outageStart) / 4);
        return grown + Math.random() * 100;
      },
    });
  } catch (err) {
    // Name the servers without any user:password they may carry.
    throw new Error(
      `cannot connect to NATS at ${list.map(redactUrl).join(', ')}: check NATS_URL and that nats-server runs with -js`,
      {
        cause: err,
      },
    );
  }
  const nlog = log.child({ component: 'nats' });
  nlog.info({ server: redactUrl(nc.getServer()), version: nc.info?.version }, 'connected to NATS');
  void (async () => {
    for await (const s of nc.status()) {
      switch (s.type) {
        case 'disconnect':
          nlog.warn({ server: redactUrl(s.server) }, 'NATS disconnected; reconnecting');
          break;
        case 'reconnect':
          outageStart = null;
          nlog.info({ server: redactUrl(s.server) }, 'NATS reconnected');
          break;
        case 'ldm':
          nlog.warn({ server: redactUrl(s.server) }, 'NATS server entering lame-duck mode');
          break;
        case 'error':
          nlog.warn({ err: s.error }, 'NATS async error');
          break;
        case 'staleConnection':
          nlog.warn('NATS connection stale');
          break;
        case 'slowConsumer':
          nlog.warn({ subject: s.sub.getSubject(), pending: s.pending }, 'NATS slow consumer');
          break;
        case 'reconnecting':
        case 'ping':
        case 'update':
        case 'forceReconnect':
        case 'close':
          nlog.debug({ status: s.type }, 'NATS status');
          break;
      }
    }
  })();
  void nc.closed().then((err) => {
    if (err) nlog.error({ err }, 'NATS connection closed with an error');
    else nlog.info('NATS connection closed');
  });
  return nc;
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
      `nats-server ${version} is too old: KV leases need >= ${MIN_SERVER_VERSION} with JetStream enabled; upgrade the server`,
    );
  }
}

export function parseVersion(v: string): [number, number, number] | null {
  const m = /^v?(\d+)\.(\d+)\.(\d+)/.exec(v.trim());
  return m ? [Number(m[1]), Number(m[2]), Number(m[3])] : null;
}

export function compareVersions(a: readonly number[], b: readonly number[]): number {
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
  try {
    return await kvm.create(name, kvOpts);
  } catch (err) {
    if (err instanceof JetStreamApiError && err.code === STREAM_NAME_IN_USE) return kvm.open(name);
    throw err;
  }
}

/** `nats://user:pass@host:4222` → `nats://host:4222`; credentials never reach a log line. */
export function redactUrl(u: string): string {
  return u.replace(/\/\/[^@/]*@/, '//').replace(/^[^/@]*@/, '');
}
