/**
 * The chat install routes (INTERFACE §3): `POST /api/v1/connectors/chatapp/oauth/start`
 * (Bearer key) and `GET /api/v1/connectors/oauth/callback` (no Bearer: the installer's
 * browser reaches it, and the single-use state authenticates it). A browser (`Accept:
 * text/html`) gets a page or a 303 to the state's `success_url` / `failure_url` (§10.7,
 * install-page.ts); every other caller gets §3's JSON, unchanged.
 */
import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { EdgeContext } from '../../context.js';
import { operation } from '../../operation.js';
import { validInput } from '../../params.js';
import { OAuthStartAnswer, OAuthStartBody } from '../../schemas.js';
import {
  consumeCallbackState,
  finishAuthorization,
  startAuthorization,
  type InstallDeps,
} from '../../../connectors/chatapp/oauth-install.js';
import type { OAuthState } from '../../../store/chat-oauth-states.js';
import { reportError } from '../../error-map.js';
import { redirectBrowser, sendFailedPage, sendInstalledPage, wantsHtml, withQueryParam } from './install-page.js';

const OAUTH_START_PATH = '/api/v1/connectors/chatapp/oauth/start';
const OAUTH_CALLBACK_PATH = '/api/v1/connectors/oauth/callback';

// Slack adds nothing else, but browsers and proxies may; unknown parameters are ignored.
const CallbackQuery = z.object({
  code: z.string().max(1_000).optional().describe("Slack's authorization code"),
  state: z.string().max(1_000).optional().describe('The state `oauth/start` answered'),
  error: z.string().max(1_000).optional().describe("Slack's refusal, e.g. `access_denied`"),
});

const tag = 'chatapp';
const START = operation({
  operationId: 'startChatappOAuth',
  tag,
  summary: 'Start a Slack OAuth install: answers the authorize URL and its single-use state',
  auth: 'bearer',
  scope: 'installs:write',
  body: OAuthStartBody,
  responses: { 200: { description: 'The authorize URL to send the installer to', schema: OAuthStartAnswer } },
  errors: [],
});
const CALLBACK = operation({
  operationId: 'finishChatappOAuth',
  tag,
  summary: "Slack's OAuth redirect (no Bearer: the state authenticates it); creates the install",
  description:
    'Exchanges the code with `oauth.v2.access` (same `redirect_uri`). A missing, forged, expired or reused ' +
    "state is 400 `invalid_state`; a refusal on Slack's consent page 400 `access_denied`; a workspace " +
    'another install holds 409 `workspace_already_installed`; a refused exchange 502. A browser (`Accept: ' +
    'text/html`) gets a small HTML page instead, or a 303 to the `success_url` / `failure_url` given to ' +
    '`oauth/start` with `install_id` or `error` added to its query (§10.7).',
  auth: 'public',
  querystring: CallbackQuery,
  responses: {
    200: {
      description: 'The workspace is installed',
      schema: z.object({
        install_id: z.uuid(),
        connector_id: z.literal('chatapp'),
        status: z.literal('active'),
        team_id: z.string(),
        team_name: z.string().nullable(),
      }),
    },
  },
  errors: [
    'invalid_state',
    'access_denied',
    'bad_request',
    'workspace_already_installed',
    'upstream_error',
    'unavailable',
  ],
});

export function chatOAuthRoutes(deps: InstallDeps): FastifyPluginAsync<EdgeContext> {
  return async (plugin) => {
    const app = plugin.withTypeProvider<ZodTypeProvider>();
    // A tenant route (the Bearer key authenticates it: tenant-guard.ts).
    app.post(OAUTH_START_PATH, { schema: START, attachValidation: true, config: { tenant: true } }, async (req) => {
      const body = validInput<z.output<typeof OAuthStartBody>>(req, 'body');
      return startAuthorization(deps, req.tenantId, body.redirect_uri, {
        successUrl: body.success_url ?? null,
        failureUrl: body.failure_url ?? null,
      });
    });

    app.get(OAUTH_CALLBACK_PATH, { schema: CALLBACK, attachValidation: true }, async (req, reply) => {
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
