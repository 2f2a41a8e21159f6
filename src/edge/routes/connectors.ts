/**
 * `GET /api/v1/connectors` (spec §4, INTERFACE §3) and the framework's generic
 * `POST /api/v1/connectors/{connector_id}/oauth/start`.
 *
 * A connector that runs OAuth mounts its own static start route (chatapp:
 * `OAUTH_START_PATH`), which find-my-way prefers over this parametric one; what reaches
 * here is a connector with a custom install path (spec §4: refused, naming the right
 * endpoint), a known connector whose own route is not mounted on this edge, or an unknown id.
 */
import type { FastifyPluginAsync } from 'fastify';
import { z } from 'zod';
import { isConnectorId, listConnectors } from '../../connectors/catalog.js';
import { BadRequest, ErrorCodes, NotConfigured, NotFound } from '../../errors.js';
import type { EdgeContext } from '../context.js';
import { Connector } from '../schemas.js';

const tags = ['connectors'];
const LIST_SCHEMA = {
  summary: 'The connectors of this build and whether settings enable them',
  tags,
  response: { 200: z.object({ connectors: z.array(Connector) }) },
};
const START_SCHEMA = {
  summary: 'Start an OAuth install (connectors without their own start route answer here)',
  description: 'codehost answers 400 `custom_install_path` naming its admin install route; unknown ids 404.',
  tags,
  params: z.object({ connectorId: z.string() }),
  response: { 200: z.object({ authorize_url: z.string(), state: z.string(), expires_at: z.string() }) },
};

export const connectorRoutes: FastifyPluginAsync<EdgeContext> = async (app, ctx) => {
  app.get('/connectors', { schema: LIST_SCHEMA }, async () => ({ connectors: listConnectors(ctx.config) }));

  app.post<{ Params: { connectorId: string } }>(
    '/connectors/:connectorId/oauth/start',
    { schema: START_SCHEMA },
    async (req) => {
      const { connectorId } = req.params;
      if (!isConnectorId(connectorId)) throw new NotFound('connector not found');
      const manifest = listConnectors(ctx.config).find((c) => c.connector_id === connectorId)!;
      if (manifest.install_path !== undefined) {
        // spec §4: "The framework refuses /oauth/start for a connector that declares a custom install path".
        throw new BadRequest(`${connectorId} does not install through OAuth; use POST ${manifest.install_path}`, {
          code: ErrorCodes.customInstallPath,
          details: { install_path: manifest.install_path },
        });
      }
      throw new NotConfigured(`the ${connectorId} OAuth start route is not mounted on this edge`);
    },
  );
};
