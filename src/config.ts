/**
 * Every setting of the service (spec §5, INTERFACE.md §1), validated once with zod.
 *
 * `loadConfig(env)` returns a frozen `Config` or throws `ConfigError` naming the setting
 * (never its value: several settings are secrets). Derived switches live here and only
 * here: the chat transport, whether each connector is enabled, which code-host settings
 * are missing.
 */
import { createPrivateKey } from 'node:crypto';
import { hostname } from 'node:os';
import { ConfigError, envSchema, httpUrl } from './config-env.js';
import { natsSettings, type NatsSettings } from './config-nats.js';
import { tracingSettings, type TracingSettings } from './config-tracing.js';
import { followSettings, type FollowSettings } from './config-follow.js';
import {
  DEFAULT_COMMIT_SLOTS,
  DEFAULT_HEAP_GROWING_PERCENT,
  DEFAULT_INGEST_MAX_IN_FLIGHT,
  DEFAULT_INGEST_MAX_IN_FLIGHT_BYTES,
} from './config-defaults.js';

export { ConfigError, SECRET_SETTINGS } from './config-env.js';
export type { NatsSettings } from './config-nats.js';

type ChatTransport = 'http' | 'socket' | 'none';
type ChatAppTier = 'non_marketplace' | 'marketplace';

export interface Config {
  databaseUrl: string | null;
  natsServers: string[];
  namespace: string;
  host: string;
  port: number;
  nodeId: string;
  logLevel: string;
  /** Null only where a command does not need it (migrate). */
  masterKey: string | null;
  /** INTERFACE §9: security settings (rotation, abuse limits, the migration role). */
  security: {
    /** SERVICE_MASTER_KEY_PREVIOUS: earlier master keys still accepted for reads. */
    previousMasterKeys: string[];
    /** Requests per second per tenant on tenant routes; burst twice that. */
    tenantRatePerS: number;
    /** When set, /metrics is served on this port only. */
    metricsPort: number | null;
    /** DATABASE_MIGRATE_URL: the schema owner's connection for migrations (else DATABASE_URL). */
    migrateDatabaseUrl: string | null;
  };
  shards: number;
  /** Ingest transactions a node runs at once (ingest/commit.ts). */
  ingestCommitSlots: number;
  /** Ingest a node holds at once across its shards: events, and bytes of message data (ingest/buffer.ts). */
  ingestMaxInFlight: { events: number; bytes: number };
  /** V8's old-generation growing factor in percent over the live set; 0 = V8's own (node/heap-growth.ts). */
  heapGrowingPercent: number;
  leaseTtlMs: number;
  admin: { endpointsEnabled: boolean; apiToken: string | null };
  chatapp: {
    clientId: string | null;
    clientSecret: string | null;
    signingSecret: string | null;
    appToken: string | null;
    appTier: ChatAppTier;
    /** spec §5: Socket Mode wins over HTTP when both are configured (INTERFACE §8.18). */
    transport: ChatTransport;
    apiUrl: string;
    authorizeUrl: string;
    scopes: string[];
    /** Backfill pacing intervals are divided by this (1 in production; tests speed walks up). */
    backfillPacingDivisor: number;
    /** OAuth install possible: client id and secret set. */
    enabled: boolean;
  };
  codehost: {
    enabledFlag: boolean;
    appId: number | null;
    privateKeyPem: string | null;
    webhookSecret: string | null;
    indexerUrlTemplate: string | null;
    apiUrl: string;
    /** spec §8: enabled flag plus all five settings present. */
    enabled: boolean;
    /** Names of the five required settings that are missing (for the start-up warning). */
    missing: string[];
    repoCapPerTenant: number;
  };
  /** INTERFACE §9.2: NATS authentication, TLS and the limits of what the service creates there. */
  nats: NatsSettings;
  /** INTERFACE §9.4: GitHub delivery reconciliation period; 0 = off. */
  githubReconcileMs: number;
  /** INTERFACE §10.5: what the housekeeping actor deletes, in days (events, uninstalled installs). */
  retention: { eventsDays: number; uninstalledDays: number };
  /** INTERFACE §10.7: trace export (OTEL_*); started before the config is read (telemetry/preload.ts). */
  tracing: TracingSettings;
  /** INTERFACE §10.1, §10.2: the change feed's retention, which webhook URLs are allowed. */
  follow: FollowSettings;
}

const DEFAULT_CHAT_SCOPES = [
  'channels:history',
  'groups:history',
  'im:history',
  'mpim:history',
  'channels:read',
  'groups:read',
  'im:read',
  'mpim:read',
  'chat:write',
  'reactions:read',
  'reactions:write',
  'files:read',
  'users:read',
];

export interface LoadOptions {
  /** Refuse to start without DATABASE_URL (serve, migrate, tenants, users). */
  requireDatabase?: boolean;
  /** Refuse to start without SERVICE_MASTER_KEY (serve, tenants: keys and credentials). */
  requireMasterKey?: boolean;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env, opts: LoadOptions = {}): Readonly<Config> {
  const parsed = envSchema.safeParse(env);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const setting = String(issue.path[0] ?? 'environment');
    throw new ConfigError(setting, issue.message);
  }
  const e = parsed.data;

  if (opts.requireDatabase && !e.DATABASE_URL) throw new ConfigError('DATABASE_URL', 'is required');
  const masterKey = e.SERVICE_MASTER_KEY ?? null;
  if (masterKey !== null && Buffer.byteLength(masterKey, 'utf8') < 32) {
    // INTERFACE §8.17: the UTF-8 bytes are the HKDF input; fewer than 32 is refused.
    throw new ConfigError('SERVICE_MASTER_KEY', 'must be at least 32 bytes');
  }
  if (opts.requireMasterKey && masterKey === null) throw new ConfigError('SERVICE_MASTER_KEY', 'is required');
  const previousMasterKeys = (e.SERVICE_MASTER_KEY_PREVIOUS ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0 && s !== masterKey);
  if (previousMasterKeys.some((k) => Buffer.byteLength(k, 'utf8') < 32)) {
    throw new ConfigError('SERVICE_MASTER_KEY_PREVIOUS', 'every key must be at least 32 bytes');
  }
  if (e.SERVICE_METRICS_PORT !== undefined && e.SERVICE_METRICS_PORT === (e.PORT ?? 8080)) {
    throw new ConfigError('SERVICE_METRICS_PORT', 'must differ from PORT');
  }
  // Below 10 % the old generation would be collected almost all the time.
  const heapGrowth = e.SERVICE_HEAP_GROWING_PERCENT;
  if (heapGrowth !== undefined && heapGrowth > 0 && heapGrowth < 10) {
    throw new ConfigError('SERVICE_HEAP_GROWING_PERCENT', 'must be 0 (V8 decides) or from 10 to 1000');
  }

  const natsServers = (e.NATS_URL ?? 'nats://127.0.0.1:4222')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
  if (natsServers.length === 0 || natsServers.some((s) => !/^(nats|tls|wss?):\/\/[^\s]+$|^[^\s:/]+:\d+$/.test(s))) {
    throw new ConfigError('NATS_URL', 'must be nats://host:port entries, comma-separated');
  }

  const scopes = (e.CHATAPP_SCOPES ?? DEFAULT_CHAT_SCOPES.join(','))
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
  if (scopes.some((s) => !/^[a-z_.]+(:[a-z_.]+)*$/.test(s))) {
    throw new ConfigError('CHATAPP_SCOPES', 'must be comma-separated scope names');
  }

  let transport: ChatTransport = 'none';
  if (e.CHATAPP_USE_SOCKET_MODE) {
    if (!e.CHATAPP_APP_TOKEN)
      throw new ConfigError('CHATAPP_APP_TOKEN', 'is required when CHATAPP_USE_SOCKET_MODE=true');
    transport = 'socket';
  } else if (e.CHATAPP_SIGNING_SECRET) {
    transport = 'http';
  }

  const pem = e.CODEHOST_APP_PRIVATE_KEY_PEM ? normalisePem(e.CODEHOST_APP_PRIVATE_KEY_PEM) : null;
  if (pem !== null) {
    try {
      createPrivateKey(pem);
    } catch {
      throw new ConfigError('CODEHOST_APP_PRIVATE_KEY_PEM', 'is not a readable PEM private key');
    }
  }
  const template = e.SERVICE_INDEXER_DAEMON_URL_TEMPLATE ?? null;
  if (template !== null) checkIndexerTemplate(template);

  const five: Array<[string, unknown]> = [
    ['CODEHOST_APP_ID', e.CODEHOST_APP_ID],
    ['CODEHOST_APP_PRIVATE_KEY_PEM', pem],
    ['CODEHOST_WEBHOOK_SECRET', e.CODEHOST_WEBHOOK_SECRET],
    ['SERVICE_INDEXER_DAEMON_URL_TEMPLATE', template],
    ['SERVICE_MASTER_KEY', masterKey],
  ];
  const missing = five.filter(([, v]) => v === undefined || v === null).map(([k]) => k);

  const nats = natsSettings(e);

  const config: Config = {
    databaseUrl: e.DATABASE_URL ?? null,
    natsServers,
    namespace: e.SERVICE_NAMESPACE ?? 'svc',
    host: e.HOST ?? '127.0.0.1',
    port: e.PORT ?? 8080,
    nodeId:
      e.NODE_ID ??
      `${hostname()
        .replace(/[^A-Za-z0-9_.:-]/g, '-')
        .slice(0, 80)}-${process.pid}`,
    logLevel: e.LOG_LEVEL ?? 'info',
    masterKey,
    security: {
      previousMasterKeys,
      tenantRatePerS: e.SERVICE_TENANT_RATE_PER_S ?? 50,
      metricsPort: e.SERVICE_METRICS_PORT ?? null,
      migrateDatabaseUrl: e.DATABASE_MIGRATE_URL ?? null,
    },
    shards: e.SERVICE_SHARDS ?? 64,
    ingestCommitSlots: e.SERVICE_INGEST_COMMIT_SLOTS ?? DEFAULT_COMMIT_SLOTS,
    ingestMaxInFlight: {
      events: e.SERVICE_INGEST_MAX_IN_FLIGHT ?? DEFAULT_INGEST_MAX_IN_FLIGHT,
      bytes: e.SERVICE_INGEST_MAX_IN_FLIGHT_BYTES ?? DEFAULT_INGEST_MAX_IN_FLIGHT_BYTES,
    },
    heapGrowingPercent: e.SERVICE_HEAP_GROWING_PERCENT ?? DEFAULT_HEAP_GROWING_PERCENT,
    leaseTtlMs: (e.SERVICE_LEASE_TTL_S ?? 10) * 1000,
    admin: {
      endpointsEnabled: e.SERVICE_ADMIN_ENDPOINTS === '1',
      apiToken: e.SERVICE_ADMIN_API_TOKEN ?? null,
    },
    chatapp: {
      clientId: e.CHATAPP_CLIENT_ID ?? null,
      clientSecret: e.CHATAPP_CLIENT_SECRET ?? null,
      signingSecret: e.CHATAPP_SIGNING_SECRET ?? null,
      appToken: e.CHATAPP_APP_TOKEN ?? null,
      appTier: e.CHATAPP_APP_TIER ?? 'non_marketplace',
      transport,
      apiUrl: withTrailingSlash(e.CHATAPP_API_URL ?? 'https://slack.com/api/'),
      authorizeUrl: e.CHATAPP_AUTHORIZE_URL ?? 'https://slack.com/oauth/v2/authorize',
      scopes,
      backfillPacingDivisor: e.CHATAPP_BACKFILL_PACING_DIVISOR ?? 1,
      enabled: Boolean(e.CHATAPP_CLIENT_ID && e.CHATAPP_CLIENT_SECRET && masterKey),
    },
    codehost: {
      enabledFlag: e.CODEHOST_CONNECTOR_ENABLED,
      appId: e.CODEHOST_APP_ID ?? null,
      privateKeyPem: pem,
      webhookSecret: e.CODEHOST_WEBHOOK_SECRET ?? null,
      indexerUrlTemplate: template,
      apiUrl: (e.CODEHOST_API_URL ?? 'https://api.github.com').replace(/\/+$/, ''),
      enabled: e.CODEHOST_CONNECTOR_ENABLED && missing.length === 0,
      missing: e.CODEHOST_CONNECTOR_ENABLED ? missing : [],
      repoCapPerTenant: e.SERVICE_REPO_CAP_PER_TENANT ?? 50,
    },
    nats,
    githubReconcileMs: (e.SERVICE_GITHUB_RECONCILE_S ?? 300) * 1000,
    retention: {
      eventsDays: e.SERVICE_EVENTS_RETENTION_DAYS ?? 90,
      uninstalledDays: e.SERVICE_UNINSTALLED_RETENTION_DAYS ?? 30,
    },
    tracing: tracingSettings(e),
    follow: followSettings(e),
  };
  return deepFreeze(config);
}

/** Operators often paste a PEM with literal `\n` into a one-line secret. */
function normalisePem(v: string): string {
  return v.includes('\\n') && !v.includes('\n') ? v.replace(/\\n/g, '\n') : v;
}

function checkIndexerTemplate(t: string): void {
  const name = 'SERVICE_INDEXER_DAEMON_URL_TEMPLATE';
  if (!t.includes('{install}') || !t.includes('{repo}'))
    throw new ConfigError(name, 'must contain {install} and {repo}');
  const probe = t.replace('{install}', 'install').replace('{repo}', 'repo');
  if (!httpUrl.safeParse(probe).success) throw new ConfigError(name, 'must be an absolute http(s) URL template');
}

function withTrailingSlash(u: string): string {
  return u.endsWith('/') ? u : `${u}/`;
}

function deepFreeze<T>(o: T): T {
  if (o && typeof o === 'object') {
    for (const v of Object.values(o)) deepFreeze(v);
    Object.freeze(o);
  }
  return o;
}
