/**
 * The chat connector's own counters (INTERFACE §10.6): gaps recorded in Slack's deliveries,
 * by reason, and messages the catch-up found missing and ingested. Without a registry
 * (route-only tests) they count into one of their own.
 */
import { Counter, Registry } from 'prom-client';

export function chatCatchUpMetrics(registry: Registry | undefined) {
  const registers = [registry ?? new Registry()];
  return {
    gaps: new Counter({
      name: 'connector_service_chat_gaps_total',
      help: 'Gaps recorded in Slack event deliveries, by reason (app_rate_limited, refused, outage), per install',
      labelNames: ['reason'],
      registers,
    }),
    recovered: new Counter({
      name: 'connector_service_chat_catch_up_recovered_total',
      help: 'Chat messages a catch-up found missing after a gap and ingested (INTERFACE §10.6)',
      registers,
    }),
  };
}
