/**
 * Integration: traces across the actor runtime (INTERFACE §10.7) on a real node (edge,
 * JetStream, shard consumer, group commit, effect runner) against the fake GitHub, into an
 * in-memory exporter. A `pull_request.opened` webhook is one trace from the route to the
 * PR summary effect's upstream call, its commit a span of its own linked both ways; an emit
 * is one trace from the route through the actor request to GitHub. No span says a secret or
 * the webhook's text; log lines of the trace carry its `trace_id`.
 */
// First: tracing must start before anything imports the service (test/support/tracing.ts).
import { exported, finishedSpans, stopTracing } from '../support/tracing.js';
import { randomBytes } from 'node:crypto';
import { SpanKind } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { names } from '../../src/runtime/names.js';
import { PR_SUMMARY_SENTINEL } from '../../src/connectors/codehost/sentinels.js';
import {
  examplePayload,
  forInstallation,
  startCodehostHarness,
  type CodehostHarness,
} from '../support/github-harness.js';
import { LogCapture } from '../support/log-capture.js';
import { until } from '../support/until.js';

const REPO = 'Codertocat/Hello-World';
const P = 7_400_000 + Math.floor(Math.random() * 1000);
/** A word no span may carry: it is only in the webhook's text (the PR title and body). */
const WORD = `zebrawort${randomBytes(4).toString('hex')}`;

let h: CodehostHarness;
let t: Awaited<ReturnType<CodehostHarness['tenant']>>;
let installId: string;
const logs = new LogCapture();

beforeAll(async () => {
  h = await startCodehostHarness({ LOG_LEVEL: 'debug' }, { logs });
  t = await h.tenant('traced');
  installId = await h.install(t, P);
});
afterAll(async () => {
  await h?.stop();
  await stopTracing();
});

const attr = (s: ReadableSpan, k: string) => s.attributes[k];
const inTrace = (traceId: string) => finishedSpans().filter((s) => s.spanContext().traceId === traceId);
const parentOf = (s: ReadableSpan) => s.parentSpanContext?.spanId;

/** The chain of span names from `s` up to its trace's root (names of the spans found here). */
function ancestry(s: ReadableSpan): string[] {
  const byId = new Map(inTrace(s.spanContext().traceId).map((x) => [x.spanContext().spanId, x]));
  const out: string[] = [];
  for (let cur: ReadableSpan | undefined = s; cur; cur = byId.get(parentOf(cur) ?? '')) out.push(cur.name);
  return out;
}

/** The request span of the one POST to `route` made after `since` spans were exported. */
async function requestSpan(route: string, since: number): Promise<ReadableSpan> {
  return until(`the request span of ${route}`, () =>
    finishedSpans()
      .slice(since)
      .find((s) => s.name === 'request' && attr(s, 'http.route') === route),
  );
}

function prOpened(number: number) {
  const p = forInstallation(examplePayload('pull_request', 'opened'), P) as Record<string, any>;
  return {
    ...p,
    number,
    pull_request: { ...p.pull_request, number, title: `Teach the ${WORD}`, body: `The ${WORD} grows here.` },
  };
}

describe('tracing (OTEL, in-memory exporter)', () => {
  it('follows a pull_request.opened webhook from the route to the PR summary comment at GitHub', async () => {
    const number = 21;
    h.gh.repos.prFiles.set(`${REPO}#${number}`, [
      { filename: 'a.ts', status: 'modified', additions: 1, deletions: 0, changes: 1, patch: '@@ -1 +1 @@\n+a' },
    ]);
    const since = exported.getFinishedSpans().length;
    // The ingest message as it goes by (JetStream removes it once committed).
    const sub = h.node.node.nc.subscribe(names(h.node.namespace).ingestSubjects, { max: 1 });
    const message = (async () => {
      for await (const m of sub) return m;
      throw new Error('no ingest message seen');
    })();
    const res = await h.deliver('pull_request', prOpened(number));
    expect(res.status).toBe(202);
    const route = await requestSpan('/api/v1/connectors/codehost/webhooks', since);
    const traceId = route.spanContext().traceId;

    // The summary comment's upstream call, in the webhook's trace, under effect.run.
    const post = await until('the summary POST in the webhook trace, its ancestors ended', () =>
      inTrace(traceId).find(
        (s) =>
          s.kind === SpanKind.CLIENT &&
          attr(s, 'http.request.method') === 'POST' &&
          String(attr(s, 'url.full')).endsWith(`/repos/${REPO}/issues/${number}/comments`) &&
          ancestry(s).at(-1) === 'request',
      ),
    );
    expect(
      [...h.gh.repos.comments.values()].some((c) => c.issue_number === number && c.body.includes(PR_SUMMARY_SENTINEL)),
    ).toBe(true);
    // The effect writes through the code-host writer actor (its pacing): an actor request.
    expect(ancestry(post)).toEqual([
      'POST',
      'actor.handle',
      'actor.request',
      'effect.run',
      'ingest.deliver',
      'ingest.publish',
      'request',
    ]);

    const spans = inTrace(traceId);
    // Upstream URLs keep their query's names, never its values.
    const files = spans.find((s) => String(attr(s, 'url.full')).includes(`/pulls/${number}/files`));
    expect(attr(files!, 'url.full')).toMatch(/\/pulls\/21\/files\?per_page$/);
    const publish = spans.find((s) => s.name === 'ingest.publish')!;
    const deliver = spans.find((s) => s.name === 'ingest.deliver')!;
    const effect = spans.find((s) => s.name === 'effect.run')!;
    expect(publish.kind).toBe(SpanKind.PRODUCER);
    expect(deliver.kind).toBe(SpanKind.CONSUMER);
    for (const s of [publish, deliver, effect]) {
      expect(attr(s, 'install.id')).toBe(installId);
      expect(attr(s, 'connector.id')).toBe('codehost');
    }
    expect(attr(effect, 'effect.kind')).toEqual(expect.any(String));

    // The message carried the publish span's context beside its Nats-Msg-Id.
    const seen = await message;
    expect(seen.headers?.get('Nats-Msg-Id')).toContain(installId);
    expect(seen.headers?.get('traceparent')).toBe(`00-${traceId}-${publish.spanContext().spanId}-01`);

    // The commit: a trace of its own, linked to the event's delivery and back; its SQL under it.
    const commit = await until('the commit linking the delivery', () =>
      finishedSpans().find(
        (s) => s.name === 'ingest.commit' && s.links.some((l) => l.context.spanId === deliver.spanContext().spanId),
      ),
    );
    expect(commit.spanContext().traceId).not.toBe(traceId);
    expect(commit.parentSpanContext).toBeUndefined();
    expect(deliver.links.map((l) => l.context.spanId)).toContain(commit.spanContext().spanId);
    const sql = inTrace(commit.spanContext().traceId).filter((s) => parentOf(s) === commit.spanContext().spanId);
    expect(
      sql.some((s) => /INSERT INTO events/.test(String(attr(s, 'db.query.text') ?? attr(s, 'db.statement')))),
    ).toBe(true);

    // INTERFACE §10.7: log lines of the traced work carry its trace_id.
    const traced = logs.lines.filter((l) => l.trace_id === traceId);
    expect(traced.length).toBeGreaterThan(0);
    expect(traced.every((l) => typeof l.span_id === 'string')).toBe(true);
  });

  it('follows an emit from the route through the actor request to the upstream write', async () => {
    const since = exported.getFinishedSpans().length;
    const res = await h.api(`/api/v1/connectors/installs/${installId}/emit`, t, {
      body: { kind: 'codehost.issue_comment', body: { repo_full_name: REPO, issue_number: 1, body: `hi ${WORD}` } },
    });
    expect(res.status, await res.clone().text()).toBeLessThan(300);
    const route = await requestSpan('/api/v1/connectors/installs/:installId/emit', since);
    const post = await until('the emit POST in its trace, its ancestors ended', () =>
      inTrace(route.spanContext().traceId).find(
        (s) =>
          s.kind === SpanKind.CLIENT &&
          String(attr(s, 'url.full')).endsWith(`/repos/${REPO}/issues/1/comments`) &&
          ancestry(s).at(-1) === 'request',
      ),
    );
    expect(ancestry(post)).toEqual([
      'POST',
      'actor.handle',
      'actor.request',
      'actor.handle',
      'actor.request',
      'request',
    ]);
  });

  it('no span carries a token, a key, a secret or the text of a message', async () => {
    // A query value on the edge (an OAuth callback's code would be one) stays out of url.path.
    const listed = await h.api(`/api/v1/connectors/installs/${installId}/events?kind=${WORD}`, t);
    expect(listed.status).toBe(200);
    await requestSpan('/api/v1/connectors/installs/:installId/events', 0);
    const secrets = [...h.gh.tokens.keys(), t.api_key, h.secret, h.adminToken, h.node.config.masterKey!, WORD];
    expect(h.gh.tokens.size).toBeGreaterThan(0);
    const spans = finishedSpans();
    expect(spans.length).toBeGreaterThan(20);
    const text = JSON.stringify(
      spans.map((s) => ({
        name: s.name,
        attributes: s.attributes,
        events: s.events,
        status: s.status,
        links: s.links.map((l) => l.attributes ?? {}),
        resource: s.resource.attributes,
      })),
    );
    for (const secret of secrets) expect(text.includes(secret), `a span holds ${secret.slice(0, 6)}…`).toBe(false);
  });
});
