/**
 * The OpenAPI conformance table (openapi-conformance.test.ts), the part the platforms and
 * installers reach: OAuth start and callback, the code host's admin install, GitHub's
 * webhooks and Slack's events, each call with the status (and §2 code) it must answer and
 * whether the document accepts it.
 */
import { examplePayload, forInstallation } from './github-harness.js';
import {
  adminInstall,
  bearer,
  githubDelivery,
  oauthCallbackFor,
  slackDelivery,
  slackMessage,
  type Row,
} from './openapi-calls.js';

export const PLATFORM_ROWS: Row[] = [
  {
    name: 'OAuth start of the code host',
    call: (x) => ({
      path: '/api/v1/connectors/codehost/oauth/start',
      headers: bearer(x.a),
      body: { redirect_uri: 'https://app.example.org/cb' },
    }),
    status: 400,
    code: 'custom_install_path',
  },
  {
    name: 'OAuth start of an unknown connector',
    call: (x) => ({
      path: '/api/v1/connectors/gitlab/oauth/start',
      headers: bearer(x.a),
      body: { redirect_uri: 'https://app.example.org/cb' },
    }),
    status: 404,
    valid: false,
    code: 'not_found',
  },
  {
    name: 'chat OAuth start',
    call: (x) => ({
      path: '/api/v1/connectors/chatapp/oauth/start',
      headers: bearer(x.a),
      body: { redirect_uri: 'https://app.example.org/cb' },
    }),
    status: 200,
  },
  {
    name: 'chat OAuth start to a non-http redirect',
    call: (x) => ({
      path: '/api/v1/connectors/chatapp/oauth/start',
      headers: bearer(x.a),
      body: { redirect_uri: 'ftp://app.example.org/cb' },
    }),
    status: 400,
    valid: false,
    code: 'bad_request',
  },
  {
    name: 'chat OAuth start without a redirect',
    call: (x) => ({ path: '/api/v1/connectors/chatapp/oauth/start', headers: bearer(x.a), body: {} }),
    status: 400,
    valid: false,
    code: 'bad_request',
  },
  {
    name: 'OAuth callback with a forged state',
    call: () => ({ path: '/api/v1/connectors/oauth/callback?code=abc&state=forged' }),
    status: 400,
    code: 'invalid_state',
  },
  {
    name: 'OAuth callback after the installer declined',
    call: (x) => oauthCallbackFor(x, x.a, x.team, { deny: true }),
    status: 400,
    code: 'access_denied',
  },
  {
    name: 'OAuth callback for a workspace another tenant holds',
    call: (x) => oauthCallbackFor(x, x.b, x.team),
    status: 409,
    code: 'workspace_already_installed',
  },

  // the code host
  {
    name: 'admin install without the admin token',
    call: (x) => adminInstall(x, x.b, x.installation, { 'x-service-admin-token': '' }),
    status: 401,
    valid: false,
    code: 'unauthorized',
  },
  {
    name: 'admin install with a wrong admin token',
    call: (x) => adminInstall(x, x.b, x.installation, { 'x-service-admin-token': 'wrong' }),
    status: 401,
    code: 'unauthorized',
  },
  {
    name: 'admin install, again for the same tenant',
    call: (x) => adminInstall(x, x.a, x.installation),
    status: 409,
    code: 'already_installed',
  },
  {
    name: 'admin install of an installation the App cannot reach',
    call: (x) => adminInstall(x, x.b, 1),
    status: 400,
    code: 'installation_not_accessible',
  },
  {
    name: 'admin install with a bad body',
    call: (x) => adminInstall(x, x.b, x.installation, {}, { account_type: 'Team' }),
    status: 400,
    valid: false,
    code: 'bad_request',
  },
  { name: 'a GitHub ping', call: (x) => githubDelivery(x, 'ping', { zen: 'Keep it logically awesome.' }), status: 200 },
  {
    name: 'a GitHub event for the installation',
    call: (x) => githubDelivery(x, 'issues', forInstallation(examplePayload('issues', 'opened'), x.installation)),
    status: 202,
  },
  {
    name: 'a GitHub delivery with a wrong signature',
    call: (x) => githubDelivery(x, 'ping', { zen: 'x' }, 'sha256=00'),
    status: 401,
    code: 'unauthorized',
  },
  {
    name: 'a GitHub delivery without its event header',
    call: (x) => githubDelivery(x, null, { zen: 'x' }),
    status: 400,
    valid: false,
    code: 'bad_request',
  },
  {
    name: "Slack's URL verification",
    call: (x) => slackDelivery(x, { type: 'url_verification', token: 't', challenge: 'c-123' }),
    status: 200,
  },
  {
    name: 'a Slack message event',
    call: (x) => slackDelivery(x, slackMessage(x)),
    status: 200,
  },
  {
    name: 'a Slack event with a forged signature',
    call: (x) => slackDelivery(x, slackMessage(x), 'forged'),
    status: 401,
    code: 'unauthorized',
  },
  {
    name: 'a Slack event without its signature headers',
    call: (x) => slackDelivery(x, slackMessage(x), 'missing'),
    status: 401,
    valid: false,
    code: 'unauthorized',
  },
];
