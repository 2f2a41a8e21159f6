/**
 * `POST /api/v1/graph/erase` (INTERFACE §10.5): a chat user's messages lose their text in the
 * graph, search and the stored events, and so does a message of theirs that arrives after
 * the erase; another user's messages stay; the erase is audited; another tenant's install
 * answers 404.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { messageEvent, nextTs, type FakeChannel, type FakeMessage, type FakeTeam } from 'connector-service/testing';
import { allEvents, installOk, json, startChatStack, type ChatStack, type Tenant } from '../support/slack-harness.js';
import { columnsHolding } from '../support/text-in-db.js';
import { until } from '../support/until.js';

let s: ChatStack;
let team: FakeTeam;
let ch: FakeChannel;
let tenant: Tenant;
let other: Tenant;
let installId: string;

beforeAll(async () => {
  s = await startChatStack();
  team = s.slack.addTeam();
  ch = s.slack.addChannel(team.id, { type: 'channel' });
  tenant = await s.node.tenant('erasing');
  other = await s.node.tenant('other');
  installId = (await installOk(s, tenant, team.id)).install_id;
});
afterAll(() => s?.stop());

const word = () => `ers${randomBytes(5).toString('hex')}x`;
const post = async (user: string, text: string) => {
  const m: FakeMessage = { ts: nextTs(), user, text };
  expect((await s.slack.deliver(team.id, messageEvent(team, ch, m))).status).toBe(200);
  await until(
    'stored',
    async () => (await allEvents(s.node.url, tenant, installId)).some((e) => e.id === `message:${ch.id}:${m.ts}`),
    { timeoutMs: 10_000 },
  );
  return m;
};
const search = async (q: string) => {
  const r = await fetch(`${s.node.url}/api/v1/graph/nodes?q=${encodeURIComponent(q)}`, { headers: tenant.auth });
  return (await json(r)).nodes as unknown[];
};
const erase = (t: Tenant, body: unknown, requestId = 'erase-req') =>
  fetch(`${s.node.url}/api/v1/graph/erase`, {
    method: 'POST',
    headers: { ...t.auth, 'content-type': 'application/json', 'x-request-id': requestId },
    body: JSON.stringify(body),
  });

describe('POST /api/v1/graph/erase', () => {
  it("forgets the text of everything the user wrote, before and after, and nobody else's", async () => {
    const [a, b, kept, late] = [word(), word(), word(), word()];
    await post('U0ERASE', `first ${a}`);
    await post('U0ERASE', `second ${b}`);
    await post('U0KEEP', `other ${kept}`);
    expect(await search(a)).toHaveLength(1);

    const res = await erase(tenant, { install_id: installId, user_external_id: `${team.id}:U0ERASE` });
    expect(res.status).toBe(200);
    const body = await json(res);
    expect(body.erased.events).toBe(2);
    expect(body.erased.nodes).toBeGreaterThanOrEqual(2);
    for (const w of [a, b]) {
      expect(await search(w)).toEqual([]);
      expect(await columnsHolding(s.node.pool, w)).toEqual([]);
    }
    expect(await search(kept)).toHaveLength(1);

    // A message of theirs that arrives later (a backfill, a late delivery) is stored without text.
    const m = await post('U0ERASE', `late ${late}`);
    const stored = (await allEvents(s.node.url, tenant, installId)).find((e) => e.id === `message:${ch.id}:${m.ts}`);
    expect(stored?.payload).toMatchObject({ user: 'U0ERASE', ts: m.ts });
    expect(stored?.payload).not.toHaveProperty('text');
    expect(await columnsHolding(s.node.pool, late)).toEqual([]);

    const audit = await json(await fetch(`${s.node.url}/api/v1/audit`, { headers: tenant.auth }));
    expect(audit.entries.find((e: { request_id: string }) => e.request_id === 'erase-req')).toMatchObject({
      action: 'erase',
      outcome: 'ok',
    });
  });

  it("answers 404 for another tenant's install and 400 for a malformed body", async () => {
    const foreign = await erase(other, { install_id: installId, user_external_id: `${team.id}:U0KEEP` });
    expect(foreign.status).toBe(404);
    expect((await json(foreign)).error.code).toBe('not_found');
    expect((await erase(tenant, { install_id: 'nope', user_external_id: 'x' })).status).toBe(400);
    expect((await erase(tenant, { install_id: installId })).status).toBe(400);
  });
});
