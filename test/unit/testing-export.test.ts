/**
 * `connector-service/testing` as a tenant would use it: the signed GitHub delivery verifies
 * with the service's own signature check, and the Slack signing helper with Slack's.
 */
import { describe, expect, it } from 'vitest';
import { githubSignature, signedGithubDelivery, signedHeaders } from 'connector-service/testing';
import { verifySignature } from '../../src/connectors/codehost/verify-signature.js';
import { verifySlackSignature } from '../../src/connectors/chatapp/verify-signature.js';

describe('connector-service/testing', () => {
  it('signs GitHub deliveries the way the webhook route checks them', async () => {
    const d = signedGithubDelivery({ event: 'ping', payload: { zen: 'hi' }, secret: 's3cret' });
    expect(d.headers['x-github-event']).toBe('ping');
    expect(d.headers['x-github-delivery']).toMatch(/^[0-9a-f-]{36}$/);
    expect(await verifySignature('s3cret', Buffer.from(d.body), d.headers['x-hub-signature-256'])).toBe(true);
    expect(await verifySignature('other', Buffer.from(d.body), d.headers['x-hub-signature-256'])).toBe(false);
    expect(githubSignature('s3cret', d.body)).toBe(d.headers['x-hub-signature-256']);
  });

  it('signs Slack events the way the events route checks them', () => {
    const body = JSON.stringify({ type: 'event_callback' });
    const headers = signedHeaders('slack-secret', body, 'valid');
    const verdict = verifySlackSignature('slack-secret', {
      timestamp: headers['x-slack-request-timestamp'],
      signature: headers['x-slack-signature'],
      rawBody: Buffer.from(body),
    });
    expect(verdict.ok).toBe(true);
    const forged = signedHeaders('slack-secret', body, 'forged');
    expect(
      verifySlackSignature('slack-secret', {
        timestamp: forged['x-slack-request-timestamp'],
        signature: forged['x-slack-signature'],
        rawBody: Buffer.from(body),
      }).ok,
    ).toBe(false);
  });
});
