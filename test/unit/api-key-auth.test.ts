/**
 * The edge's key cache and `last_used_at` throttle (INTERFACE §10.4): a cached key stops
 * at its expiry without another lookup; a key's use is written at most once a minute.
 */
import type { FastifyRequest } from 'fastify';
import { describe, expect, it } from 'vitest';
import { createTenantAuth, type KeyGrant } from '../../src/edge/auth.js';
import { keyUsageRecorder } from '../../src/store/api-key-usage.js';
import { ManualClock } from '../support/clock.js';

const request = (key: string) => ({ headers: { authorization: `Bearer ${key}` } }) as unknown as FastifyRequest;

describe('createTenantAuth', () => {
  it('refuses a cached key once it expires, and tells of each use', async () => {
    const clock = new ManualClock(1_000_000);
    const grant: KeyGrant = { tenantId: 't', keyId: 'k', scopes: ['graph:read'], expiresAt: clock.now() + 5_000 };
    let lookups = 0;
    const used: string[] = [];
    const auth = createTenantAuth(
      async () => {
        lookups++;
        return grant;
      },
      { now: () => clock.now(), used: (id) => used.push(id) },
    );
    auth.setLive(true); // revocations heard: hits are kept 60 s
    const req = request('csk_abcdefghijkl');
    expect(await auth.authenticate(req)).toEqual(grant);
    expect(req.apiKey).toEqual({ keyId: 'k', scopes: ['graph:read'] });
    await clock.advance(4_999);
    await auth.authenticate(request('csk_abcdefghijkl'));
    expect(lookups).toBe(1);
    expect(used).toEqual(['k', 'k']);
    await clock.advance(1);
    await expect(auth.authenticate(request('csk_abcdefghijkl'))).rejects.toMatchObject({ code: 'unauthorized' });
  });
});

describe('keyUsageRecorder', () => {
  it('writes a key at most once a minute, each key on its own', async () => {
    const clock = new ManualClock(0);
    const writes: unknown[][] = [];
    const usage = keyUsageRecorder(
      {
        async query(_text, values) {
          writes.push(values);
        },
      },
      { now: () => clock.now() },
    );
    usage.used('a');
    usage.used('a');
    usage.used('b');
    await clock.advance(59_999);
    usage.used('a');
    await usage.flushed();
    expect(writes.map((v) => v[0])).toEqual(['a', 'b']);
    await clock.advance(1);
    usage.used('a');
    await usage.flushed();
    expect(writes.map((v) => v[0])).toEqual(['a', 'b', 'a']);
  });
});
