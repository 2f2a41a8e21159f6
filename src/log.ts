/**
 * The one pino root. Children are bound with `{ node, shard, actor, installId, tenantId }`.
 * Secrets are redacted by path so a careless `log.info({ config })` still leaks nothing.
 */
import { pino, type Logger, type DestinationStream } from 'pino';

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

export function createLogger(opts: { level: string; node: string }, dest?: DestinationStream): Logger {
  return pino(
    {
      level: opts.level,
      base: { node: opts.node },
      redact: { paths: REDACT, censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    dest,
  );
}
