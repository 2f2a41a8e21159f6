/**
 * Trace export settings (INTERFACE §10.7), by OpenTelemetry's standard names:
 * `OTEL_TRACES_EXPORTER` (`otlp` | `console` | `none`, default `none`),
 * `OTEL_EXPORTER_OTLP_ENDPOINT` (the collector's base URL, default `http://localhost:4318`;
 * traces go to its `v1/traces`) or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (the full URL),
 * `OTEL_EXPORTER_OTLP_PROTOCOL` (`http/protobuf`, the default, or `http/json`) and
 * `OTEL_SERVICE_NAME` (default `connector-service`).
 */
import { envSchema, type Env } from './config-env.js';

export interface TracingSettings {
  exporter: 'otlp' | 'console' | 'none';
  /** Where OTLP spans are POSTed. */
  url: string;
  protocol: 'http/protobuf' | 'http/json';
  serviceName: string;
}

type TracingEnv = Pick<
  Env,
  | 'OTEL_TRACES_EXPORTER'
  | 'OTEL_EXPORTER_OTLP_ENDPOINT'
  | 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'
  | 'OTEL_EXPORTER_OTLP_PROTOCOL'
  | 'OTEL_SERVICE_NAME'
>;

export function tracingSettings(e: TracingEnv): TracingSettings {
  const base = e.OTEL_EXPORTER_OTLP_ENDPOINT ?? 'http://localhost:4318';
  return {
    exporter: e.OTEL_TRACES_EXPORTER ?? 'none',
    // The OTLP/HTTP convention: the signal's path is appended to the base endpoint.
    url: e.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? new URL('v1/traces', base.endsWith('/') ? base : `${base}/`).href,
    protocol: e.OTEL_EXPORTER_OTLP_PROTOCOL ?? 'http/protobuf',
    serviceName: e.OTEL_SERVICE_NAME ?? 'connector-service',
  };
}

const tracingEnvSchema = envSchema.pick({
  OTEL_TRACES_EXPORTER: true,
  OTEL_EXPORTER_OTLP_ENDPOINT: true,
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: true,
  OTEL_EXPORTER_OTLP_PROTOCOL: true,
  OTEL_SERVICE_NAME: true,
});

/**
 * For the preload (telemetry/preload.ts), before any command reads its config: the settings
 * when tracing is asked for, else null. A bad value gives null too: `loadConfig` then stops
 * the command naming the setting.
 */
export function requestedTracing(env: NodeJS.ProcessEnv): TracingSettings | null {
  const parsed = tracingEnvSchema.safeParse(env);
  if (!parsed.success) return null;
  const s = tracingSettings(parsed.data);
  return s.exporter === 'none' ? null : s;
}
