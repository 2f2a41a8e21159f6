/**
 * W3C trace context in NATS message headers (INTERFACE §10.7): the service writes
 * `traceparent` (and `tracestate`) itself on what it publishes (ingest events beside
 * `Nats-Msg-Id`, actor requests) and reads them back on the other side, since no
 * instrumentation of the NATS client exists that we would trust on the hot path.
 */
import { context, propagation, ROOT_CONTEXT, type Context, type TextMapGetter } from '@opentelemetry/api';
import { headers as natsHeaders, type MsgHdrs } from '@nats-io/transport-node';
import { tracingOn } from './tracing.js';

const getter: TextMapGetter<MsgHdrs | undefined> = {
  get: (h, key) => (h?.has(key) ? h.get(key) : undefined),
  keys: (h) => (h ? h.keys() : []),
};

/**
 * `h` with the active trace context added (a new header set when `h` is undefined and a
 * span is active); `h` itself, untouched, when tracing is off.
 */
export function withTraceHeaders(h: MsgHdrs | undefined): MsgHdrs | undefined {
  if (!tracingOn()) return h;
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  const entries = Object.entries(carrier);
  if (entries.length === 0) return h;
  const out = h ?? natsHeaders();
  for (const [k, v] of entries) out.set(k, v);
  return out;
}

/** The trace context a message carries (the root context when it carries none). */
export function contextOfHeaders(h: MsgHdrs | undefined): Context {
  return propagation.extract(ROOT_CONTEXT, h, getter);
}
