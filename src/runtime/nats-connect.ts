/**
 * Connecting to NATS (INTERFACE §9.1, §9.2): a node's long-lived connection and an operator
 * command's one-shot one, with the deployment's credentials and TLS.
 *
 * Contract:
 * - `connectNats` fails fast when no server answers at start (the process manager restarts
 *   us), but once connected it reconnects forever with a growing delay: a node that lost
 *   NATS must come back by itself, and its shard leases fence themselves meanwhile.
 * - `connectNatsOnce` (a CLI command) gives up on the first connect within the same budget
 *   and keeps nats.js's own bounded reconnects; it logs nothing.
 * - Neither names a server with the user:password its URL may carry (`redactUrl`).
 */
import { readFileSync } from 'node:fs';
import { connect, credsAuthenticator, type NatsConnection, type NodeConnectionOptions } from '@nats-io/transport-node';
import type { NatsSettings } from '../config.js';
import type { Logger } from '../log.js';

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
function natsAuthOptions(a: NonNullable<ConnectNatsOptions['auth']>): Partial<NodeConnectionOptions> {
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
/** The whole first connect, however many servers are listed (eight at 2 s each took 16 s). */
const CONNECT_DEADLINE_MS = CONNECT_BUDGET_MS;

/**
 * `connecting`, or a timeout at CONNECT_DEADLINE_MS; a connection that arrives after it is closed.
 */
async function withinConnectDeadline(connecting: Promise<NatsConnection>): Promise<NatsConnection> {
  let timer: NodeJS.Timeout | undefined;
  let late = false;
  try {
    return await Promise.race([
      connecting,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          late = true;
          reject(new Error(`no server answered within ${CONNECT_DEADLINE_MS / 1000} s (TIMEOUT)`));
        }, CONNECT_DEADLINE_MS);
      }),
    ]);
  } finally {
    clearTimeout(timer);
    if (late)
      connecting.then(
        (nc) => void nc.close(),
        () => undefined,
      );
  }
}

/** See `pendingLimit` in connectNats. */
const OUTBOUND_FLUSH_BYTES = 512 * 1024;

export async function connectNats({ servers, name, log, auth }: ConnectNatsOptions): Promise<NatsConnection> {
  const list = Array.isArray(servers) ? servers : [servers];
  let outageStart: number | null = null;
  let nc: NatsConnection;
  const authOptions = auth ? natsAuthOptions(auth) : {};
  try {
    nc = await withinConnectDeadline(
      connect({
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
      }),
    );
  } catch (err) {
    throw connectError(list, err);
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

/**
 * A connection for one operator command (`connectors dead-letters replay`, `connectors
 * tenants delete`): the deployment's servers, credentials and TLS, and the first connect
 * bounded as a node's is (INTERFACE §9.1: a command that cannot start gives up well within
 * 15 s). Throws the same redacted "cannot connect to NATS at …" error as `connectNats`.
 */
export async function connectNatsOnce(
  servers: string[],
  auth: NonNullable<ConnectNatsOptions['auth']>,
  name: string,
): Promise<NatsConnection> {
  const authOptions = natsAuthOptions(auth);
  try {
    return await withinConnectDeadline(
      connect({ ...authOptions, servers, name, timeout: handshakeTimeoutMs(servers.length) }),
    );
  } catch (err) {
    throw connectError(servers, err);
  }
}

function connectError(servers: string[], err: unknown): Error {
  return new Error(`cannot connect to NATS at ${servers.map(redactUrl).join(', ')}: ${describeConnectError(err)}`, {
    cause: err,
  });
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

/**
 * `nats://user:pass@host:4222` → `nats://host:4222`; credentials never reach a log line. The
 * server follows the last `@` (a password may hold an unencoded `@` or `/`): all before it goes.
 */
export function redactUrl(u: string): string {
  const at = u.lastIndexOf('@');
  if (at < 0) return u;
  const scheme = /^[a-z][a-z0-9+.-]*:\/\//i.exec(u)?.[0] ?? '';
  return scheme + u.slice(at + 1);
}
