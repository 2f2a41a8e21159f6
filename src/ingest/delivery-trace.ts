/**
 * The ingest path's spans past the publish (INTERFACE §10.7; ARCHITECTURE "Seeing inside"),
 * started only when tracing runs:
 *
 * - `ingest.deliver`, one per event and attempt, in the event's own trace (the parent is the
 *   publisher's span, from the message's `traceparent`): from the hand-over to the install
 *   actor until its transaction committed or failed.
 * - `ingest.commit`, one per transaction, a trace of its own: one transaction carries many
 *   events of many traces, so it links each event's `ingest.deliver` (and each of those links
 *   back to it) instead of having a parent. Its Postgres statements are its children.
 *
 * An event's span is found again by the event object itself, which travels unchanged from
 * the consumer through the install actor (a local dispatch) to the committer.
 */
import type { IngestEvent } from '../runtime/ports.js';
import { noteEffectParent } from '../telemetry/effect-trace.js';
import { failSpan, inSpan, ROOT_CONTEXT, SpanKind, tracer, type Span } from '../telemetry/tracing.js';
import type { IngestDeliveryMeta } from './settle.js';
import type { IngestPart, PartOutcome } from './transaction.js';
import { eventAttributes } from './trace-attributes.js';

const deliverySpans = new WeakMap<IngestEvent, Span>();

/** Starts each event's `ingest.deliver`; `end` closes them all with the delivery's outcome. */
export function startDeliverySpans(
  events: readonly IngestEvent[],
  meta: readonly IngestDeliveryMeta[],
): { end(err?: unknown): void } {
  const spans = events.map((ev, i) => {
    const m = meta[i];
    const span = tracer().startSpan(
      'ingest.deliver',
      {
        kind: SpanKind.CONSUMER,
        attributes: {
          ...eventAttributes(ev),
          'messaging.operation.type': 'process',
          'ingest.batch_events': events.length,
          ...(m ? { 'ingest.stream_seq': m.streamSeq, 'ingest.delivery_count': m.deliveryCount } : {}),
        },
      },
      m?.trace ?? ROOT_CONTEXT,
    );
    deliverySpans.set(ev, span);
    return span;
  });
  return {
    end(err?: unknown) {
      for (const s of spans) {
        if (err !== undefined) failSpan(s, err);
        s.end();
      }
    },
  };
}

/**
 * Runs one ingest transaction (`commit`) inside `ingest.commit`, linked both ways with the
 * deliveries of its events; once committed, notes each new event that caused effects as
 * their parent (telemetry/effect-trace.ts).
 */
export function traceCommit(
  parts: readonly IngestPart[],
  commit: () => Promise<PartOutcome[]>,
): Promise<PartOutcome[]> {
  const delivered = parts.flatMap((p) => p.events.flatMap((ev) => deliverySpans.get(ev) ?? []));
  const installs = new Set(parts.map((p) => p.ctx.install.install_id));
  const attributes = {
    'ingest.installs': installs.size,
    'ingest.events': parts.reduce((n, p) => n + p.events.length, 0),
    ...(installs.size === 1
      ? { 'install.id': [...installs][0]!, 'connector.id': parts[0]!.ctx.install.connector_id }
      : {}),
  };
  const links = delivered.map((s) => ({ context: s.spanContext() }));
  return inSpan('ingest.commit', { parent: ROOT_CONTEXT, attributes, links }, async (span) => {
    for (const s of delivered) s.addLink({ context: span.spanContext() });
    const outcomes = await commit();
    for (const [i, p] of parts.entries()) {
      if (!outcomes[i] || outcomes[i].effects === 0) continue;
      for (const [j, ev] of p.events.entries()) {
        const s = deliverySpans.get(ev);
        if (s && outcomes[i].stored[j]) noteEffectParent(ev.installId, ev.id, s.spanContext());
      }
    }
    return outcomes;
  });
}
