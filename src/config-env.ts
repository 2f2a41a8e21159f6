/**
 * The environment as the service reads it (spec §5, INTERFACE.md §1): one zod schema, the
 * shape each variable may take, and which of them are secrets. `config.ts` derives the
 * settings from the parsed result; this file only says what a well-formed value looks like.
 */
import { z } from 'zod';

export class ConfigError extends Error {
  constructor(
    readonly setting: string,
    problem: string,
  ) {
    super(`${setting}: ${problem}`);
    this.name = 'ConfigError';
  }
}

/** Settings whose values never appear in logs or errors. */
export const SECRET_SETTINGS = [
  'SERVICE_MASTER_KEY',
  'CHATAPP_CLIENT_SECRET',
  'CHATAPP_SIGNING_SECRET',
  'CHATAPP_APP_TOKEN',
  'CODEHOST_APP_PRIVATE_KEY_PEM',
  'CODEHOST_WEBHOOK_SECRET',
  'SERVICE_ADMIN_API_TOKEN',
  'DATABASE_URL',
  'SERVICE_MASTER_KEY_PREVIOUS',
  'DATABASE_MIGRATE_URL',
  'NATS_TOKEN',
  'NATS_PASSWORD',
] as const;

const empty = (v: unknown) => (typeof v === 'string' && v.trim() === '' ? undefined : v);
const opt = z.preprocess(empty, z.string().optional());
const bool = z.preprocess(
  empty,
  z
    .enum(['true', 'false', '1', '0', 'TRUE', 'FALSE', 'True', 'False'], { message: 'must be true or false' })
    .optional()
    .transform((v) => v === 'true' || v === '1' || v === 'TRUE' || v === 'True'),
);
export const httpUrl = z.url({ protocol: /^https?$/, message: 'must be an absolute http(s) URL' });
const intIn = (min: number, max: number) =>
  z.preprocess(
    empty,
    z
      .string()
      .regex(/^\d+$/, { message: 'must be a whole number' })
      .transform(Number)
      .pipe(
        z
          .number()
          .int()
          .min(min, { message: `must be at least ${min}` })
          .max(max, { message: `must be at most ${max}` }),
      )
      .optional(),
  );

export const envSchema = z.object({
  DATABASE_URL: z.preprocess(
    empty,
    z
      .string()
      .regex(/^postgres(ql)?:\/\//, { message: 'must be a postgres:// connection string' })
      .optional(),
  ),
  NATS_URL: z.preprocess(empty, z.string().optional()),
  SERVICE_NAMESPACE: z.preprocess(
    empty,
    z
      .string()
      .regex(/^[A-Za-z0-9_-]{1,32}$/, { message: 'must be 1-32 letters, digits, "_" or "-"' })
      .optional(),
  ),
  HOST: opt,
  PORT: intIn(0, 65535),
  NODE_ID: z.preprocess(
    empty,
    z
      .string()
      .regex(/^[A-Za-z0-9_.:-]{1,100}$/, { message: 'must be 1-100 letters, digits, "_", ".", ":" or "-"' })
      .optional(),
  ),
  LOG_LEVEL: z.preprocess(empty, z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).optional()),
  SERVICE_MASTER_KEY: opt,
  SERVICE_SHARDS: intIn(1, 4096),
  SERVICE_LEASE_TTL_S: intIn(3, 300),
  SERVICE_ADMIN_ENDPOINTS: opt,
  SERVICE_ADMIN_API_TOKEN: opt,
  CHATAPP_CLIENT_ID: opt,
  CHATAPP_CLIENT_SECRET: opt,
  CHATAPP_SIGNING_SECRET: opt,
  CHATAPP_APP_TOKEN: opt,
  CHATAPP_APP_TIER: z.preprocess(
    empty,
    z.enum(['non_marketplace', 'marketplace'], { message: 'must be non_marketplace or marketplace' }).optional(),
  ),
  CHATAPP_USE_SOCKET_MODE: bool,
  CHATAPP_API_URL: z.preprocess(empty, httpUrl.optional()),
  CHATAPP_AUTHORIZE_URL: z.preprocess(empty, httpUrl.optional()),
  CHATAPP_SCOPES: opt,
  CHATAPP_BACKFILL_PACING_DIVISOR: intIn(1, 1_000_000),
  CODEHOST_CONNECTOR_ENABLED: bool,
  CODEHOST_APP_ID: intIn(1, Number.MAX_SAFE_INTEGER),
  CODEHOST_APP_PRIVATE_KEY_PEM: opt,
  CODEHOST_WEBHOOK_SECRET: opt,
  CODEHOST_API_URL: z.preprocess(empty, httpUrl.optional()),
  SERVICE_INDEXER_DAEMON_URL_TEMPLATE: opt,
  SERVICE_REPO_CAP_PER_TENANT: intIn(1, 100000),
  // INTERFACE §9.2: rotation, abuse limits; the migration role's connection (§9 fences).
  SERVICE_MASTER_KEY_PREVIOUS: opt,
  SERVICE_TENANT_RATE_PER_S: intIn(1, 1_000_000),
  SERVICE_METRICS_PORT: intIn(1, 65535),
  DATABASE_MIGRATE_URL: z.preprocess(
    empty,
    z
      .string()
      .regex(/^postgres(ql)?:\/\//, { message: 'must be a postgres:// connection string' })
      .optional(),
  ),
  // INTERFACE §9.2, §9.4
  NATS_CREDS: opt,
  NATS_TOKEN: opt,
  NATS_USER: opt,
  NATS_PASSWORD: opt,
  NATS_TLS_CA: opt,
  NATS_TLS_CERT: opt,
  NATS_TLS_KEY: opt,
  SERVICE_NATS_REPLICAS: intIn(1, 5),
  SERVICE_INGEST_MAX_BYTES: intIn(1024 * 1024, Number.MAX_SAFE_INTEGER),
  SERVICE_INGEST_COMMIT_SLOTS: intIn(1, 64),
  SERVICE_INGEST_MAX_IN_FLIGHT: intIn(64, 1_000_000),
  SERVICE_INGEST_MAX_IN_FLIGHT_BYTES: intIn(1024 * 1024, Number.MAX_SAFE_INTEGER),
  SERVICE_HEAP_GROWING_PERCENT: intIn(0, 1000),
  SERVICE_GITHUB_RECONCILE_S: intIn(0, 86_400),
  // INTERFACE §10.1, §10.2 (config-follow.ts)
  SERVICE_CHANGES_RETENTION_DAYS: intIn(1, 3650),
  SERVICE_WEBHOOKS_ALLOW_HTTP: z.preprocess(empty, z.enum(['0', '1'], { message: 'must be 0 or 1' }).optional()),
  SERVICE_WEBHOOKS_ALLOW_PRIVATE: z.preprocess(empty, z.enum(['0', '1'], { message: 'must be 0 or 1' }).optional()),
  // INTERFACE §10.5
  SERVICE_EVENTS_RETENTION_DAYS: intIn(1, 36_500),
  SERVICE_UNINSTALLED_RETENTION_DAYS: intIn(0, 36_500),
  // INTERFACE §10.7: OpenTelemetry's own names and values (config-tracing.ts).
  OTEL_TRACES_EXPORTER: z.preprocess(
    empty,
    z.enum(['otlp', 'console', 'none'], { message: 'must be otlp, console or none' }).optional(),
  ),
  OTEL_EXPORTER_OTLP_ENDPOINT: z.preprocess(empty, httpUrl.optional()),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: z.preprocess(empty, httpUrl.optional()),
  OTEL_EXPORTER_OTLP_PROTOCOL: z.preprocess(
    empty,
    z.enum(['http/protobuf', 'http/json'], { message: 'must be http/protobuf or http/json' }).optional(),
  ),
  OTEL_SERVICE_NAME: z.preprocess(empty, z.string().max(255, { message: 'must be at most 255 characters' }).optional()),
});

export type Env = z.infer<typeof envSchema>;
