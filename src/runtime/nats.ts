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
import { readFileSync } from 'node:fs';
import { jetstream, jetstreamManager, JetStreamApiError, type JetStreamManager } from '@nats-io/jetstream';
import { Kvm, type KV, type KvOptions } from '@nats-io/kv';
import { connect, credsAuthenticator, type NatsConnection, type NodeConnectionOptions } from '@nats-io/transport-node';
import type { NatsSettings } from '../config.js';
import type { Logger } from '../log.js';

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

export interface ConnectNatsOptions {
  servers: string | string[];
  /** Connection name shown by `nats server report connections` (the node id). */
  name: string;
  log: Logger;
  /** INTERFACE §9.2: credentials and TLS (absent: anonymous, plain). */
  auth?: Pick<NatsSettings, 'credsFile' | 'token' | 'user' | 'password' | 'tlsCaFile' | 'tlsCertFile' | 'tlsKeyFile'>;
}

/**
 * The connect options for the configured authentication and TLS. nats.js v3 ignores a
 * `user:pass@` in the URL, so credentials only ever come from these settings. A creds or
 * PEM file that cannot be read stops the start with the setting's name.
 */
export function natsAuthOptions(a: NonNullable<ConnectNatsOptions['auth']>): Partial<NodeConnectionOptions> {
  const read = (setting: string, path: string) => {
    try {
      return readFileSync(path);
    } catch (err) {
      throw new Error(`${setting}: cannot read ${path} (${(err as NodeJS.ErrnoException).code ?? 'error'})`, {
        cause: err,
      });
    }
  };
  const o: Partial<NodeConnectionOptions> = {};
  if (a.credsFile) {
    const creds = read('NATS_CREDS', a.credsFile);
    o.authenticator = credsAuthenticator(new Uint8Array(creds));
  }
  if (a.token) o.token = a.token;
  if (a.user) {
    o.user = a.user;
    o.pass = a.password ?? '';
  }
  if (a.tlsCaFile || a.tlsCertFile) {
    // Read here, not by the transport, so a missing file is a start-up error naming its setting.
    o.tls = {
      ...(a.tlsCaFile ? { ca: read('NATS_TLS_CA', a.tlsCaFile).toString('utf8') } : {}),
      ...(a.tlsCertFile ? { cert: read('NATS_TLS_CERT', a.tlsCertFile).toString('utf8') } : {}),
      ...(a.tlsKeyFile ? { key: read('NATS_TLS_KEY', a.tlsKeyFile).toString('utf8') } : {}),
    };
  }
  return o;
}

/** Reconnect delay grows with the outage: quick after a blip, gentle during a long one. */
const RECONNECT_MIN_MS = 250;
const RECONNECT_MAX_MS = 2_000;

/**
 * INTERFACE §9.1: a start that cannot reach NATS ends within 15 s. nats.js waits 20 s per
 * server for a handshake (a host that accepts and never speaks holds it that long), and
 * tries each listed server once, so the whole first connect gets 10 s shared among them
 * (at least 2 s each, a TLS handshake to a far server included).
 */
const CONNECT_BUDGET_MS = 10_000;
const HANDSHAKE_MIN_MS = 2_000;
const HANDSHAKE_MAX_MS = 5_000;
const handshakeTimeoutMs = (servers: number): number =>
  Math.max(HANDSHAKE_MIN_MS, Math.min(HANDSHAKE_MAX_MS, Math.floor(CONNECT_BUDGET_MS / Math.max(1, servers))));

/** See `pendingLimit` in connectNats. */
const OUTBOUND_FLUSH_BYTES = 512 * 1024;

export async function connectNats({ servers, name, log, auth }: ConnectNatsOptions): Promise<NatsConnection> {
  const list = Array.isArray(servers) ? servers : [servers];
  let outageStart: number | null = null;
  let nc: NatsConnection;
  const authOptions = auth ? natsAuthOptions(auth) : {};
  try {
    nc = await connect({
      ...authOptions,
      servers: list,
      name,
      maxReconnectAttempts: -1,
      timeout: handshakeTimeoutMs(list.length),
      // nats.js otherwise captures a stack for every request and publish (about 15% of the
      // edge's CPU per webhook, bench/ingest --cpu-prof); its errors keep their messages.
      noAsyncTraces: true,
      // The outbound buffer is flushed once per microtask checkpoint, or at once when it
      // reaches this size (default 32 KiB). The edge hands a turn's publishes over together
      // (IngestPublisher); at 64 concurrent ~2.5 KB webhooks the default split each turn
      // into a dozen socket writes, ~6% of the edge's CPU (issue 12, `--cpu-prof`). An
      // option nats.js reads but does not declare, hence the spread below.
      ...{ pendingLimit: OUTBOUND_FLUSH_BYTES },
      reconnectDelayHandler: () => {
        outageStart ??= Date.now();
        const grown = Math.min(RECONNECT_MAX_MS, RECONNECT_MIN_MS + (Date.now() - outageStart) / 4);
        return grown + Math.random() * 100;
      },
    });
  } catch (err) {
    // Name the servers without any user:password they may carry.
    throw new Error(`cannot connect to NATS at ${list.map(redactUrl).join(', ')}: ${describeConnectError(err)}`, {
      cause: err,
    });
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

/** What the operator should check, from nats.js's connect error. */
function describeConnectError(err: unknown): string {
  const e = err as { message?: string; name?: string; cause?: { message?: string; name?: string } } | null;
  const text = String(e?.message ?? err);
  // nats.js v3 names the refusal in the error's class or its cause as well as in the text.
  const all = [text, e?.name, e?.cause?.message, e?.cause?.name].join(' ');
  if (/authoriz|authenticat|permission/i.test(all)) {
    return 'authorization refused: check NATS_CREDS, NATS_TOKEN or NATS_USER/NATS_PASSWORD';
  }
  if (/tls|certificate|ssl/i.test(text)) return `TLS failed (${text}): check NATS_TLS_CA, NATS_TLS_CERT, NATS_TLS_KEY`;
  return 'check NATS_URL and that nats-server runs with -js';
}

/** `nats://user:pass@host:4222` → `nats://host:4222`; credentials never reach a log line. */
export function redactUrl(u: string): string {
  return u.replace(/\/\/[^@/]*@/, '//').replace(/^[^/@]*@/, '');
}
