/**
 * The chat install routes (INTERFACE §3): `POST /api/v1/connectors/chatapp/oauth/start`
 * (Bearer key) and `GET /api/v1/connectors/oauth/callback` (no Bearer: the installer's
 * browser reaches it, and the single-use state authenticates it).
 */
import type { FastifyPluginAsync } from 'fastify';
import { z } from 'zod';
import type { EdgeContext } from '../../context.js';
import { parseOrBadRequest } from '../../params.js';
import {
  finishAuthorization,
  startAuthorization,
  type InstallDeps,
} from '../../../connectors/chatapp/oauth-install.js';

export const OAUTH_START_PATH = '/api/v1/connectors/chatapp/oauth/start';
export const OAUTH_CALLBACK_PATH = '/api/v1/connectors/oauth/callback';

const StartBody = z
  .object({
    redirect_uri: z
      .string()
      .max(2_000)
      .pipe(z.url({ protocol: /^https?$/, message: 'must be an absolute http(s) URL' })),
  })
  .strict();

// Slack adds nothing else, but browsers and proxies may; unknown parameters are ignored.
const CallbackQuery = z.object({
  code: z.string().max(1_000).optional(),
  state: z.string().max(1_000).optional(),
  error: z.string().max(1_000).optional(),
});

export function chatOAuthRoutes(deps: InstallDeps): FastifyPluginAsync<EdgeContext> {
  return async (app, ctx) => {
    await app.register(async (authed) => {
      authed.addHook('onRequest', async (req) => {
        await ctx.authenticate(req);
      });
      authed.post(OAUTH_START_PATH, async (req) => {
        const body = parseOrBadRequest(StartBody, req.body, 'body');
        return startAuthorization(deps, req.tenantId, body.redirect_uri);
      });
    });

    app.get(OAUTH_CALLBACK_PATH, async (req) => {
      const q = parseOrBadRequest(CallbackQuery, req.query, 'query');
      return finishAuthorization(deps, q);
    });
  };
}
