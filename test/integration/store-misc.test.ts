import type { Pool } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deleteBlob, getBlob, pruneBlobs, putBlob } from '../../src/store/blobs.js';
import { createPool, withTx } from '../../src/store/db.js';
import { countDeadLetters, recordDeadLetter } from '../../src/store/dead-letters.js';
import { recordEmitted, wasEmittedBy } from '../../src/store/emitted.js';
import { createInstall } from '../../src/store/installs.js';
import { pgBlobPort } from '../../src/store/runtime-ports.js';
import { createTenant } from '../../src/store/tenants.js';
import { TEST_MASTER_KEY, testDatabaseUrl } from '../support/env.js';

let pool: Pool;
beforeAll(() => {
  pool = createPool(testDatabaseUrl(), { max: 3, statementTimeoutMs: 5000 });
});
afterAll(async () => {
  await pool.end();
});

describe('createPool', () => {
  it('sets the statement timeout and application name on every session', async () => {
    const { rows } = await pool.query(
      "SELECT current_setting('statement_timeout') AS t, current_setting('application_name') AS a",
    );
    expect(rows[0]).toEqual({ t: '5s', a: 'connector-service' });
  });
});

describe('withTx', () => {
  it('commits on success and rolls back on a throw', async () => {
    const { tenant_id } = await createTenant(pool, TEST_MASTER_KEY, 'Tx');
    await withTx(pool, (c) => c.query("UPDATE tenants SET name = 'committed' WHERE tenant_id = $1", [tenant_id]));
    const boom = new Error('boom');
    await expect(
      withTx(pool, async (c) => {
        await c.query("UPDATE tenants SET name = 'rolled back' WHERE tenant_id = $1", [tenant_id]);
        throw boom;
      }),
    ).rejects.toBe(boom);
    const { rows } = await pool.query('SELECT name FROM tenants WHERE tenant_id = $1', [tenant_id]);
    expect(rows[0].name).toBe('committed');
    expect(pool.totalCount - pool.idleCount).toBe(0);
  });

  it('re-runs the transaction after a real serialization failure', async () => {
    const { tenant_id } = await createTenant(pool, TEST_MASTER_KEY, 'Ser');
    let attempts = 0;
    const result = await withTx(
      pool,
      async (c) => {
        attempts++;
        await c.query('SELECT name FROM tenants WHERE tenant_id = $1', [tenant_id]);
        if (attempts === 1) {
          // Another transaction changes the row after our snapshot was taken.
          await pool.query("UPDATE tenants SET name = 'other' WHERE tenant_id = $1", [tenant_id]);
        }
        await c.query("UPDATE tenants SET name = 'mine' WHERE tenant_id = $1", [tenant_id]);
        return attempts;
      },
      { isolation: 'repeatable read' },
    );
    expect(result).toBe(2);
    const { rows } = await pool.query('SELECT name FROM tenants WHERE tenant_id = $1', [tenant_id]);
    expect(rows[0].name).toBe('mine');
  });

  it('gives up after maxAttempts and throws the pg error', async () => {
    let attempts = 0;
    const err = Object.assign(new Error('could not serialize'), { code: '40001' });
    await expect(
      withTx(
        pool,
        async () => {
          attempts++;
          throw err;
        },
        { maxAttempts: 3 },
      ),
    ).rejects.toBe(err);
    expect(attempts).toBe(3);
  });
});

describe('emitted events', () => {
  it('records once and answers the self-emit lookup', async () => {
    const { tenant_id } = await createTenant(pool, TEST_MASTER_KEY, 'E');
    const inst = await createInstall(pool, {
      tenantId: tenant_id,
      connectorId: 'codehost',
      externalId: `${Math.random()}`,
    });
    const rec = {
      installId: inst.install_id,
      tenantId: tenant_id,
      kind: 'codehost.issue_comment',
      repoFullName: 'o/r',
      issueOrPrNumber: 7,
      providerId: '123',
    };
    expect(await recordEmitted(pool, rec)).toBe(true);
    expect(await recordEmitted(pool, rec)).toBe(false);
    expect(await wasEmittedBy(pool, inst.install_id, '123')).toBe(true);
    expect(await wasEmittedBy(pool, inst.install_id, '124')).toBe(false);
    expect(await wasEmittedBy(pool, 'nope', '123')).toBe(false);
  });
});

describe('dead letters', () => {
  it('records whole messages, bogus install ids included', async () => {
    const before = await countDeadLetters(pool);
    const id = await recordDeadLetter(pool, {
      stream: 'S',
      streamSeq: 5,
      subject: 'svc.ingest.1.chatapp.x',
      msgId: 'x:1',
      installId: 'not-a-uuid',
      deliveries: 5,
      error: 'failed\u0000',
      payload: new Uint8Array([1, 2, 3]),
    });
    expect(await countDeadLetters(pool)).toBe(before + 1);
    const { rows } = await pool.query('SELECT install_id, error, payload FROM dead_letters WHERE id = $1', [id]);
    expect(rows[0]).toEqual({ install_id: null, error: 'failed', payload: Buffer.from([1, 2, 3]) });
  });
});

describe('ingest blobs', () => {
  it('puts, gets and deletes; unknown or malformed refs read as null', async () => {
    // Webhook-sized (INTERFACE §2: up to 25 MiB). Compared with Buffer.equals: a deep
    // toEqual over millions of bytes takes seconds.
    const data = Buffer.alloc(25 * 1024 * 1024, 7);
    data[data.length - 1] = 1;
    const ref = await putBlob(pool, data);
    expect((await getBlob(pool, ref))?.equals(data)).toBe(true);
    expect(await deleteBlob(pool, ref)).toBe(true);
    expect(await deleteBlob(pool, ref)).toBe(false);
    expect(await getBlob(pool, ref)).toBeNull();
    expect(await getBlob(pool, 'junk')).toBeNull();
  });

  it('gives every put its own ref through the runtime port, and prunes old ones', async () => {
    const port = pgBlobPort(pool);
    const same = new Uint8Array([9, 9]);
    const [a, b] = [await port.put(same), await port.put(same)];
    expect(a).not.toBe(b);
    await port.delete(a);
    expect(await port.get(b)).toEqual(Buffer.from(same));
    await pool.query("UPDATE ingest_blobs SET created_at = now() - interval '2 days' WHERE ref = $1", [b]);
    expect(await pruneBlobs(pool, 24 * 3600_000)).toBeGreaterThanOrEqual(1);
    expect(await port.get(b)).toBeNull();
  });
});
