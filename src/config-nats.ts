/**
 * NATS connection settings (INTERFACE.md §1 "NATS"): at most one way to authenticate, TLS
 * files that only make sense in pairs, replicas and the ingest stream's byte limit.
 */
import { ConfigError, type Env } from './config-env.js';

export interface NatsSettings {
  credsFile: string | null;
  token: string | null;
  user: string | null;
  password: string | null;
  tlsCaFile: string | null;
  tlsCertFile: string | null;
  tlsKeyFile: string | null;
  /** Replicas of the ingest stream and every KV bucket. */
  replicas: number;
  /** Byte limit of the ingest stream (discard new when full). */
  ingestMaxBytes: number;
}

/** One way to authenticate at most, and the pairs that only make sense together. */
export function natsSettings(e: Env): NatsSettings {
  const ways = [e.NATS_CREDS && 'NATS_CREDS', e.NATS_TOKEN && 'NATS_TOKEN', e.NATS_USER && 'NATS_USER'];
  const set = ways.filter(Boolean) as string[];
  if (set.length > 1)
    throw new ConfigError(set[1]!, `cannot be combined with ${set[0]}; choose one way to authenticate`);
  if (e.NATS_USER && !e.NATS_PASSWORD) throw new ConfigError('NATS_PASSWORD', 'is required with NATS_USER');
  if (e.NATS_PASSWORD && !e.NATS_USER) throw new ConfigError('NATS_USER', 'is required with NATS_PASSWORD');
  if (Boolean(e.NATS_TLS_CERT) !== Boolean(e.NATS_TLS_KEY)) {
    throw new ConfigError(e.NATS_TLS_CERT ? 'NATS_TLS_KEY' : 'NATS_TLS_CERT', 'is required with the other one');
  }
  return {
    credsFile: e.NATS_CREDS ?? null,
    token: e.NATS_TOKEN ?? null,
    user: e.NATS_USER ?? null,
    password: e.NATS_PASSWORD ?? null,
    tlsCaFile: e.NATS_TLS_CA ?? null,
    tlsCertFile: e.NATS_TLS_CERT ?? null,
    tlsKeyFile: e.NATS_TLS_KEY ?? null,
    replicas: e.SERVICE_NATS_REPLICAS ?? 1,
    ingestMaxBytes: e.SERVICE_INGEST_MAX_BYTES ?? 1024 * 1024 * 1024,
  };
}
