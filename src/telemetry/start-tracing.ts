/**
 * Starts the OpenTelemetry SDK (INTERFACE §10.7): a tracer provider with the configured
 * exporter, the W3C trace-context propagator, and the instrumentations of the libraries the
 * service calls through: `pg` (Postgres), `undici` (every upstream call: Slack's and
 * GitHub's SDKs and the indexer client all send through Node's fetch) and `@fastify/otel`
 * (the edge, a plugin the edge registers itself: tracing.ts `edgeTracingPlugin`).
 *
 * Order matters for `pg` only: its instrumentation patches `pg/lib/client.js` when that file
 * is first required, so it must be enabled before anything imports `pg`. Our ESM `import pg`
 * reaches that file through `require()` inside pg's CommonJS code, which
 * require-in-the-middle sees, so no ESM loader hook (`--import` or `register()` of
 * `@opentelemetry/instrumentation/hook.mjs`) is needed: the `connectors` bin loads
 * telemetry/preload.ts before the CLI, and a test starts tracing in its first import. undici
 * is observed through its diagnostics channels and the edge plugin is registered explicitly,
 * so neither depends on load order.
 *
 * What the instrumentations record is kept to what is safe: `pg` only spans inside a traced
 * operation, with the statement text and never its parameters; undici the URL without its
 * query values; the edge the path without its query (an OAuth callback's `code`), no
 * exception events (a parse error quotes the body).
 */
import { context, propagation, trace } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { FastifyOtelInstrumentation } from '@fastify/otel';
import { OTLPTraceExporter as OtlpJsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as OtlpProtobufExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { registerInstrumentations } from '@opentelemetry/instrumentation';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  BatchSpanProcessor,
  ConsoleSpanExporter,
  NodeTracerProvider,
  SimpleSpanProcessor,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-node';
import type { FastifyPluginCallback } from 'fastify';
import type { TracingSettings } from '../config-tracing.js';
import { packageVersion } from '../version.js';
import { setTracing } from './tracing.js';

interface Running {
  provider: NodeTracerProvider;
  unregister: () => void;
}

let running: Running | null = null;

/** Probes and scrapes are not worth a trace each. */
const UNTRACED_PATHS = new Set(['/healthz', '/readyz', '/metrics']);

/**
 * Starts tracing for this process (once; a second call is ignored). `spanProcessor` replaces
 * the exporter the settings name (tests pass an in-memory one).
 */
export function startTracing(settings: TracingSettings, opts: { spanProcessor?: SpanProcessor } = {}): void {
  if (running) return;
  const processor = opts.spanProcessor ?? processorFor(settings);
  if (!processor) return;
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ 'service.name': settings.serviceName, 'service.version': packageVersion() }),
    spanProcessors: [processor],
  });
  provider.register({ propagator: new W3CTraceContextPropagator() });
  const fastify = new FastifyOtelInstrumentation({
    // One span per request: hook and handler spans would double the edge's spans for little.
    instrumentHooks: false,
    instrumentHandler: false,
    recordExceptions: false,
    ignorePaths: (r: { url: string }) => UNTRACED_PATHS.has(pathOf(r.url)),
    requestHook: (span, request: { url: string }) => span.setAttribute('url.path', pathOf(request.url)),
  });
  const unregister = registerInstrumentations({
    tracerProvider: provider,
    instrumentations: [
      new PgInstrumentation({ requireParentSpan: true, enhancedDatabaseReporting: false }),
      new UndiciInstrumentation({
        requireParentforSpans: true,
        startSpanHook: (req) => withoutQueryValues(req.origin, req.path),
      }),
      fastify,
    ],
  });
  running = { provider, unregister };
  setTracing({ edgePlugin: () => fastify.plugin() as FastifyPluginCallback, flush: () => flush(provider) });
}

function processorFor(s: TracingSettings): SpanProcessor | null {
  if (s.exporter === 'console') return new SimpleSpanProcessor(new ConsoleSpanExporter());
  if (s.exporter !== 'otlp') return null;
  const exporter =
    s.protocol === 'http/json' ? new OtlpJsonExporter({ url: s.url }) : new OtlpProtobufExporter({ url: s.url });
  return new BatchSpanProcessor(exporter);
}

/** Exports what has ended so far, waiting at most `timeoutMs`. */
async function flush(provider: NodeTracerProvider, timeoutMs = 5_000): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    provider.forceFlush(),
    new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs).unref())),
  ]).finally(() => clearTimeout(timer));
}

/** Flushes, then takes tracing down: the instrumentations, the provider, the global API. */
export async function stopTracing(): Promise<void> {
  const r = running;
  if (!r) return;
  running = null;
  setTracing(null);
  r.unregister();
  await r.provider.shutdown();
  trace.disable();
  context.disable();
  propagation.disable();
}

function pathOf(url: string): string {
  const q = url.indexOf('?');
  return q < 0 ? url : url.slice(0, q);
}

/** `url.full` and `url.query` with the query's names only: its values may be credentials. */
function withoutQueryValues(origin: string, path: string): Record<string, string> {
  const q = path.indexOf('?');
  if (q < 0) return { 'url.full': new URL(path, origin).href };
  const names = [...new URLSearchParams(path.slice(q + 1)).keys()].join('&');
  return { 'url.full': new URL(pathOf(path), origin).href + (names ? `?${names}` : ''), 'url.query': names };
}
