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
import { isConnectorId, listConnectors } from '../../connectors/catalog.js';
import { BadRequest, ErrorCodes, NotConfigured, NotFound } from '../../errors.js';
import type { EdgeContext } from '../context.js';

export const connectorRoutes: FastifyPluginAsync<EdgeContext> = async (app, ctx) => {
  app.get('/connectors', async () => ({ connectors: listConnectors(ctx.config) }));

  app.post<{ Params: { connectorId: string } }>('/connectors/:connectorId/oauth/start', async (req) => {
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
  });
};
