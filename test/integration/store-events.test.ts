import type { Pool } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool } from '../../src/store/db.js';
import {
  decodeCursor,
  encodeCursor,
  insertEvent,
  insertEvents,
  listEvents,
  storedEventKeys,
  type NewEvent,
} from '../../src/store/events.js';
import { createInstall, type Install } from '../../src/store/installs.js';
import { createTenant } from '../../src/store/tenants.js';
import { TEST_MASTER_KEY, testDatabaseUrl } from '../support/env.js';

let pool: Pool;
beforeAll(() => {
  pool = createPool(testDatabaseUrl(), { max: 3 });
});
afterAll(async () => {
  await pool.end();
});

async function freshInstall(): Promise<Install> {
  const { tenant_id } = await createTenant(pool, TEST_MASTER_KEY, 'T');
  return createInstall(pool, { tenantId: tenant_id, connectorId: 'chatapp', externalId: `T${Math.random()}` });
}

const ev = (inst: Install, id: string, over: Partial<NewEvent> = {}): NewEvent => ({
  id,
  kind: 'message',
  connector_id: inst.connector_id,
  install_id: inst.install_id,
  tenant_id: inst.tenant_id,
  payload: { text: id },
  ...over,
});

async function listAll(inst: Install, limit: number, between?: (page: number) => Promise<void>): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | null = null;
  for (let page = 0; page < 100; page++) {
    const res = await listEvents(pool, inst.tenant_id, inst.install_id, { limit, cursor });
    ids.push(...res.events.map((e) => e.id));
    if (!res.next_cursor) return ids;
    cursor = res.next_cursor;
    await between?.(page);
  }
  throw new Error('pagination did not end');
}

describe('events', () => {
  it('stores an event once; the duplicate reports false', async () => {
    const inst = await freshInstall();
    expect(await insertEvent(pool, ev(inst, 'message:C1:1.0'))).toBe(true);
    expect(await insertEvent(pool, ev(inst, 'message:C1:1.0', { payload: { text: 'changed' } }))).toBe(false);
    const { rows } = await pool.query('SELECT payload FROM events WHERE install_id = $1', [inst.install_id]);
    expect(rows).toEqual([{ payload: { text: 'message:C1:1.0' } }]);
  });

  it('stores payloads with NUL and lone surrogates, in strings and keys', async () => {
    const inst = await freshInstall();
    const payload = { text: 'a\u0000b\ud800c', ['k\u0000\udc00']: ['\ud83d'], ok: '😀' };
    expect(await insertEvent(pool, ev(inst, 'id\u0000', { payload, kind: 'message' }))).toBe(true);
    const [stored] = (await listEvents(pool, inst.tenant_id, inst.install_id)).events;
    expect(stored).toMatchObject({ id: 'id', payload: { text: 'ab\ufffdc', ['k\ufffd']: ['\ufffd'], ok: '😀' } });
  });

  it('stores a webhook-sized payload (about 25 MB)', async () => {
    const inst = await freshInstall();
    const diff = 'x'.repeat(1000).concat('\u0000').repeat(24_000);
    expect(await insertEvent(pool, ev(inst, 'big', { payload: { diff, files: [{ name: 'a' }] } }))).toBe(true);
    // Every NUL removed, nothing else lost (how fast is the benchmarks' business).
    const { rows } = await pool.query("SELECT length(payload->>'diff') AS n FROM events WHERE install_id = $1", [
      inst.install_id,
    ]);
    expect(rows[0].n).toBe(24_000_000);
  });

  it('stores a batch in order, once per id, cleaning NUL and lone surrogates; null and absent values kept', async () => {
    const inst = await freshInstall();
    const batch = [
      ev(inst, 'b1', { payload: { text: 'a\u0000b\ud800c', ['k\u0000']: 1 }, occurred_at: '2024-01-02T03:04:05.123Z' }),
      ev(inst, 'b2\u0000', { payload: undefined as unknown as object, occurred_at: null }),
      ev(inst, 'b1', { payload: { text: 'repeat' } }),
      ev(inst, 'b3', { payload: { n: -0, list: [null, true, 1.5], at: new Date('2024-05-06T07:08:09.000Z') } }),
    ];
    expect(await insertEvents(pool, batch)).toEqual([true, true, false, true]);
    // A replay of the batch stores nothing.
    expect(await insertEvents(pool, batch)).toEqual([false, false, false, false]);
    const { rows } = await pool.query(
      'SELECT id, payload, occurred_at FROM events WHERE install_id = $1 ORDER BY received_at, seq',
      [inst.install_id],
    );
    expect(rows.map((r: { id: string }) => r.id)).toEqual(['b1', 'b2', 'b3']);
    expect(rows[0]).toMatchObject({
      payload: { text: 'ab\ufffdc', k: 1 },
      occurred_at: new Date('2024-01-02T03:04:05.123Z'),
    });
    expect(rows[1]).toMatchObject({ payload: null, occurred_at: null });
    expect(rows[2].payload).toEqual({ n: 0, list: [null, true, 1.5], at: '2024-05-06T07:08:09.000Z' });
  });

  it('stores a batch too large for one jsonb document, split between its events, in order', async () => {
    const inst = await freshInstall();
    // Two payloads of 20 M characters: 40 M in all, past JSON_ROWS_MAX_CHARS (32 M), so the
    // rows go in two statements (jsonb itself would take up to 256 MB; the margin is for CJK).
    const big = (c: string) => ({ diff: c.repeat(20_000_000) });
    const batch = [ev(inst, 'x1', { payload: big('a') }), ev(inst, 'x2', { payload: big('b') }), ev(inst, 'x3')];
    expect(await insertEvents(pool, batch)).toEqual([true, true, true]);
    const { rows } = await pool.query(
      `SELECT id, length(payload->>'diff') AS n FROM events WHERE install_id = $1 ORDER BY received_at, seq`,
      [inst.install_id],
    );
    expect(rows).toEqual([
      { id: 'x1', n: 20_000_000 },
      { id: 'x2', n: 20_000_000 },
      { id: 'x3', n: null },
    ]);
  }, 60_000);

  it('lists newest first with ISO timestamps and the contract fields (INTERFACE §3), nothing else', async () => {
    const inst = await freshInstall();
    await insertEvent(pool, ev(inst, 'e1', { occurred_at: '2024-05-01T10:00:00Z' }));
    await insertEvent(pool, ev(inst, 'e2', { kind: 'reaction_added' }));
    const { events, next_cursor } = await listEvents(pool, inst.tenant_id, inst.install_id);
    expect(next_cursor).toBeNull();
    expect(events.map((e) => e.id)).toEqual(['e2', 'e1']);
    expect(events[1]).toEqual({
      id: 'e1',
      kind: 'message',
      connector_id: 'chatapp',
      install_id: inst.install_id,
      occurred_at: '2024-05-01T10:00:00.000Z',
      received_at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/),
      payload: { text: 'e1' },
    });
    expect(events[0]!.occurred_at).toBeNull();
    const kinds = await listEvents(pool, inst.tenant_id, inst.install_id, { kind: 'reaction_added' });
    expect(kinds.events.map((e) => e.id)).toEqual(['e2']);
  });

  it('shows nothing to another tenant or for a malformed id', async () => {
    const inst = await freshInstall();
    const other = await freshInstall();
    await insertEvent(pool, ev(inst, 'e1'));
    expect((await listEvents(pool, other.tenant_id, inst.install_id)).events).toEqual([]);
    expect((await listEvents(pool, inst.tenant_id, 'nope')).events).toEqual([]);
  });

  it('paginates without loss or repeat while new events arrive between pages', async () => {
    const inst = await freshInstall();
    const original = Array.from({ length: 23 }, (_, i) => `old-${i}`);
    for (const id of original) await insertEvent(pool, ev(inst, id));
    let n = 0;
    const seen = await listAll(inst, 5, async () => {
      await insertEvent(pool, ev(inst, `new-${n++}`));
      await insertEvent(pool, ev(inst, `new-${n++}`));
    });
    expect(n).toBeGreaterThan(0);
    expect(seen).toEqual([...original].reverse());
  });

  it('orders ties in received_at by seq, across page boundaries', async () => {
    const inst = await freshInstall();
    await pool.query(
      `INSERT INTO events (install_id, id, tenant_id, connector_id, kind, received_at, payload)
       SELECT $1, 'tie-' || g, $2, 'chatapp', 'message', '2024-01-01T00:00:00.123456Z', '{}'
       FROM generate_series(0, 6) g ORDER BY g`,
      [inst.install_id, inst.tenant_id],
    );
    expect(await listAll(inst, 2)).toEqual(['tie-6', 'tie-5', 'tie-4', 'tie-3', 'tie-2', 'tie-1', 'tie-0']);
  });

  it('keeps microseconds in the cursor (events 1 µs apart are not skipped)', async () => {
    const inst = await freshInstall();
    await pool.query(
      `INSERT INTO events (install_id, id, tenant_id, connector_id, kind, received_at, payload)
       SELECT $1, 'us-' || g, $2, 'chatapp', 'message', '2024-01-01T00:00:00.1234Z'::timestamptz + g * interval '1 microsecond', '{}'
       FROM generate_series(0, 4) g ORDER BY g DESC`,
      [inst.install_id, inst.tenant_id],
    );
    expect(await listAll(inst, 1)).toEqual(['us-4', 'us-3', 'us-2', 'us-1', 'us-0']);
  });

  it('caps the limit at 500 and refuses a bad limit', async () => {
    const inst = await freshInstall();
    await pool.query(
      `INSERT INTO events (install_id, id, tenant_id, connector_id, kind, payload)
       SELECT $1, 'bulk-' || g, $2, 'chatapp', 'message', '{}' FROM generate_series(1, 501) g`,
      [inst.install_id, inst.tenant_id],
    );
    const page = await listEvents(pool, inst.tenant_id, inst.install_id, { limit: 10_000 });
    expect(page.events).toHaveLength(500);
    expect(page.next_cursor).not.toBeNull();
    expect((await listEvents(pool, inst.tenant_id, inst.install_id)).events).toHaveLength(50);
    await expect(listEvents(pool, inst.tenant_id, inst.install_id, { limit: 0 })).rejects.toMatchObject({
      code: 'bad_request',
    });
  });

  it('refuses a malformed cursor with BadRequest', async () => {
    const inst = await freshInstall();
    const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
    const bad = [
      'not a cursor',
      '!!!',
      b64({ a: 1 }),
      b64(['2024-02-30T00:00:00.000000Z', '1']),
      b64(['2024-01-01T00:00:00.000000Z', '-1']),
      b64(['2024-01-01T00:00:00.000000Z', '99999999999999999999']),
      b64(['2024-01-01', '1']),
      Buffer.from('{').toString('base64url'),
    ];
    for (const cursor of bad) {
      await expect(listEvents(pool, inst.tenant_id, inst.install_id, { cursor }), cursor).rejects.toMatchObject({
        code: 'bad_request',
      });
    }
    const good = encodeCursor('2024-01-01T00:00:00.000001Z', '7');
    expect(decodeCursor(good)).toEqual({ receivedAt: '2024-01-01T00:00:00.000001Z', seq: '7' });
  });

  it('tells which (install, id) keys are stored, one answer per key in order, in one statement', async () => {
    const a = await freshInstall();
    const b = await freshInstall();
    await insertEvent(pool, ev(a, 'e1'));
    await insertEvent(pool, ev(a, 'e\u00002'));
    await insertEvent(pool, ev(b, 'e3'));
    const answer = await storedEventKeys(pool, [
      { installId: a.install_id, id: 'e3' },
      { installId: b.install_id, id: 'e3' },
      { installId: a.install_id, id: 'e1' },
      // Stored sanitized, asked raw, as the message's id is.
      { installId: a.install_id, id: 'e\u00002' },
      { installId: 'not-a-uuid', id: 'e1' },
      { installId: b.install_id, id: 'e1' },
      { installId: a.install_id, id: 'e1' },
    ]);
    expect(answer).toEqual([false, true, true, true, false, false, true]);
    expect(await storedEventKeys(pool, [])).toEqual([]);
    expect(await storedEventKeys(pool, [{ installId: 'x', id: 'y' }])).toEqual([false]);
  });
});
