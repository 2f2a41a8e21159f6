/**
 * Loaded by bin/connectors.js before the CLI (INTERFACE §10.7): when OTEL_TRACES_EXPORTER
 * asks for traces, the SDK and its instrumentations start here, before any module of the
 * service imports `pg` (start-tracing.ts says why that order matters). With `none`, or a bad
 * setting (which `loadConfig` then reports, naming it), nothing of the SDK is even loaded.
 */
import { requestedTracing } from '../config-tracing.js';

const settings = requestedTracing(process.env);
if (settings) {
  const { startTracing } = await import('./start-tracing.js');
  startTracing(settings);
}
