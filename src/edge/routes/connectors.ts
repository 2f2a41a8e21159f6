/** `GET /api/v1/connectors` (spec §4, INTERFACE §3). */
import type { FastifyPluginAsync } from 'fastify';
import { listConnectors } from '../../connectors/catalog.js';
import type { EdgeContext } from '../app.js';

export const connectorRoutes: FastifyPluginAsync<EdgeContext> = async (app, ctx) => {
  app.get('/connectors', async () => ({ connectors: listConnectors(ctx.config) }));
};
