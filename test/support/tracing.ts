/**
 * Tracing on for this test file, into memory (INTERFACE §10.7). Import it first: the `pg`
 * instrumentation patches pg as it loads (src/telemetry/start-tracing.ts), so this must run
 * before anything imports the service. Vitest runs each test file in a fresh worker, so a
 * file that imports this traces and the others do not.
 */
import { InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-node';
import { isWrapped } from '@opentelemetry/instrumentation';
import { startTracing, stopTracing } from '../../src/telemetry/start-tracing.js';

export const exported = new InMemorySpanExporter();

startTracing(
  { exporter: 'none', url: 'http://127.0.0.1:9/v1/traces', protocol: 'http/json', serviceName: 'connector-service' },
  { spanProcessor: new SimpleSpanProcessor(exported) },
);
// Loaded only now, after the instrumentations: a static import would run before them.
const pg = (await import('pg')).default;
if (!isWrapped(pg.Client.prototype.query)) {
  throw new Error('pg was loaded before tracing started: import test/support/tracing.js first');
}

export const finishedSpans = (): ReadableSpan[] => exported.getFinishedSpans();

export { stopTracing };
