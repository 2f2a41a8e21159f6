/**
 * What the stall tests (faults-postgres, faults-postgres-writes, faults-nats-stall) share: a
 * TCP proxy in front of one service, a code-host install with a PR node to act on, and a
 * route's answer timed from the moment it was asked.
 */
import { expect } from 'vitest';
import { examplePayload, forInstallation, type CodehostHarness } from './github-harness.js';
import { startTcpProxy, type TcpProxy } from './tcp-proxy.js';
import { until } from './until.js';

/** A proxy in front of the service at `url`, and the same URL pointed through it. */
export async function proxied(url: string, defaultPort: number): Promise<{ proxy: TcpProxy; url: string }> {
  const target = new URL(url);
  const proxy = await startTcpProxy(target.hostname, Number(target.port || defaultPort));
  const via = new URL(target);
  via.hostname = '127.0.0.1';
  via.port = String(proxy.port);
  return { proxy, url: via.toString() };
}

/** A tenant, its install of App installation `P`, and the node of one opened PR delivered to it. */
export async function installWithPr(
  h: CodehostHarness,
  tenantName: string,
  P: number,
): Promise<{ t: Awaited<ReturnType<CodehostHarness['tenant']>>; installId: string; prId: string }> {
  const t = await h.tenant(tenantName);
  const installId = await h.install(t, P);
  const delivered = await h.deliver('pull_request', forInstallation(examplePayload('pull_request', 'opened'), P));
  if (delivered.status !== 202) throw new Error(`the PR delivery answered ${delivered.status}`);
  const prId = await until('the PR node', async () => {
    const res = await h.api('/api/v1/graph/nodes?kind=codehost.pull_request', t);
    return ((await res.json()) as { nodes: Array<{ id: string; install_id: string }> }).nodes.find(
      (n) => n.install_id === installId,
    )?.id;
  });
  return { t, installId, prId };
}

/** A route's status, §2 error code and time to answer; no answer at all (a reset) is status 0. */
export async function timed(what: Promise<Response>): Promise<{ status: number; code: string | null; ms: number }> {
  const started = performance.now();
  const res = await what.catch(() => null);
  if (res === null) return { status: 0, code: null, ms: performance.now() - started };
  const body = (await res.json().catch(() => null)) as { error?: { code?: string } } | null;
  return { status: res.status, code: body?.error?.code ?? null, ms: performance.now() - started };
}

type Timed = Awaited<ReturnType<typeof timed>>;

/** Each of `calls` once, one after another, before a fault: none may answer 5xx. */
export async function warmed(calls: Record<string, () => Promise<Response>>, when: string): Promise<void> {
  for (const [name, call] of Object.entries(calls)) {
    const r = await timed(call());
    expect(r.status, `${name} ${when}: ${r.code}`).toBeLessThan(500);
  }
}

/**
 * Every one of `calls` at once while a fault holds (`begin` before, `end` after, also on a
 * throw), each timed; the answers printed as the test's figures under `label`.
 */
export async function answersDuring<N extends string>(
  label: string,
  calls: Record<N, () => Promise<Response>>,
  fault: { begin(): void; end(): void },
): Promise<Record<N, Timed>> {
  const names = Object.keys(calls) as N[];
  fault.begin();
  let results: Timed[];
  try {
    results = await Promise.all(names.map((n) => timed(calls[n]())));
  } finally {
    fault.end();
  }
  const answers = Object.fromEntries(names.map((n, i) => [n, results[i]!])) as Record<N, Timed>;
  console.log(
    `figures: ${label}: ${names.map((n) => `${n} ${answers[n].status} in ${answers[n].ms.toFixed(0)} ms`).join(', ')}`,
  );
  return answers;
}
