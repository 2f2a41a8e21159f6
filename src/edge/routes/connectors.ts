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
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { listConnectors } from '../../connectors/catalog.js';
import { CONNECTOR_IDS, isConnectorId } from '../../store/installs.js';
import { BadRequest, ErrorCodes, NotConfigured, NotFound } from '../../errors.js';
import type { EdgeContext } from '../context.js';
import { documentationOnly } from '../doc-only-schema.js';
import { operation } from '../operation.js';
import { Connector, OAuthStartAnswer, OAuthStartBody } from '../schemas.js';

const tag = 'connectors';
const LIST = operation({
  operationId: 'listConnectors',
  tag,
  summary: 'The connectors of this build and whether settings enable them',
  auth: 'bearer',
  scope: 'any',
  responses: {
    200: { description: 'Every connector of this build', schema: z.object({ connectors: z.array(Connector) }) },
  },
  errors: [],
});
const START = operation({
  operationId: 'startOAuth',
  tag,
  summary: "Start a connector's OAuth install",
  description:
    '`chatapp` is answered by its own route, `POST /api/v1/connectors/chatapp/oauth/start` (same body and ' +
    'answer), or 501 `not_configured` where that connector is not enabled; `codehost` installs through its ' +
    'admin route and answers 400 `custom_install_path` with `error.install_path` naming it. Another id: 404.',
  auth: 'bearer',
  scope: 'installs:write',
  params: z.object({ connectorId: z.string().meta({ enum: [...CONNECTOR_IDS] }) }).strict(),
  // Answered before the body matters; the connector's own route validates it.
  body: documentationOnly(OAuthStartBody.describe("As the connector's own start route takes it")),
  responses: { 200: { description: 'The authorize URL to send the installer to', schema: OAuthStartAnswer } },
  errors: ['not_found', 'custom_install_path', 'not_configured'],
});

export const connectorRoutes: FastifyPluginAsync<EdgeContext> = async (plugin, ctx) => {
  const app = plugin.withTypeProvider<ZodTypeProvider>();
  app.get('/connectors', { schema: LIST }, async () => ({ connectors: listConnectors(ctx.config) }));

  app.post('/connectors/:connectorId/oauth/start', { schema: START }, async (req) => {
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
