/**
 * Dead letters waiting for an operator as a metric (INTERFACE §9.1), counted in Postgres at
 * scrape time so every node reports the same cluster-wide figure.
 */
import { Gauge, type Registry } from 'prom-client';
import { countDeadLetters } from './dead-letters.js';
import type { Queryable } from './db.js';

export function registerDeadLetterMetrics(registry: Registry, db: Queryable): void {
  new Gauge({
    name: 'connector_service_dead_letters',
    help: 'Dead letters waiting for an operator, whole cluster (INTERFACE §9.1)',
    registers: [registry],
    async collect() {
      this.set(await countDeadLetters(db));
    },
  });
}
