/**
 * Tracing as the service's code sees it (INTERFACE §10.7; ARCHITECTURE "Seeing inside"): one
 * switch and a few helpers over @opentelemetry/api. The switch is on only once
 * start-tracing.ts started the SDK (OTEL_TRACES_EXPORTER `otlp` or `console`, or a test's own
 * exporter). With `none` every helper returns at once: the hot path reads one boolean and
 * does nothing else (no provider is registered, no context is captured or propagated).
 *
 * Spans carry ids (install, connector, tenant, event, effect kind), never a secret, a token
 * or message text: a failure is recorded by its §2 code or class name, not its message,
 * since a message may quote input.
 */
import {
  context,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Link,
  type Span,
  type Tracer,
} from '@opentelemetry/api';
import type { FastifyPluginCallback } from 'fastify';

export { ROOT_CONTEXT, SpanKind, type Context, type Span } from '@opentelemetry/api';

/** What the running SDK lends the rest of the service (start-tracing.ts). */
export interface RunningTracing {
  /** The edge's request spans (@fastify/otel), a plugin to register before any route. */
  edgePlugin(): FastifyPluginCallback;
  /** Exports what has ended so far (bounded). */
  flush(): Promise<void>;
}

let on = false;
let sdk: RunningTracing | null = null;

/** Whether tracing runs in this process (start-tracing.ts turns it on). */
export function tracingOn(): boolean {
  return on;
}

/** Only start-tracing.ts calls this. */
export function setTracing(running: RunningTracing | null): void {
  sdk = running;
  on = running !== null;
}

/** The edge's tracing plugin; null when tracing is off. */
export function edgeTracingPlugin(): FastifyPluginCallback | null {
  return sdk ? sdk.edgePlugin() : null;
}

/** Exports the spans ended so far (a node's stop); nothing when tracing is off. */
export async function flushTracing(): Promise<void> {
  await sdk?.flush();
}

export function tracer(): Tracer {
  return trace.getTracer('connector-service');
}

export interface SpanOptions {
  kind?: SpanKind;
  attributes?: Attributes;
  links?: Link[];
  /** Default: the active context. */
  parent?: Context;
}

/**
 * Runs `fn` in a new active span, ended when `fn` settles; a throw marks it failed. Callers
 * check `tracingOn()` first, so nothing here runs when tracing is off.
 */
export async function inSpan<T>(name: string, opts: SpanOptions, fn: (span: Span) => Promise<T>): Promise<T> {
  const parent = opts.parent ?? context.active();
  const span = tracer().startSpan(
    name,
    { kind: opts.kind ?? SpanKind.INTERNAL, attributes: opts.attributes, links: opts.links },
    parent,
  );
  try {
    return await context.with(trace.setSpan(parent, span), () => fn(span));
  } catch (err) {
    failSpan(span, err);
    throw err;
  } finally {
    span.end();
  }
}

/** Marks `span` failed, by the error's code or class name only. */
export function failSpan(span: Span, err: unknown): void {
  const type = errorType(err);
  span.setStatus({ code: SpanStatusCode.ERROR, message: type });
  span.setAttribute('error.type', type);
}

/** `failSpan` on the active span, if tracing runs (an outcome caught where it happened). */
export function failActiveSpan(err: unknown): void {
  if (!on) return;
  const span = trace.getActiveSpan();
  if (span) failSpan(span, err);
}

function errorType(err: unknown): string {
  const e = err as { code?: unknown; name?: unknown } | null;
  if (typeof e?.code === 'string' && /^[A-Za-z0-9_.-]{1,64}$/.test(e.code)) return e.code;
  if (typeof e?.name === 'string' && /^[A-Za-z0-9_.-]{1,64}$/.test(e.name)) return e.name;
  return 'Error';
}

/** The active context, to carry across a queue (an actor's mailbox); undefined when off. */
export function captureContext(): Context | undefined {
  return on ? context.active() : undefined;
}

/** Runs `fn` in a context `captureContext` gave (as it is when there is none). */
export function runInContext<T>(ctx: Context | undefined, fn: () => T): T {
  return ctx === undefined ? fn() : context.with(ctx, fn);
}

/** The active span's ids for a log line (INTERFACE §10.7: `trace_id`); null when off or outside a span. */
export function activeTraceIds(): { trace_id: string; span_id: string } | null {
  if (!on) return null;
  const sc = trace.getSpanContext(context.active());
  return sc && trace.isSpanContextValid(sc) ? { trace_id: sc.traceId, span_id: sc.spanId } : null;
}
