/**
 * The chat install routes (INTERFACE §3): `POST /api/v1/connectors/chatapp/oauth/start`
 * (Bearer key) and `GET /api/v1/connectors/oauth/callback` (no Bearer: the installer's
 * browser reaches it, and the single-use state authenticates it). A browser (`Accept:
 * text/html`) gets a page or a 303 to the state's `success_url` / `failure_url` (§10.7,
 * install-page.ts); every other caller gets §3's JSON, unchanged.
 */
import type { FastifyPluginAsync } from 'fastify';
import { z } from 'zod';
import type { EdgeContext } from '../../context.js';
import { validInput } from '../../params.js';
import {
  consumeCallbackState,
  finishAuthorization,
  startAuthorization,
  type InstallDeps,
} from '../../../connectors/chatapp/oauth-install.js';
import type { OAuthState } from '../../../store/chat-oauth-states.js';
import { reportError } from '../../error-map.js';
import { redirectBrowser, sendFailedPage, sendInstalledPage, wantsHtml, withQueryParam } from './install-page.js';

export const OAUTH_START_PATH = '/api/v1/connectors/chatapp/oauth/start';
export const OAUTH_CALLBACK_PATH = '/api/v1/connectors/oauth/callback';

const HttpUrl = z
  .string()
  .max(2_000)
  .pipe(z.url({ protocol: /^https?$/, message: 'must be an absolute http(s) URL' }));

const StartBody = z
  .object({
    redirect_uri: HttpUrl,
    /** §10.7: where the installer's browser is sent after a successful install. */
    success_url: HttpUrl.optional(),
    /** §10.7: where the installer's browser is sent after a failed one. */
    failure_url: HttpUrl.optional(),
  })
  .strict();

// Slack adds nothing else, but browsers and proxies may; unknown parameters are ignored.
const CallbackQuery = z.object({
  code: z.string().max(1_000).optional(),
  state: z.string().max(1_000).optional(),
  error: z.string().max(1_000).optional(),
});

const tags = ['chatapp'];
const START_SCHEMA = {
  summary: 'Start a Slack OAuth install: answers the authorize URL and its single-use state',
  tags,
  body: StartBody,
  response: { 200: z.object({ authorize_url: z.string(), state: z.string(), expires_at: z.string() }) },
};
const CALLBACK_SCHEMA = {
  summary: "Slack's OAuth redirect (no Bearer: the state authenticates it); creates the install",
  tags,
  querystring: CallbackQuery,
  response: {
    200: z.object({
      install_id: z.string(),
      connector_id: z.literal('chatapp'),
      status: z.literal('active'),
      team_id: z.string(),
      team_name: z.string().nullable(),
    }),
  },
};

export function chatOAuthRoutes(deps: InstallDeps): FastifyPluginAsync<EdgeContext> {
  return async (app, ctx) => {
    await app.register(async (authed) => {
      authed.addHook('onRequest', async (req) => {
        await ctx.authenticate(req);
      });
      authed.post(OAUTH_START_PATH, { schema: START_SCHEMA, attachValidation: true }, async (req) => {
        const body = validInput<z.output<typeof StartBody>>(req, 'body');
        return startAuthorization(deps, req.tenantId, body.redirect_uri, {
          successUrl: body.success_url ?? null,
          failureUrl: body.failure_url ?? null,
        });
      });
    });

    app.get(OAUTH_CALLBACK_PATH, { schema: CALLBACK_SCHEMA, attachValidation: true }, async (req, reply) => {
      if (!wantsHtml(req)) {
        const q = validInput<z.output<typeof CallbackQuery>>(req, 'querystring');
        return finishAuthorization(deps, q, await consumeCallbackState(deps, q));
      }
      // §10.7: only a state that was really bound names where to go; without one, a page.
      let bound: OAuthState | null = null;
      try {
        const q = validInput<z.output<typeof CallbackQuery>>(req, 'querystring');
        bound = await consumeCallbackState(deps, q);
        const installed = await finishAuthorization(deps, q, bound);
        if (bound?.successUrl) {
          return redirectBrowser(reply, withQueryParam(bound.successUrl, 'install_id', installed.install_id));
        }
        return sendInstalledPage(reply, installed);
      } catch (thrown) {
        const err = reportError(reply, thrown, req.log);
        if (bound?.failureUrl) return redirectBrowser(reply, withQueryParam(bound.failureUrl, 'error', err.code));
        return sendFailedPage(reply, err);
      }
    });
  };
}
