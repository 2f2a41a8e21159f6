/**
 * The one pino root. Children are bound with `{ node, shard, actor, installId, tenantId }`.
 * Secrets are redacted by path so a careless `log.info({ config })` still leaks nothing.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { pino, type Logger, type DestinationStream } from 'pino';
import { activeTraceIds } from './telemetry/tracing.js';

export type { Logger } from 'pino';

const REDACT = [
  'masterKey',
  '*.masterKey',
  'config.masterKey',
  '*.clientSecret',
  '*.signingSecret',
  '*.appToken',
  '*.privateKeyPem',
  '*.webhookSecret',
  '*.apiToken',
  '*.databaseUrl',
  'databaseUrl',
  'token',
  '*.token',
  'access_token',
  '*.access_token',
  'refresh_token',
  '*.refresh_token',
  'api_key',
  '*.api_key',
  'authorization',
  '*.authorization',
  'headers.authorization',
  'req.headers.authorization',
  'req.headers["x-service-admin-token"]',
  'req.headers.cookie',
];

/** What every log line made while serving one request carries (INTERFACE §9.3: `request_id`). */
export interface LogContext {
  request_id: string;
}

/**
 * The request a piece of code runs for. The edge enters it per request and the actor
 * host per actor request, so any logger (the root's children included) tags its lines
 * without the id being threaded through every call.
 */
export const logContext = new AsyncLocalStorage<LogContext>();

/** The current request's id, or undefined outside a request. */
export function currentRequestId(): string | undefined {
  return logContext.getStore()?.request_id;
}

export function createLogger(opts: { level: string; node: string }, dest?: DestinationStream): Logger {
  return pino(
    {
      level: opts.level,
      base: { node: opts.node },
      redact: { paths: REDACT, censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      // INTERFACE §10.7: a line logged inside a traced span carries its `trace_id` and `span_id`.
      mixin: () => {
        const ids = activeTraceIds();
        const request = logContext.getStore();
        return ids === null ? (request ?? {}) : { ...request, ...ids };
      },
    },
    dest,
  );
}
