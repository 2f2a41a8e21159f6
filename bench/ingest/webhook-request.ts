/**
 * One signed GitHub App webhook delivery, as GitHub sends it (INTERFACE §3): an
 * `issues.opened` payload, `X-Hub-Signature-256: sha256=<hex hmac_sha256(secret, raw body)>`,
 * `X-GitHub-Event`, and a fresh `X-GitHub-Delivery` (the event id). `issues` events have
 * no upstream side effects (no PR summary, no indexer call), so the bench measures ingest
 * alone. `issue.updated_at` carries the send time, which the service stores as the event's
 * `occurred_at`: `received_at - occurred_at` is then the event-to-committed latency.
 */
import { createHmac, randomUUID } from 'node:crypto';

export interface SignedDelivery {
  body: string;
  headers: Record<string, string>;
}

/**
 * Each installation is its own organisation with its own repository, and senders vary:
 * like production traffic spread over tenants, not every event touching the same graph
 * nodes (the projection upserts the repository and user nodes of each event).
 */
function repositoryOf(installationId: number) {
  const org = `bench-org-${installationId}`;
  return {
    id: 700_000_000 + (installationId % 100_000),
    node_id: `R_kgDOBench${installationId}`,
    name: 'service',
    full_name: `${org}/service`,
    private: true,
    owner: { login: org, id: 800_000_000 + (installationId % 100_000), type: 'Organization' },
    html_url: `https://github.com/${org}/service`,
    default_branch: 'main',
  };
}

const SENDERS = 64;
function senderOf(n: number) {
  const k = n % SENDERS;
  return { login: `octo-bench-${k}`, id: 810_000_000 + k, node_id: `U_kgDOBench${k}`, type: 'User' };
}

export function signedDelivery(opts: {
  secret: string;
  installationId: number;
  n: number;
  deliveryPrefix: string;
}): SignedDelivery {
  const sentAt = new Date().toISOString();
  const number = opts.n + 1;
  const repo = repositoryOf(opts.installationId);
  const sender = senderOf(opts.n);
  const payload = {
    action: 'opened',
    issue: {
      id: 900_000_000 + number,
      node_id: `I_kwDOBench${number}`,
      number,
      title: `Bench issue ${number}`,
      body: 'Opened by bench/ingest to measure the webhook ingest path.',
      user: sender,
      labels: [],
      state: 'open',
      locked: false,
      comments: 0,
      created_at: sentAt,
      updated_at: sentAt,
      html_url: `${repo.html_url}/issues/${number}`,
      author_association: 'MEMBER',
    },
    repository: repo,
    organization: { login: repo.owner.login, id: repo.owner.id },
    sender,
    installation: { id: opts.installationId, node_id: `MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9u${opts.installationId}` },
  };
  const body = JSON.stringify(payload);
  const signature = createHmac('sha256', opts.secret).update(body).digest('hex');
  return {
    body,
    headers: {
      'content-type': 'application/json',
      'user-agent': 'GitHub-Hookshot/bench',
      'x-github-event': 'issues',
      'x-github-delivery': `${opts.deliveryPrefix}${randomUUID()}`,
      'x-github-hook-installation-target-type': 'integration',
      'x-hub-signature-256': `sha256=${signature}`,
    },
  };
}
