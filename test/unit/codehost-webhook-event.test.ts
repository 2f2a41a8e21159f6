/** Unit: webhook deliveries as ingest events (INTERFACE §4) on GitHub's recorded payloads. */
import { createRequire } from 'node:module';
import type { WebhookDefinition } from '@octokit/webhooks-examples';
import { describe, expect, it } from 'vitest';
import { expiresAtOf } from '../../src/connectors/codehost/github-client.js';
import {
  ingestKind,
  installationIdOf,
  occurredAtOf,
  toIngestEvent,
} from '../../src/connectors/codehost/webhook-event.js';

const defs = createRequire(import.meta.url)('@octokit/webhooks-examples') as WebhookDefinition[];
const examples = (name: string) => defs.find((d) => d.name === name)!.examples as unknown as Array<Record<string, any>>;

describe('webhook deliveries as ingest events', () => {
  it('kind is {event}.{action} for every recorded example with an action, the bare event otherwise', () => {
    for (const name of [
      'pull_request',
      'issues',
      'issue_comment',
      'pull_request_review_comment',
      'pull_request_review',
      'installation',
    ]) {
      for (const p of examples(name)) expect(ingestKind(name, p)).toBe(`${name}.${p.action}`);
    }
    for (const p of examples('push')) expect(ingestKind('push', p)).toBe('push');
  });

  it('id is the delivery id, payload as delivered, provenance codehost', () => {
    const payload: Record<string, any> = { ...examples('issues')[0]!, installation: { id: 42 } };
    const ev = toIngestEvent(
      { event: 'issues', deliveryId: '72d3162e-cc78-11e3-81ab-4c9367dc0958', payload },
      { install_id: 'i', tenant_id: 't' },
    );
    expect(ev).toEqual({
      installId: 'i',
      tenantId: 't',
      connectorId: 'codehost',
      id: '72d3162e-cc78-11e3-81ab-4c9367dc0958',
      kind: `issues.${payload.action}`,
      occurredAt: expect.any(String),
      payload,
    });
  });

  it('reads installation.id and when it happened', () => {
    expect(installationIdOf({ installation: { id: 957387 } })).toBe(957387);
    for (const bad of [{}, { installation: null }, { installation: { id: '1' } }, { installation: { id: -1 } }])
      expect(installationIdOf(bad)).toBeNull();
    const comment = examples('issue_comment')[0]!;
    expect(occurredAtOf(comment)).toBe(new Date(comment.comment.updated_at).toISOString());
    const review = examples('pull_request_review')[0]!;
    expect(occurredAtOf(review)).toBe(
      new Date(review.review.submitted_at ?? review.pull_request.updated_at).toISOString(),
    );
    expect(occurredAtOf({ zen: 'Keep it logically awesome.' })).toBeNull();
  });

  it('reads the expiry out of @octokit/auth-app’s cache value', () => {
    expect(expiresAtOf('ghs_x|2024-01-01T00:00:00.000Z|2024-01-01T01:00:00Z|all|issues!|')).toBe(
      '2024-01-01T01:00:00.000Z',
    );
    expect(expiresAtOf('garbage', 0)).toBe(new Date(55 * 60_000).toISOString());
  });
});
