/**
 * Actor test: the chat channel bucket through node churn (INTERFACE §8.24, §8.5). A take
 * carries an id, so the router may resend it to the shard's next owner: a resent take is
 * answered with its first permit (never a spurious `channel throttled`), also by a fresh
 * activation hydrated from KV; a take whose write never went out is refunded, so a
 * throttle means a write really took the channel's token within the second.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { chatBucketActor } from '../../src/actors/chatapp/chat-bucket.js';
import { chatBucketKey } from '../../src/actors/chatapp/chat-bucket-protocol.js';
import { chatWorkspaceBucketActor } from '../../src/actors/chatapp/chat-workspace-bucket.js';
import type { Permit } from '../../src/connectors/chatapp/emit.js';
import type { KvPort } from '../../src/runtime/ports.js';
import { createLogger } from '../../src/log.js';
import { Kernel } from '../../src/runtime/kernel.js';

function memoryKv(): KvPort {
  const m = new Map<string, { value: Uint8Array; revision: number }>();
  let rev = 0;
  return {
    get: async (k) => m.get(k) ?? null,
    create: async (k, v) => (m.has(k) ? null : (m.set(k, { value: v, revision: ++rev }), rev)),
    update: async (k, v, r) => (m.get(k)?.revision !== r ? null : (m.set(k, { value: v, revision: ++rev }), rev)),
    put: async (k, v) => (m.set(k, { value: v, revision: ++rev }), rev),
    delete: async (k) => void m.delete(k),
  };
}

const kernels: Kernel[] = [];
afterEach(async () => {
  for (const k of kernels.splice(0)) await k.stop();
});

/** One "node": a kernel with both bucket kinds, asking its own actors. */
function node(kv: KvPort, now: () => number) {
  const kernel = new Kernel({ log: createLogger({ level: 'silent', node: 't' }) });
  kernels.push(kernel);
  const actors = {
    ask: <T>(key: Parameters<Kernel['dispatch']>[0], msg: { type: string } & Record<string, unknown>) =>
      kernel.dispatch(key, msg, { deadline: Date.now() + 5_000 }) as Promise<T>,
  };
  kernel.register(chatBucketActor({ actors, kv, now }));
  kernel.register(chatWorkspaceBucketActor({ kv, now }));
  const key = chatBucketKey('T1', 'C1');
  return {
    take: (takeId: string) => actors.ask<Permit>(key, { type: 'take', takeId }),
    refund: (takeId: string) => actors.ask<{ refunded: boolean }>(key, { type: 'refund', takeId }),
  };
}

describe('chat bucket takes with ids', () => {
  it('a resent take answers its first permit; another take in the same second is throttled', async () => {
    let t = 1_000_000;
    const n = node(memoryKv(), () => t);
    expect(await n.take('a')).toEqual({ ok: true, waitMs: 0 });
    expect(await n.take('a')).toEqual({ ok: true, waitMs: 0 });
    expect(await n.take('b')).toMatchObject({ ok: false, reason: 'channel' });
    t += 1_000;
    expect(await n.take('b')).toEqual({ ok: true, waitMs: 0 });
  });

  it('the next owner (a fresh activation from KV) answers a take resent after its node died', async () => {
    const kv = memoryKv();
    let t = 2_000_000;
    const dying = node(kv, () => t);
    expect(await dying.take('x')).toEqual({ ok: true, waitMs: 0 });
    await kernels[0]!.stop();
    t += 300;
    const next = node(kv, () => t);
    expect(await next.take('x')).toEqual({ ok: true, waitMs: 0 });
    // A different write inside the same second is a real throttle: 'x' went out.
    expect(await next.take('y')).toMatchObject({ ok: false, reason: 'channel', retryAfterMs: 700 });
  });

  it('a refunded take gives the token back; a refund after a later take changes nothing', async () => {
    let t = 3_000_000;
    const n = node(memoryKv(), () => t);
    expect(await n.take('p')).toMatchObject({ ok: true });
    expect(await n.refund('p')).toEqual({ refunded: true });
    expect(await n.take('q')).toMatchObject({ ok: true });
    expect(await n.refund('p')).toEqual({ refunded: false });
    expect(await n.take('r')).toMatchObject({ ok: false, reason: 'channel' });
    t += 1_000;
    expect(await n.take('r')).toMatchObject({ ok: true });
  });
});
