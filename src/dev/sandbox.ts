/**
 * `connectors dev --sandbox` (INTERFACE §9.1): the service's own Slack, GitHub and indexer
 * fakes (`connector-service/testing`) on loopback ports, seeded with a workspace and an App
 * installation that have history (channels, a thread, reactions; repositories with pull
 * requests), the settings that point the service at them, and one install of each
 * connector for the demo tenant, made through the public API as a user would.
 */
import { randomBytes } from 'node:crypto';
import { FakeGitHub } from '../testing/github.js';
import { generateAppKeyPair } from '../testing/github-jwt.js';
import { seedRepos } from '../testing/github-pulls.js';
import { FakeIndexerDaemon } from '../testing/indexer-daemon.js';
import { FakeSlack } from '../testing/slack-fake.js';
import { nextTs, type FakeMessage } from '../testing/slack-model.js';

const SANDBOX_TEAM = 'T0SANDBOX';
export const SANDBOX_INSTALLATION = 4242;
const SANDBOX_ORG = 'sandbox-org';
const APP_ID = 424_242;
const USERS = ['U0ALICE', 'U0BOB', 'U0CAROL'];

interface SandboxInstalls {
  chatapp_install_id: string;
  codehost_install_id: string;
}

export interface Sandbox {
  /** Settings that point the service at the fakes. */
  env: Record<string, string>;
  /** Installs both connectors for the tenant through the HTTP API of the node at `url`. */
  install(url: string, apiKey: string, userId: string): Promise<SandboxInstalls>;
  stop(): Promise<void>;
}

export async function startSandbox(): Promise<Sandbox> {
  const slack = await new FakeSlack().start();
  const keys = generateAppKeyPair();
  const gh = await FakeGitHub.start(APP_ID, keys.publicKeyPem);
  const daemon = await FakeIndexerDaemon.start();
  seedSlack(slack);
  gh.addInstallation(SANDBOX_INSTALLATION, SANDBOX_ORG);
  seedRepos(gh.pulls, SANDBOX_INSTALLATION, SANDBOX_ORG, [4, 2]);
  const adminToken = randomBytes(24).toString('base64url');
  const env = {
    CHATAPP_CLIENT_ID: slack.clientId,
    CHATAPP_CLIENT_SECRET: slack.clientSecret,
    CHATAPP_SIGNING_SECRET: slack.signingSecret,
    CHATAPP_API_URL: slack.apiUrl,
    CHATAPP_AUTHORIZE_URL: slack.authorizeUrl,
    // Tier 3 pacing: the seeded history is in within seconds, not one page per minute.
    CHATAPP_APP_TIER: 'marketplace',
    CODEHOST_CONNECTOR_ENABLED: 'true',
    CODEHOST_APP_ID: String(APP_ID),
    CODEHOST_APP_PRIVATE_KEY_PEM: keys.privateKeyPem,
    CODEHOST_WEBHOOK_SECRET: randomBytes(16).toString('hex'),
    CODEHOST_API_URL: gh.url,
    SERVICE_INDEXER_DAEMON_URL_TEMPLATE: daemon.template,
    SERVICE_ADMIN_ENDPOINTS: '1',
    SERVICE_ADMIN_API_TOKEN: adminToken,
  };
  return {
    env,
    async install(url, apiKey, userId) {
      const auth = { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' };
      slack.setConsent(SANDBOX_TEAM);
      const start = await call(`${url}/api/v1/connectors/chatapp/oauth/start`, {
        method: 'POST',
        headers: auth,
        body: JSON.stringify({ redirect_uri: `${url}/api/v1/connectors/oauth/callback` }),
      });
      // The installer's browser: Slack's consent redirects to the callback with code and state.
      const consent = await fetch(start.authorize_url as string, { redirect: 'manual' });
      const callback = consent.headers.get('location');
      if (!callback) throw new Error(`sandbox: the fake Slack did not redirect (${consent.status})`);
      const chat = await call(callback, {});
      const code = await call(`${url}/api/v1/connectors/codehost/admin/install`, {
        method: 'POST',
        headers: { ...auth, 'x-service-admin-token': adminToken },
        body: JSON.stringify({
          user_id: userId,
          github_installation_id: SANDBOX_INSTALLATION,
          account_type: 'Organization',
          account_login: SANDBOX_ORG,
          repository_selection: 'all',
        }),
      });
      return { chatapp_install_id: chat.install_id as string, codehost_install_id: code.install_id as string };
    },
    async stop() {
      await Promise.allSettled([slack.close(), gh.close(), daemon.close()]);
    },
  };
}

async function call(url: string, init: RequestInit): Promise<Record<string, unknown>> {
  const res = await fetch(url, { ...init, signal: AbortSignal.timeout(30_000) });
  const body = (await res.json().catch(() => ({}))) as Record<string, unknown>;
  if (!res.ok)
    throw new Error(
      `sandbox: ${init.method ?? 'GET'} ${new URL(url).pathname} answered ${res.status}: ${JSON.stringify(body)}`,
    );
  return body;
}

/** A workspace with two channels of history: plain messages, a thread with replies, reactions. */
function seedSlack(slack: FakeSlack): void {
  slack.addTeam({ id: SANDBOX_TEAM, name: 'Sandbox' });
  const general = slack.addChannel(SANDBOX_TEAM, { id: 'C0GENERAL', name: 'general' });
  const random = slack.addChannel(SANDBOX_TEAM, { id: 'C0RANDOM', name: 'random' });
  const msg = (user: string, text: string, extra: Partial<FakeMessage> = {}): FakeMessage => ({
    ts: nextTs(),
    user,
    text,
    ...extra,
  });
  const parent = msg(USERS[0]!, 'Release 1.4 goes out today: anything blocking?');
  parent.replies = [
    msg(USERS[1]!, 'The migration is reviewed, good to go.', { thread_ts: parent.ts }),
    msg(USERS[2]!, 'Docs are updated too.', { thread_ts: parent.ts }),
  ];
  general.messages.push(
    msg(USERS[0]!, 'Welcome to the sandbox workspace!', { reactions: [{ name: 'wave', users: [USERS[1]!] }] }),
    parent,
    msg(USERS[1]!, 'Deploy finished, dashboards are green.', {
      reactions: [{ name: 'tada', users: [USERS[0]!, USERS[2]!] }],
    }),
  );
  random.messages.push(msg(USERS[2]!, 'Lunch at noon?'), msg(USERS[0]!, 'Sure, the usual place.'));
}
