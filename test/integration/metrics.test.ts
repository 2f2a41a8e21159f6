/**
 * The runtime's metrics on `/metrics` (README "Operating it") after real traffic on a real node:
 * owned shards, active actors, mailbox depth, consumer lag, ingest latencies (edge publish
 * to stream ack; stream to Postgres commit), redeliveries, dead letters, HTTP per route.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  examplePayload,
  forInstallation,
  startCodehostHarness,
  type CodehostHarness,
} from '../support/github-harness.js';
import { until } from '../support/until.js';

let h: CodehostHarness;
beforeAll(async () => {
  h = await startCodehostHarness();
});
afterAll(() => h?.stop());

/** Every sample of `name` as [labels text, value]; [] when the series is absent. */
async function samples(name: string): Promise<Array<[string, number]>> {
  const text = await (await fetch(`${h.node.url}/metrics`)).text();
  const out: Array<[string, number]> = [];
  for (const line of text.split('\n')) {
    // Label values may hold braces (GitHub route templates): the labels run to the last `}`.
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (m && m[1] === name) out.push([m[2] ?? '', Number(m[3])]);
  }
  return out;
}
const one = async (name: string, labels = ''): Promise<number> => {
  const found = (await samples(name)).find(([l]) => l.includes(labels));
  if (!found) throw new Error(`no sample of ${name}{${labels}} on /metrics`);
  return found[1];
};

describe('runtime metrics', () => {
  it('expose shards, actors, mailboxes, lag, ingest latencies, redeliveries, dead letters and HTTP routes', async () => {
    const installationId = 880_000 + Math.floor(Math.random() * 99_999);
    const t = await h.tenant('metrics');
    const installId = await h.install(t, installationId);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const delivery = randomUUID();
      ids.push(delivery);
      expect(
        (await h.deliver('issues', forInstallation(examplePayload('issues', 'opened'), installationId), { delivery }))
          .status,
      ).toBe(202);
    }
    await until('the five events stored', async () => {
      const res = await h.api(`/api/v1/connectors/installs/${installId}/events?kind=issues.opened`, t);
      const got = ((await res.json()) as { events: Array<{ id: string }> }).events.map((e) => e.id);
      return ids.every((id) => got.includes(id));
    });

    // The commit path's pressure gauges, back to 0 once nothing is left to commit.
    await until('the ingest path at rest', async () => {
      const gauges = [
        'connector_service_ingest_commit_running',
        'connector_service_ingest_commit_waiting',
        'connector_service_ingest_room_waiting',
      ];
      return (await Promise.all(gauges.map((g) => one(g)))).every((v) => v === 0);
    });
    expect(await one('connector_service_shards_owned')).toBe(h.node.config.shards);
    expect(await one('connector_service_actors_active', 'kind="install"')).toBeGreaterThanOrEqual(1);
    // Exposed, one series, a count; what it reads at this moment is not fixed (a walker may be mid-step).
    const depth = await samples('connector_service_actor_mailbox_depth');
    expect(depth).toHaveLength(1);
    expect(Number.isInteger(depth[0]![1])).toBe(true);
    // Consumer lag: one series per owned shard.
    expect((await samples('connector_service_ingest_consumer_pending')).length).toBe(h.node.config.shards);
    expect(await one('connector_service_ingest_publish_seconds_count', 'connector="codehost"')).toBeGreaterThanOrEqual(
      5,
    );
    // Labelled counters show a series once counted: no failure, no sample.
    expect((await samples('connector_service_ingest_publish_failures_total')).reduce((a, [, v]) => a + v, 0)).toBe(0);
    expect(await one('connector_service_ingest_event_to_commit_seconds_count')).toBeGreaterThanOrEqual(5);
    // Group commit: one transaction may hold several events, and the batch sizes add up to them all.
    expect(await one('connector_service_ingest_commit_seconds_count')).toBeGreaterThanOrEqual(1);
    expect(await one('connector_service_ingest_batch_events_count')).toBe(
      await one('connector_service_ingest_commit_seconds_count'),
    );
    expect(await one('connector_service_ingest_batch_events_sum')).toBeGreaterThanOrEqual(5);
    // Each transaction holds at least one install's batch, never more installs than events.
    const transactions = await one('connector_service_ingest_batch_installs_count');
    expect(transactions).toBe(await one('connector_service_ingest_commit_seconds_count'));
    expect(await one('connector_service_ingest_batch_installs_sum')).toBeGreaterThanOrEqual(transactions);
    expect(await one('connector_service_ingest_batch_installs_sum')).toBeLessThanOrEqual(
      await one('connector_service_ingest_batch_events_sum'),
    );
    expect(await one('connector_service_ingest_delivered_total')).toBeGreaterThanOrEqual(5);
    // Exposed before anything was redelivered (a busy machine may have redelivered some by now).
    expect(await samples('connector_service_ingest_redeliveries_total')).toHaveLength(1);
    expect(await one('connector_service_ingest_dead_letters_total')).toBe(0);
    expect(
      await one('connector_service_http_requests_total', 'route="/api/v1/connectors/codehost/webhooks"'),
    ).toBeGreaterThanOrEqual(5);
    expect(
      await one(
        'connector_service_http_request_duration_seconds_count',
        'route="/api/v1/connectors/codehost/webhooks"',
      ),
    ).toBeGreaterThanOrEqual(5);
  });

  it('expose the work: upstream calls by method and outcome with latency, emits by kind and outcome, backfills, build info', async () => {
    const installationId = 870_000 + Math.floor(Math.random() * 9_999);
    const t = await h.tenant('work');
    const installId = await h.install(t, installationId);
    const emit = (labels: string[]) =>
      h.api(`/api/v1/connectors/installs/${installId}/emit`, t, {
        body: { kind: 'codehost.label', body: { repo_full_name: 'octo/metrics', issue_number: 7, labels } },
      });
    expect((await emit(['one'])).status).toBe(200);
    h.gh.fail({ method: 'POST', path: /\/repos\/octo\/metrics\/issues\/7\/labels/, status: 500, times: 1 });
    expect((await emit(['two'])).status).toBe(502);

    expect(await one('connector_service_emits_total', 'kind="codehost.label",outcome="ok"')).toBeGreaterThanOrEqual(1);
    expect(
      await one('connector_service_emits_total', 'kind="codehost.label",outcome="upstream_error"'),
    ).toBeGreaterThanOrEqual(1);
    const labelCall = 'connector="codehost",method="POST /repos/{owner}/{repo}/issues/{id}/labels"';
    expect(await one('connector_service_upstream_requests_total', `${labelCall},outcome="200"`)).toBeGreaterThanOrEqual(
      1,
    );
    expect(await one('connector_service_upstream_requests_total', `${labelCall},outcome="500"`)).toBeGreaterThanOrEqual(
      1,
    );
    expect(await one('connector_service_upstream_request_duration_seconds_count', labelCall)).toBeGreaterThanOrEqual(2);
    expect(
      await one('connector_service_upstream_requests_total', 'method="POST /app/installations/{id}/access_tokens"'),
    ).toBeGreaterThanOrEqual(1);
    expect(
      (await samples('connector_service_backfills')).filter(([l]) => l.includes('connector="codehost"')).length,
    ).toBeGreaterThanOrEqual(1);
    expect(await one('connector_service_build_info', 'version="')).toBe(1);
  });
});
