/**
 * Which trace an effect runs in (INTERFACE §10.7: an event's trace reaches the effects it
 * causes and their upstream calls). The ingest commit notes, per stored event that caused
 * effects, the span of its delivery; the effect runner of the same node (the shard's owner
 * commits its events and runs their effects) starts `effect.run` under it. The note lives
 * in this process only, bounded: an effect run after a restart or a shard move, or once
 * `MAX_NOTES` newer events crowded it out, starts a trace of its own (its attributes still
 * name its install and event).
 */
import { ROOT_CONTEXT, trace, type Context, type SpanContext } from '@opentelemetry/api';

const MAX_NOTES = 10_000;
const notes = new Map<string, SpanContext>();

const keyOf = (installId: string, eventId: string) => `${installId}\n${eventId}`;

export function noteEffectParent(installId: string, eventId: string, parent: SpanContext): void {
  const key = keyOf(installId, eventId);
  notes.delete(key);
  notes.set(key, parent);
  if (notes.size > MAX_NOTES) notes.delete(notes.keys().next().value!);
}

/** The context to start an effect's span in: its event's delivery, or the root when not noted here. */
export function effectParent(installId: string, eventId: string): Context {
  const sc = notes.get(keyOf(installId, eventId));
  return sc ? trace.setSpanContext(ROOT_CONTEXT, sc) : ROOT_CONTEXT;
}
