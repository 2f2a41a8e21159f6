/**
 * Unit: the OTEL_* settings (INTERFACE §10.7) as loadConfig and the bin's preload read them,
 * and tracing off: with `none` nothing of the SDK runs (no provider registered, no context
 * captured, no trace header written).
 */
import { ProxyTracerProvider, trace } from '@opentelemetry/api';
import { headers as natsHeaders } from '@nats-io/transport-node';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { requestedTracing } from '../../src/config-tracing.js';
import { withTraceHeaders } from '../../src/telemetry/nats-trace.js';
import { activeTraceIds, captureContext, edgeTracingPlugin, tracingOn } from '../../src/telemetry/tracing.js';

describe('OTEL_* settings', () => {
  it('default to no traces, the standard endpoint and protobuf, as connector-service', () => {
    expect(loadConfig({}).tracing).toEqual({
      exporter: 'none',
      url: 'http://localhost:4318/v1/traces',
      protocol: 'http/protobuf',
      serviceName: 'connector-service',
    });
  });

  it('append v1/traces to the base endpoint; a traces endpoint is taken as it is', () => {
    const c = (env: Record<string, string>) => loadConfig({ OTEL_TRACES_EXPORTER: 'otlp', ...env }).tracing;
    expect(c({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }).url).toBe('http://collector:4318/v1/traces');
    expect(c({ OTEL_EXPORTER_OTLP_ENDPOINT: 'https://otel.example/otlp/' }).url).toBe(
      'https://otel.example/otlp/v1/traces',
    );
    expect(
      c({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://traces:9999/in',
      }).url,
    ).toBe('http://traces:9999/in');
    expect(c({ OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_SERVICE_NAME: 'edge-eu' })).toMatchObject({
      exporter: 'otlp',
      protocol: 'http/json',
      serviceName: 'edge-eu',
    });
  });

  it.each([
    [{ OTEL_TRACES_EXPORTER: 'jaeger' }, 'OTEL_TRACES_EXPORTER'],
    [{ OTEL_TRACES_EXPORTER: 'otlp,console' }, 'OTEL_TRACES_EXPORTER'],
    [{ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }, 'OTEL_EXPORTER_OTLP_PROTOCOL'],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' }, 'OTEL_EXPORTER_OTLP_ENDPOINT'],
    [{ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'udp://x' }, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'],
    [{ OTEL_SERVICE_NAME: 'x'.repeat(256) }, 'OTEL_SERVICE_NAME'],
  ])('refuses %j naming %s', (env, setting) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    try {
      loadConfig(env);
    } catch (err) {
      expect((err as ConfigError).setting).toBe(setting);
    }
  });

  it('the preload starts tracing only for otlp or console, never on a bad value', () => {
    expect(requestedTracing({})).toBeNull();
    expect(requestedTracing({ OTEL_TRACES_EXPORTER: 'none' })).toBeNull();
    expect(requestedTracing({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).toBeNull();
    expect(requestedTracing({ OTEL_TRACES_EXPORTER: 'console' })?.exporter).toBe('console');
    // Other settings are not its business: loadConfig reports them.
    expect(requestedTracing({ OTEL_TRACES_EXPORTER: 'otlp', PORT: 'eighty' })?.exporter).toBe('otlp');
  });
});

describe('tracing off (OTEL_TRACES_EXPORTER=none)', () => {
  it('registers no provider and does no tracing work', () => {
    expect(tracingOn()).toBe(false);
    const provider = trace.getTracerProvider();
    expect(provider).toBeInstanceOf(ProxyTracerProvider);
    expect((provider as ProxyTracerProvider).getDelegate().constructor.name).toBe('NoopTracerProvider');
    expect(captureContext()).toBeUndefined();
    expect(activeTraceIds()).toBeNull();
    expect(edgeTracingPlugin()).toBeNull();
  });

  it('writes no trace header on NATS messages: the headers go out as they were', () => {
    expect(withTraceHeaders(undefined)).toBeUndefined();
    const h = natsHeaders();
    h.set('Svc-Seal', 'x');
    expect(withTraceHeaders(h)).toBe(h);
    expect([...h.keys()]).toEqual(['Svc-Seal']);
  });
});
