/**
 * Metric labels come from closed sets (issue 32 item 6): emits with kinds a tenant made up
 * (long ones, one with a NUL byte) add no series to `/metrics`; they are counted as `other`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BadConfig } from '../../src/errors.js';
import { edgeFixture } from '../support/edge.js';

describe('metric labels', () => {
  let f: Awaited<ReturnType<typeof edgeFixture>>;
  beforeAll(async () => {
    // As the install actor answers: a kind it does not know is bad_config, a known one a receipt.
    f = await edgeFixture(({ msg }) => {
      if (msg.kind !== 'chatapp.message') throw new BadConfig(`unknown chat emit kind ${String(msg.kind)}`);
      return {
        provider_id: '1700000000.000100',
        kind: msg.kind,
        install_id: '00000000-0000-4000-8000-000000000000',
        emitted_at: new Date(0).toISOString(),
      };
    });
  });
  afterAll(() => f.close());

  const emitSeries = async () => {
    const text = (await f.app.inject({ method: 'GET', url: '/metrics' })).body;
    return { text, series: text.split('\n').filter((l) => l.startsWith('connector_service_emits_total{')) };
  };

  it('counts made-up emit kinds as `other`: no new series per kind, no raw NUL in /metrics', async () => {
    const t = await f.tenant('labels');
    const inst = await f.install(t.tenant_id);
    const emit = (kind: string) =>
      f.app.inject({
        method: 'POST',
        url: `/api/v1/connectors/installs/${inst.install_id}/emit`,
        headers: t.auth,
        payload: { kind, body: { channel_id: 'C1', text: 'hi' } },
      });
    const made = [
      ...Array.from({ length: 19 }, (_, i) => `made.up_${i}`),
      'k'.repeat(100),
      'chatapp.message\u0000evil',
    ];
    for (const kind of made) expect((await emit(kind)).statusCode, kind).toBe(400);
    expect((await emit('chatapp.message')).statusCode).toBe(200);

    const { text, series } = await emitSeries();
    expect(text).not.toContain('\u0000');
    expect(series.sort()).toEqual([
      'connector_service_emits_total{kind="chatapp.message",outcome="ok"} 1',
      `connector_service_emits_total{kind="other",outcome="bad_config"} ${made.length}`,
    ]);
  });
});
