/**
 * A dead letter recorded after a deletion or an erase keeps no forgotten text (INTERFACE
 * §10.5): the ingest consumer of a real node dead-letters an original that arrives after its
 * deletion, and a code-host event of an erased login that arrives after the erase (both sealed,
 * on their install's ingest subject, each in an envelope the consumer cannot decode, which it
 * dead-letters at once: a payload inline, and one in a blob). The unique word is in none of the
 * database's text columns, the dead letter's row nor the blob it points at, while the dead
 * letter keeps its ids, kind, subject and cause. One node serves both connectors.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { jetstream } from '@nats-io/jetstream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  messageDeletedEvent,
  messageEvent,
  nextTs,
  seedRepos,
  type FakeChannel,
  type FakeMessage,
  type FakeTeam,
} from 'connector-service/testing';
import { fromSlackEvent } from '../../src/connectors/chatapp/normalize-event.js';
import { encodeBlobRef, ingestMsgId } from '../../src/ingest/message.js';
import { installKey, names as makeNames, shardOf } from '../../src/runtime/names.js';
import { createSeal } from '../../src/runtime/seal.js';
import { getBlob, putBlob } from '../../src/store/blobs.js';
import { TEST_MASTER_KEY } from '../support/env.js';
import { examplePayload, forInstallation, type CodehostHarness } from '../support/github-harness.js';
import {
  allEvents,
  installOk,
  json,
  startBothConnectors,
  type ChatStack,
  type Tenant,
} from '../support/slack-harness.js';
import { columnsHolding } from '../support/text-in-db.js';
import { until } from '../support/until.js';

let h: CodehostHarness;
let s: ChatStack;

beforeAll(async () => {
  ({ h, s } = await startBothConnectors());
}, 60_000);
afterAll(() => s?.stop());

const word = () => `dlf${randomBytes(5).toString('hex')}x`;

interface Original {
  installId: string;
  tenantId: string;
  connectorId: 'chatapp' | 'codehost';
  id: string;
  kind: string;
  payload: unknown;
}

/**
 * `ev` published as the node's own publisher would (sealed, on its install's subject) but in
 * an envelope the consumer refuses (`occurredAt` a number): dead-lettered on its first
 * delivery. In a blob when `viaBlob`. Returns the dead letter's row once it is recorded.
 */
async function deadLettered(ev: Original, viaBlob = false) {
  const n = makeNames(s.node.namespace);
  const bytes = Buffer.from(JSON.stringify({ type: 'event', event: { ...ev, occurredAt: 17 } }));
  const ref = viaBlob ? await putBlob(s.node.pool, bytes, ev.tenantId) : null;
  const body = ref === null ? bytes : encodeBlobRef(ref);
  const subject = n.ingestSubject(
    shardOf(installKey(ev.installId), s.node.config.shards),
    ev.connectorId,
    ev.installId,
  );
  const msgId = ingestMsgId(ev.installId, ev.id);
  await jetstream(s.node.node.nc).publish(subject, body, {
    msgID: msgId,
    headers: createSeal([TEST_MASTER_KEY]).headers(body),
  });
  const row = await until(
    'the message dead-lettered',
    async () => {
      const { rows } = await s.node.pool.query<{ install_id: string; subject: string; error: string; payload: Buffer }>(
        'SELECT install_id, subject, error, payload FROM dead_letters WHERE msg_id = $1',
        [msgId],
      );
      return rows[0];
    },
    { timeoutMs: 15_000 },
  );
  expect(row).toMatchObject({ install_id: ev.installId, subject, error: 'ingest message is not an event envelope' });
  return { row, ref };
}

describe('a dead letter recorded after the deletion keeps no text of the deleted message', () => {
  let team: FakeTeam;
  let ch: FakeChannel;
  let tenant: Tenant;
  let installId: string;

  beforeAll(async () => {
    team = s.slack.addTeam();
    ch = s.slack.addChannel(team.id, { type: 'channel' });
    tenant = await s.node.tenant('dl-forget-chat');
    installId = (await installOk(s, tenant, team.id)).install_id;
  });

  it('the original fails after its deletion was stored: the dead letter keeps its ids, not its text', async () => {
    const w = word();
    const m: FakeMessage = { ts: nextTs(), user: 'U0HUMAN', text: `failing ${w}` };
    const delTs = nextTs();
    expect((await s.slack.deliver(team.id, messageDeletedEvent(ch, m, delTs))).status).toBe(200);
    const delId = `message_deleted:${ch.id}:${m.ts}:${delTs}`;
    await until(
      'the deletion stored',
      async () => (await allEvents(s.node.url, tenant, installId)).some((e) => e.id === delId),
      { timeoutMs: 10_000 },
    );
    const draft = fromSlackEvent(messageEvent(team, ch, m))!;
    expect(JSON.stringify(draft.payload)).toContain(w);
    const ev = { installId, tenantId: tenant.tenant_id, connectorId: 'chatapp' as const, ...draft };

    const { row } = await deadLettered(ev);
    expect(await columnsHolding(s.node.pool, w)).toEqual([]);
    const kept = JSON.parse(row.payload.toString('utf8'));
    expect(kept).toMatchObject({
      type: 'event',
      event: { installId, id: `message:${ch.id}:${m.ts}`, kind: 'message', occurredAt: 17 },
    });
    expect(kept.event.payload).toMatchObject({ channel_id: ch.id, ts: m.ts, user: 'U0HUMAN' });
    expect(kept.event.payload).not.toHaveProperty('text');
    // The tenant sees it, with its event's id and kind.
    const listed = await fetch(`${s.node.url}/api/v1/dead-letters?install_id=${installId}`, { headers: tenant.auth });
    expect((await json(listed)).dead_letters).toContainEqual(
      expect.objectContaining({ event_id: `message:${ch.id}:${m.ts}`, kind: 'message' }),
    );
  });
});

describe('a dead letter recorded after an erase keeps no text of the erased login', () => {
  const P = 9_500_000 + Math.floor(Math.random() * 100_000);
  const LOGIN = `dl-erased-${P}`;
  let code: Tenant;
  let codeInstall: string;

  beforeAll(async () => {
    h.gh.addInstallation(P, `dlf-org-${P}`);
    seedRepos(h.gh.pulls, P, `dlf-org-${P}`, [0], 950_000 + (P % 1000) * 20);
    code = await h.tenant('dl-forget-code');
    codeInstall = await h.install(code as Tenant & { user_id: string }, P);
  });

  it("the login's review fails after the erase: neither the dead letter nor its blob keeps the text", async () => {
    const erased = await fetch(`${s.node.url}/api/v1/graph/erase`, {
      method: 'POST',
      headers: { ...code.auth, 'content-type': 'application/json' },
      body: JSON.stringify({ install_id: codeInstall, user_external_id: LOGIN }),
    });
    expect(erased.status).toBe(200);
    const [w, theirs] = [word(), word()];
    const p = forInstallation(examplePayload('pull_request_review', 'submitted'), P) as Record<string, any>;
    const payload = {
      ...p,
      review: { ...p.review, id: P, body: `failed ${w}`, user: { ...p.review.user, login: LOGIN, id: 1 } },
      // Another user's text in the same event stays.
      pull_request: { ...p.pull_request, body: `theirs ${theirs}`, user: { ...p.pull_request.user, login: 'kept' } },
    };
    const ev = {
      installId: codeInstall,
      tenantId: code.tenant_id,
      connectorId: 'codehost' as const,
      id: randomUUID(),
      kind: 'pull_request_review.submitted',
      payload,
    };

    const { row, ref } = await deadLettered(ev, true);
    expect(await columnsHolding(s.node.pool, w)).toEqual([]);
    expect(JSON.parse(row.payload.toString('utf8'))).toEqual({ type: 'blob-ref', ref });
    const blob = JSON.parse((await getBlob(s.node.pool, ref!))!.toString('utf8'));
    expect(blob).toMatchObject({ type: 'event', event: { id: ev.id, kind: ev.kind, occurredAt: 17 } });
    expect(blob.event.payload.review).toMatchObject({ id: P, user: { login: LOGIN } });
    expect(blob.event.payload.review).not.toHaveProperty('body');
    expect(blob.event.payload.pull_request.body).toBe(`theirs ${theirs}`);
  });
});
