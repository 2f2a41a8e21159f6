import { describe, expect, it } from 'vitest';
import { signSlackRequest, verifySlackSignature } from '../../src/connectors/chatapp/verify-signature.js';

const secret = '8f742231b10e8888abcd99yyyzzz85a5';
// Slack's documented example request (https://api.slack.com/authentication/verifying-requests-from-slack).
const body = Buffer.from(
  'token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar' +
    '&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com' +
    '%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c',
);
const now = 1531420618;

describe('verifySlackSignature', () => {
  it("matches Slack's documented example", () => {
    expect(signSlackRequest(secret, '1531420618', body)).toBe(
      'v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503',
    );
    expect(
      verifySlackSignature(
        secret,
        { timestamp: '1531420618', signature: signSlackRequest(secret, '1531420618', body), rawBody: body },
        now,
      ),
    ).toEqual({ ok: true });
  });

  it('refuses a wrong signature, a wrong secret, a changed body and a different length', () => {
    const sig = signSlackRequest(secret, String(now), body);
    expect(verifySlackSignature(`${secret}x`, { timestamp: String(now), signature: sig, rawBody: body }, now)).toEqual({
      ok: false,
      reason: 'mismatch',
    });
    expect(
      verifySlackSignature(
        secret,
        { timestamp: String(now), signature: sig, rawBody: Buffer.concat([body, Buffer.from(' ')]) },
        now,
      ).ok,
    ).toBe(false);
    expect(verifySlackSignature(secret, { timestamp: String(now), signature: `${sig}00`, rawBody: body }, now)).toEqual(
      { ok: false, reason: 'mismatch' },
    );
    expect(
      verifySlackSignature(secret, { timestamp: String(now), signature: sig.slice(0, -1), rawBody: body }, now),
    ).toEqual({ ok: false, reason: 'mismatch' });
    // The timestamp is signed: moving it breaks the signature.
    expect(verifySlackSignature(secret, { timestamp: String(now + 1), signature: sig, rawBody: body }, now)).toEqual({
      ok: false,
      reason: 'mismatch',
    });
  });

  it('accepts up to 5 minutes either way and refuses beyond, before comparing', () => {
    for (const skew of [-300, 300, 0]) {
      const ts = String(now + skew);
      expect(
        verifySlackSignature(
          secret,
          { timestamp: ts, signature: signSlackRequest(secret, ts, body), rawBody: body },
          now,
        ),
      ).toEqual({ ok: true });
    }
    for (const skew of [-301, 301, 86_400]) {
      const ts = String(now + skew);
      expect(
        verifySlackSignature(
          secret,
          { timestamp: ts, signature: signSlackRequest(secret, ts, body), rawBody: body },
          now,
        ),
      ).toEqual({ ok: false, reason: 'stale' });
    }
  });

  it('refuses missing headers and a non-numeric timestamp', () => {
    expect(verifySlackSignature(secret, { timestamp: undefined, signature: 'v0=00', rawBody: body }, now)).toEqual({
      ok: false,
      reason: 'missing',
    });
    expect(verifySlackSignature(secret, { timestamp: String(now), signature: undefined, rawBody: body }, now)).toEqual({
      ok: false,
      reason: 'missing',
    });
    expect(verifySlackSignature(secret, { timestamp: '1e9', signature: 'v0=00', rawBody: body }, now)).toEqual({
      ok: false,
      reason: 'stale',
    });
  });
});
