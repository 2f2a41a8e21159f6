/**
 * The tenant's data routes (INTERFACE §10.5) that run on the service's own login: erasing a
 * platform user (src/edge/routes/erase.ts). Tenant routes all the same: `config.tenant`
 * authenticates them with the caller's key.
 */
import { eraseRoutes } from '../edge/routes/erase.js';
import type { ServiceModuleFactory } from './module.js';

export const dataModule: ServiceModuleFactory = () => ({
  id: 'data',
  actors: [],
  routes: eraseRoutes,
});
