/**
 * What the code-host integration tests share: a fake GitHub, a real node configured for
 * the code-host connector against it, signed webhook deliveries built from GitHub's real
 * recorded payloads (@octokit/webhooks-examples), and small polling helpers.
 */
import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import type { WebhookDefinition } from '@octokit/webhooks-examples';
import { createUser } from '../../src/store/users.js';
import type { LogCapture } from './log-capture.js';
import { startTestNode, type TestNode } from './node.js';
import { FakeGitHub, generateAppKeyPair } from 'connector-service/testing';

const definitions = createRequire(import.meta.url)('@octokit/webhooks-examples') as WebhookDefinition[];

/** A deep copy of a real recorded payload: the `index`-th example of `event` with `action`. */
export function examplePayload(event: string, action?: string, index = 0): Record<string, unknown> {
  const def = definitions.find((d) => d.name === event);
  const matches = (def?.examples ?? []).filter(
    (e) => action === undefined || (e as { action?: string }).action === action,
  );
  const found = matches[index];
  if (!found) throw new Error(`no example ${event}.${action ?? ''}[${index}] in @octokit/webhooks-examples`);
  return structuredClone(found) as unknown as Record<string, unknown>;
}

/** Every recorded payload, with its event's name (deep copies). */
export function recordedExamples(): Array<{ name: string; example: Record<string, unknown> }> {
  return definitions.flatMap((d) =>
    d.examples.map((e) => ({ name: d.name, example: structuredClone(e) as unknown as Record<string, unknown> })),
  );
}

/** The example, delivered for installation `id` (App webhooks always carry it). */
export function forInstallation(payload: Record<string, unknown>, id: number): Record<string, unknown> {
  return { ...payload, installation: { id, node_id: `MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9u${id}` } };
}

export function sign(secret: string, body: string | Buffer): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

export interface CodehostHarness {
  gh: FakeGitHub;
  node: TestNode;
  appId: number;
  secret: string;
  adminToken: string;
  /** A tenant with a user profile, and its auth header. */
  tenant(
    name?: string,
  ): Promise<{ tenant_id: string; api_key: string; auth: { authorization: string }; user_id: string }>;
  /** The admin install call (INTERFACE §3) with valid factors unless overridden. */
  adminInstall(
    t: { auth: { authorization: string }; user_id: string },
    installationId: number,
    headers?: Record<string, string>,
    body?: Record<string, unknown>,
  ): Promise<Response>;
  /** Installs and returns the install id (fails the test otherwise). */
  install(t: { auth: { authorization: string }; user_id: string }, installationId: number): Promise<string>;
  /** A signed delivery to the webhook route. */
  deliver(
    event: string,
    payload: unknown,
    opts?: { delivery?: string; signature?: string | null; raw?: string },
  ): Promise<Response>;
  api(
    path: string,
    t: { auth: { authorization: string } },
    init?: { method?: string; body?: unknown },
  ): Promise<Response>;
  eventIds(t: { auth: { authorization: string } }, installId: string): Promise<string[]>;
  stop(): Promise<void>;
}

/** A node's code-host settings against a fake GitHub, the admin install route on. */
export function codehostEnv(o: {
  appId: number;
  privateKeyPem: string;
  secret: string;
  apiUrl: string;
  adminToken: string;
}): Record<string, string> {
  return {
    CODEHOST_CONNECTOR_ENABLED: 'true',
    CODEHOST_APP_ID: String(o.appId),
    CODEHOST_APP_PRIVATE_KEY_PEM: o.privateKeyPem,
    CODEHOST_WEBHOOK_SECRET: o.secret,
    CODEHOST_API_URL: o.apiUrl,
    SERVICE_INDEXER_DAEMON_URL_TEMPLATE: 'http://127.0.0.1:1/{install}/{repo}',
    SERVICE_ADMIN_ENDPOINTS: '1',
    SERVICE_ADMIN_API_TOKEN: o.adminToken,
  };
}

/** `logs`: keep the node's log lines in memory (test/support/node.ts). */
export async function startCodehostHarness(
  env: Record<string, string> = {},
  opts: { logs?: LogCapture } = {},
): Promise<CodehostHarness> {
  const keys = generateAppKeyPair();
  const appId = 100_000 + Math.floor(Math.random() * 800_000);
  const gh = await FakeGitHub.start(appId, keys.publicKeyPem);
  const secret = `whsec-${randomBytes(12).toString('hex')}`;
  const adminToken = `admin-${randomBytes(16).toString('hex')}`;
  const node = await startTestNode(
    { ...codehostEnv({ appId, privateKeyPem: keys.privateKeyPem, secret, apiUrl: gh.url, adminToken }), ...env },
    undefined,
    opts,
  );
  const api = (path: string, t: { auth: { authorization: string } }, init: { method?: string; body?: unknown } = {}) =>
    fetch(`${node.url}${path}`, {
      method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
      headers: { ...t.auth, ...(init.body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
    });
  const h: CodehostHarness = {
    gh,
    node,
    appId,
    secret,
    adminToken,
    async tenant(name = 'acme') {
      const t = await node.tenant(name);
      const { user_id } = await createUser(node.pool, t.tenant_id, `${randomBytes(4).toString('hex')}@acme.test`);
      return { ...t, user_id };
    },
    adminInstall(t, installationId, headers = {}, body = {}) {
      return fetch(`${node.url}/api/v1/connectors/codehost/admin/install`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-service-admin-token': adminToken, ...t.auth, ...headers },
        body: JSON.stringify({
          user_id: t.user_id,
          github_installation_id: installationId,
          account_type: 'Organization',
          account_login: `org-${installationId}`,
          repository_selection: 'all',
          ...body,
        }),
      });
    },
    async install(t, installationId) {
      if (!gh.installations.has(installationId)) gh.addInstallation(installationId);
      const res = await h.adminInstall(t, installationId);
      const json = (await res.json()) as { install_id?: string };
      if (res.status !== 201 || !json.install_id)
        throw new Error(`admin install answered ${res.status}: ${JSON.stringify(json)}`);
      return json.install_id;
    },
    deliver(event, payload, opts = {}) {
      const raw = opts.raw ?? JSON.stringify(payload);
      const headers: Record<string, string> = {
        'content-type': 'application/json',
        'x-github-event': event,
        'x-github-delivery': opts.delivery ?? randomUUID(),
        'user-agent': 'GitHub-Hookshot/044aadd',
      };
      const signature = opts.signature === undefined ? sign(secret, raw) : opts.signature;
      if (signature !== null) headers['x-hub-signature-256'] = signature;
      return fetch(`${node.url}/api/v1/connectors/codehost/webhooks`, { method: 'POST', headers, body: raw });
    },
    api,
    async eventIds(t, installId) {
      const res = await api(`/api/v1/connectors/installs/${installId}/events?limit=500`, t);
      const json = (await res.json()) as { events: Array<{ id: string }> };
      return json.events.map((e) => e.id);
    },
    async stop() {
      await node.stop();
      await gh.close();
    },
  };
  return h;
}
