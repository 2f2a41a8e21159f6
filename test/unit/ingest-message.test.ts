/** unit: the ingest message body, with a payload spliced in as received or encoded again. */
import { describe, expect, it } from 'vitest';
import { decodeEnvelope, encodeEvent } from '../../src/ingest/message.js';
import { encodeIngestMessage } from '../../src/ingest/message.js';
import { type IngestEvent } from '../../src/runtime/ports.js';

const event: IngestEvent = {
  installId: 'i-1',
  tenantId: 't-1',
  connectorId: 'codehost',
  id: 'delivery-1',
  kind: 'issues.opened',
  occurredAt: '2024-01-01T00:00:00.000Z',
  payload: null,
};

describe('unit: ingest message', () => {
  it('is the envelope of encodeEvent when the payload text is not known', () => {
    const ev = { ...event, payload: { a: 1 } };
    expect(encodeIngestMessage(ev)).toEqual(encodeEvent(ev));
  });

  it('carries the payload text as received, and decodes to the same event as a re-encoding', () => {
    // Pretty-printed, escapes, non-ASCII, a duplicate key (the last one wins either way).
    const text =
      '{\n  "action": "opened",\n  "title": "caf\\u00e9 ☕ \\"q\\"",\n  "n": [1, 2.5, -3e2, null, true],\n  "dup": 1,\n  "dup": 2,\n  "nested": {"x": {}}\n}';
    const payload = JSON.parse(text) as unknown;
    const spliced = encodeIngestMessage({ ...event, payload, payloadJson: Buffer.from(text, 'utf8') });
    expect(Buffer.from(spliced).toString('utf8')).toContain(text);
    expect(decodeEnvelope(spliced)).toEqual(decodeEnvelope(encodeEvent({ ...event, payload })));
    expect(decodeEnvelope(spliced)).toEqual({ type: 'event', event: { ...event, payload } });
  });
});
