/**
 * bench/ingest's Slack request (slack-request.ts) is what the service takes from Slack
 * (INTERFACE §3 `chatapp/events`): its v0 signature verifies with the service's own
 * verifier, its envelope fits the route's documented schema, its event normalises to a
 * chat `message` whose id the bench finds by the run's prefix, and event ids are unique.
 */
import { describe, expect, it } from 'vitest';
import { signedSlackEvent, slackIdPrefix, slackRunTag } from '../../bench/ingest/slack-request.js';
import { fromSlackEvent } from '../../src/connectors/chatapp/normalize-event.js';
import { verifySlackSignature } from '../../src/connectors/chatapp/verify-signature.js';
import { EVENTS_SCHEMA } from '../../src/edge/routes/chatapp/events-schema.js';

const SECRET = 'bench-signing-secret-0123456789';
const NOW_MS = 1_764_000_000_123;

const request = (n: number, prefix = 'edge1i1s-', teamId = 'TBENCH0N0') =>
  signedSlackEvent({ signingSecret: SECRET, teamId, n, prefix, nowMs: NOW_MS });

const verify = (d: ReturnType<typeof request>, secret = SECRET) =>
  verifySlackSignature(
    secret,
    {
      timestamp: d.headers['x-slack-request-timestamp'],
      signature: d.headers['x-slack-signature'],
      rawBody: Buffer.from(d.body),
    },
    Math.floor(NOW_MS / 1000),
  );

describe('bench Slack request', () => {
  it("is signed the way the service's verifier checks, and not under another secret", () => {
    const d = request(7);
    expect(verify(d)).toEqual({ ok: true });
    expect(verify(d, `${SECRET}x`)).toEqual({ ok: false, reason: 'mismatch' });
    expect(verify({ ...d, body: d.body.replace('Message 7', 'Message 8') })).toEqual({
      ok: false,
      reason: 'mismatch',
    });
  });

  it("is an event_callback of about 2.4 KB that fits the route's schema and names its team", () => {
    const d = request(3, 'alones-', 'TBENCH0N5');
    expect(d.body.length).toBeGreaterThan(2_200);
    expect(d.body.length).toBeLessThan(2_700);
    const body = JSON.parse(d.body) as { team_id: string; type: string; event: unknown };
    expect(EVENTS_SCHEMA.body.safeParse(body).success).toBe(true);
    expect(body).toMatchObject({ type: 'event_callback', team_id: 'TBENCH0N5' });
  });

  it('normalises to a chat message found by the run prefix, sent now', () => {
    const prefix = 'edge1i32p50-';
    const draft = fromSlackEvent((JSON.parse(request(42, prefix).body) as { event: unknown }).event);
    expect(draft).toMatchObject({ kind: 'message', occurredAt: new Date(NOW_MS).toISOString() });
    expect(draft!.id.startsWith(slackIdPrefix(prefix))).toBe(true);
    // A tag's image is a prefix of its runs' images (the alone topology counts by tag).
    expect(slackIdPrefix('edge1i32p50-').startsWith(slackIdPrefix('edge1i32'))).toBe(true);
    expect(draft!.id.startsWith(slackIdPrefix('edge1i32p5-'))).toBe(false);
    expect(slackRunTag('alonew-')).toBe('ALONEWX');
  });

  it('gives every request its own event id and, within a millisecond, its own message id', () => {
    const n = 5_000;
    const bodies = Array.from(
      { length: n },
      (_, i) => JSON.parse(request(i).body) as { event_id: string; event: unknown },
    );
    expect(new Set(bodies.map((b) => b.event_id)).size).toBe(n);
    // All sent in the same millisecond: ts differs by the request counter (1 000 per ms per channel).
    const ids = bodies.slice(0, 1_000).map((b) => fromSlackEvent(b.event)!.id);
    expect(new Set(ids).size).toBe(1_000);
  });
});
