/**
 * Dead letters (INTERFACE §9.3): the tenant's list and replay routes, a replay putting the
 * event back on the durable ingest path (replay-dead-letters.ts).
 */
import { deadLetterRoutes } from '../edge/routes/dead-letters.js';
import type { ServiceModuleFactory } from './module.js';
import { replayDeadLetters } from './replay-dead-letters.js';

export const deadLettersModule: ServiceModuleFactory = (deps) => ({
  id: 'dead-letters',
  actors: [],
  // INTERFACE §9.3: a request waits at most 2 s for Postgres (the request pool), then 503.
  routes: deadLetterRoutes((sel) => replayDeadLetters({ db: deps.requestPool, ...deps.ingest }, sel)),
});
