/**
 * Issue 32 item 3 on a real node: a client of the deployment's NATS captures a sealed emit
 * request on `<ns>.actor.<shard>.install-writes.<install_id>` and publishes it again well
 * within its deadline. The node refuses it (401 `unauthorized` in the reply, counted as
 * `connector_service_nats_refused_total{path="actor_replay"}`) and Slack sees one post.
 */
import { connect, type Msg, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installWritesKey } from '../../src/actors/install-protocol.js';
import { names as makeNames, shardOf } from '../../src/runtime/names.js';
import { testNatsUrl } from '../support/env.js';
import { emit, installOk, json, startChatStack, type ChatStack, type Tenant } from '../support/slack-harness.js';
import { until } from '../support/until.js';
import type { FakeChannel } from 'connector-service/testing';

let s: ChatStack;
let tenant: Tenant;
let installId: string;
let channel: FakeChannel;
let outsider: NatsConnection;

beforeAll(async () => {
  s = await startChatStack();
  const team = s.slack.addTeam();
  tenant = await s.node.tenant();
  installId = (await installOk(s, tenant, team.id)).install_id;
  await until(
    'backfill complete',
    async () => {
      const r = await fetch(`${s.node.url}/api/v1/connectors/installs/${installId}`, { headers: tenant.auth });
      return (await json(r)).backfill.state === 'complete';
    },
    { timeoutMs: 20_000 },
  );
  channel = s.slack.addChannel(team.id, { name: 'replayed' });
  outsider = await connect({ servers: testNatsUrl() });
});
afterAll(async () => {
  await outsider?.close();
  await s?.stop();
});

async function refused(path: string): Promise<number> {
  const text = await (await fetch(`${s.node.url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`connector_service_nats_refused_total{path="${path}"}`));
  return line ? Number(line.split(' ').pop()) : 0;
}
const postsTo = (text: string) => s.slack.posted.filter((p) => p.channel === channel.id && p.text === text).length;

describe('replayed actor requests', () => {
  it('a captured sealed emit published again within its deadline is refused; Slack sees one post', async () => {
    const key = installWritesKey(installId);
    const subject = makeNames(s.node.namespace).actorSubject(shardOf(key, s.node.config.shards), key);
    const captured: Msg[] = [];
    const tap = outsider.subscribe(subject, { callback: (_e, m) => void captured.push(m) });
    await outsider.flush();
    const before = await refused('actor_replay');

    const res = await emit(s.node.url, tenant, installId, 'chatapp.message', { channel_id: channel.id, text: 'once' });
    expect(res.status).toBe(200);
    const sent = Date.now();
    const wire = await until('the emit request seen on the wire', () => captured[0]);
    tap.unsubscribe();
    expect(JSON.parse(new TextDecoder().decode(wire.data))).toMatchObject({ msg: { type: 'emit' } });
    expect(postsTo('once')).toBe(1);

    // The channel's bucket (1 message/s) has a token again, so only the fence can stop a
    // second post; the request's own deadline (25 s) is still far ahead.
    await new Promise((r) => setTimeout(r, Math.max(0, sent + 1_200 - Date.now())));
    const reply = await outsider.request(subject, wire.data, { timeout: 20_000, headers: wire.headers });
    expect(JSON.parse(new TextDecoder().decode(reply.data))).toMatchObject({
      ok: false,
      error: { code: 'unauthorized' },
    });
    // The actor answers after its upstream call: had it posted, the post would be there now.
    expect(postsTo('once')).toBe(1);
    expect(await refused('actor_replay')).toBe(before + 1);

    // The deployment's own emits (a new id each) still go through.
    const next = await emit(s.node.url, tenant, installId, 'chatapp.message', {
      channel_id: channel.id,
      text: 'again',
    });
    expect(next.status).toBe(200);
    expect(postsTo('again')).toBe(1);
  });
});
