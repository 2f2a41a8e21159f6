/**
 * Signed GitHub webhook deliveries, as GitHub sends them: `X-Hub-Signature-256` over the
 * raw body with the App's webhook secret, `X-GitHub-Event`, `X-GitHub-Delivery`. Use them
 * to drive the service's webhook route (or your own receiver) from a test.
 */
import { createHmac, randomUUID } from 'node:crypto';

export interface GithubDelivery {
  /** `X-GitHub-Event`, e.g. `pull_request`. */
  event: string;
  payload: unknown;
  /** The App's webhook secret (`CODEHOST_WEBHOOK_SECRET`). */
  secret: string;
  /** `X-GitHub-Delivery`; a fresh UUID when absent. A redelivery repeats the first one's. */
  delivery?: string;
}

/** `sha256=<hex hmac_sha256(secret, rawBody)>` */
export function githubSignature(secret: string, rawBody: string | Buffer): string {
  return `sha256=${createHmac('sha256', secret).update(rawBody).digest('hex')}`;
}

/** The raw body and headers of one delivery. */
export function signedGithubDelivery(d: GithubDelivery): { body: string; headers: Record<string, string> } {
  const body = JSON.stringify(d.payload);
  return {
    body,
    headers: {
      'content-type': 'application/json',
      'x-github-event': d.event,
      'x-github-delivery': d.delivery ?? randomUUID(),
      'x-hub-signature-256': githubSignature(d.secret, body),
      'user-agent': 'GitHub-Hookshot/connector-service-testing',
    },
  };
}

/** POSTs one signed delivery to `url` (e.g. `<service>/api/v1/connectors/codehost/webhooks`). */
export function sendGithubWebhook(url: string, d: GithubDelivery): Promise<Response> {
  const { body, headers } = signedGithubDelivery(d);
  return fetch(url, { method: 'POST', headers, body, signal: AbortSignal.timeout(30_000) });
}
