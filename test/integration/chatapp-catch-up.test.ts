/**
 * Integration, INTERFACE §10.6: what Slack dropped comes back from history. Slack's
 * rate limiter drops a team's events and says so with `app_rate_limited`; every node is
 * down while Slack's tries of some events fail and it gives up. In both, the install's
 * walker re-reads the window and every message of it is in the graph, once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SlackDelivery, liveTs, type FakeChannel, type FakeTeam } from 'connector-service/testing';
import { EVENTS_PATH } from '../../src/edge/routes/chatapp/events.js';
import {
  allEvents,
  chatEnv,
  installOk,
  json,
  startChatStack,
  type ChatStack,
  type Tenant,
} from '../support/slack-harness.js';
import { scrapeSample } from '../support/metrics.js';
import { startTestNode, type TestNode } from '../support/node.js';
import { until } from '../support/until.js';

let s: ChatStack;
let node: TestNode;
let team: FakeTeam;
let general: FakeChannel;
let tenant: Tenant;
let installId: string;
let delivery: SlackDelivery;

const record = async () => {
  const r = await fetch(`${node.url}/api/v1/connectors/installs/${installId}`, { headers: tenant.auth });
  expect(r.status).toBe(200);
  return json(r);
};

/** The chat.message nodes of the install whose text is one of `texts`, by text. */
async function graphTexts(texts: string[]): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  for (const text of texts) {
    const q = new URLSearchParams({ kind: 'chat.message', install_id: installId, q: text, limit: '50' });
    const r = await fetch(`${node.url}/api/v1/graph/nodes?${q}`, { headers: tenant.auth });
    const found = ((await json(r)).nodes as Array<{ props: { text?: string } }>).filter((n) => n.props.text === text);
    counts.set(text, found.length);
  }
  return counts;
}

/** Every text is a message event of the install and one graph node; the catch-up ended. */
async function recoveredOnce(texts: string[], recovered: number, what: string) {
  const started = Date.now();
  await until(
    'the gap re-read and its messages ingested',
    async () => {
      const ids = new Set((await allEvents(node.url, tenant, installId)).map((e) => String(e.payload.text)));
      const c = (await record()).catch_up;
      return texts.every((t) => ids.has(t)) && c.state === 'complete' && c;
    },
    { timeoutMs: 60_000, everyMs: 200 },
  );
  console.log(`figures: ${what}: ${texts.length} messages recovered ${Date.now() - started} ms after the gap ended`);
  const c = (await record()).catch_up;
  expect(c.recovered).toBe(recovered);
  expect(typeof c.since).toBe('string');
  for (const [text, n] of await graphTexts(texts)) expect(n, text).toBe(1);
}

beforeAll(async () => {
  s = await startChatStack();
  node = s.node;
  team = s.slack.addTeam();
  general = s.slack.addChannel(team.id, { name: 'general' });
  tenant = await node.tenant();
  installId = (await installOk(s, tenant, team.id)).install_id;
  await until('backfill complete', async () => (await record()).backfill.state === 'complete', { timeoutMs: 20_000 });
  // Slack retries quickly here (its real schedule is 1 and 5 minutes), then gives up.
  delivery = new SlackDelivery(s.slack, { retryDelaysMs: [200, 400] });
}, 60_000);
afterAll(async () => {
  await node?.stop();
  await s?.slack.close();
});

describe('chat catch-up (INTERFACE §10.6)', () => {
  it('starts with no gap: catch_up state none', async () => {
    expect((await record()).catch_up).toMatchObject({ state: 'none', since: null, recovered: 0 });
  });

  it('app_rate_limited: the dropped messages are re-read from history, once', async () => {
    const live = delivery.post(team.id, general.id, 'delivered before the limit');
    await delivery.settled();
    expect(delivery.records.at(-1)!.outcome).toBe('delivered');
    delivery.drop(team.id, 60_000);
    // The bot's own post inside the window is in history too; ingest drops it, so it is no recovery.
    general.messages.push({ ts: liveTs(), text: 'the bot speaks', user: team.botUserId, bot_id: team.botId });
    const texts = ['dropped one', 'dropped two', 'dropped three'];
    for (const t of texts) delivery.post(team.id, general.id, t);
    // The minute Slack names has ended, so the re-read may start at once.
    const minute = Math.floor(Date.now() / 60_000) * 60 - 60;
    const res = await delivery.appRateLimited(team.id, minute);
    expect(res.status).toBe(200);
    await recoveredOnce(texts, texts.length, 'app_rate_limited');
    // The message delivered live inside the window is not counted again, nor doubled.
    expect((await graphTexts([live.text])).get(live.text)).toBe(1);
    const gaps = await scrapeSample(node.url, 'connector_service_chat_gaps_total', { reason: 'app_rate_limited' });
    expect(gaps).toBeGreaterThanOrEqual(1);
  }, 90_000);

  it('every node down past Slack giving up: after restart the messages arrive', async () => {
    delivery.drop(team.id, 0);
    const downAt = Date.now();
    // Stop the only node, keeping its namespace (streams, KV) and database.
    await node.node.stop();
    await node.pool.end();
    const texts = ['while down one', 'while down two'];
    for (const t of texts) delivery.post(team.id, general.id, t);
    await delivery.settled();
    expect(delivery.records.slice(-2).map((r) => r.outcome)).toEqual(['given_up', 'given_up']);
    // An outage is what outlasts the edge heartbeat's staleness (45 s, past which Slack's
    // one-minute retry may fall inside it too): wait that out, bounded.
    await until('the outage outlasted the heartbeat', () => Date.now() - downAt > 46_000, {
      timeoutMs: 60_000,
      everyMs: 500,
    });
    node = await startTestNode({ ...chatEnv(s.slack), SERVICE_NAMESPACE: node.namespace });
    s.slack.eventsUrl = `${node.url}${EVENTS_PATH}`;
    await recoveredOnce(texts, texts.length, `outage of ${Math.round((Date.now() - downAt) / 1000)} s`);
    const gaps = await scrapeSample(node.url, 'connector_service_chat_gaps_total', { reason: 'outage' });
    expect(gaps).toBeGreaterThanOrEqual(1);
  }, 180_000);
});
