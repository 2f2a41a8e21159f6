/**
 * Where the ingest path records its dead letters (settle.ts: an undecodable message, or the
 * last failed attempt; max-deliveries.ts: a message past the server's max_deliver), on
 * Postgres. A dead letter keeps no text its platform asked to forget (INTERFACE §10.5): the
 * event it carries goes through its driver's `withoutForgotten`, the check the ingest
 * transaction applies, before it is written. So the text of a deleted message, or of an erased
 * person, never lands in `dead_letters` (nor in the payload blob a dead letter points at) when
 * the event fails after the deletion or the erase; one recorded before is scrubbed by them
 * (store/forgotten.ts `scrubDeadLetters`). Everything else stays as it came (ids, kind, the
 * envelope's other fields, the subject), so a replay goes through as it would have.
 *
 * Order: the recording holds the tenant's forget lock exclusively (`holdForgetLock`) from before
 * it reads the tombstones to its commit; an erase holds it exclusively too, and the ingest
 * transaction that writes a deletion's tombstone holds it shared (forget-deleted.ts). So either
 * the tombstone is committed before the dead letter reads it, or the dead letter is committed
 * before the deletion or the erase looks for dead letters to scrub. Dead letters are rare: the
 * wait this makes the tenant's ingest transactions take is one short transaction.
 */
import type { Pool } from 'pg';
import type { DriverRegistry } from '../connectors/driver.js';
import type { Logger } from '../log.js';
import type { DeadLetterPort, IngestEvent } from '../runtime/ports.js';
import { getBlob, replaceBlob } from '../store/blobs.js';
import { withTx, type Queryable } from '../store/db.js';
import { recordDeadLetter } from '../store/dead-letters.js';
import { holdForgetLock } from '../store/forgotten.js';
import { getInstallById } from '../store/installs.js';

export function pgDeadLetterPort(pool: Pool, drivers: DriverRegistry, log: Logger): DeadLetterPort {
  return {
    record: (dl) =>
      withTx(pool, async (tx) => {
        const payload = await withoutForgotten(tx, dl.payload, drivers, log);
        await recordDeadLetter(tx, { ...dl, payload });
      }),
  };
}

/**
 * The message's bytes as they may be kept: an event envelope with the event's payload redacted,
 * or, for a blob ref, the same bytes with the blob rewritten. Read leniently: an envelope the
 * consumer refused (a field of the wrong type) may still carry an event's text. Bytes that hold
 * no event of a known install stay as they are.
 */
async function withoutForgotten(
  tx: Queryable,
  bytes: Uint8Array,
  drivers: DriverRegistry,
  log: Logger,
): Promise<Uint8Array> {
  const env = parse(bytes);
  if (env?.type === 'event') return (await redacted(tx, env, drivers, log)) ?? bytes;
  if (env?.type !== 'blob-ref' || typeof env.ref !== 'string') return bytes;
  const blob = await getBlob(tx, env.ref);
  const inner = blob === null ? null : parse(blob);
  const next = inner?.type === 'event' ? await redacted(tx, inner, drivers, log) : null;
  if (next !== null) await replaceBlob(tx, env.ref, next);
  return bytes;
}

type Envelope = { type?: unknown; ref?: unknown; event?: unknown };

/** The envelope without forgotten text, encoded; null when nothing is to be removed. */
async function redacted(tx: Queryable, env: Envelope, drivers: DriverRegistry, log: Logger): Promise<Buffer | null> {
  const ev = env.event as Partial<IngestEvent> | null | undefined;
  if (typeof ev !== 'object' || ev === null || typeof ev.installId !== 'string' || typeof ev.kind !== 'string')
    return null;
  const install = await getInstallById(tx, ev.installId);
  const driver = install === null ? undefined : drivers.get(install.connector_id);
  if (install === null || !driver?.withoutForgotten) return null;
  await holdForgetLock(tx, [install.tenant_id], 'exclusive');
  const ctx = { install, signal: new AbortController().signal, log };
  const got = await driver.withoutForgotten(tx, [{ ctx, events: [ev as IngestEvent] }]);
  const payload = got[0]?.[0]?.payload;
  if (payload === undefined || payload === ev.payload) return null;
  return Buffer.from(JSON.stringify({ ...env, event: { ...ev, payload } }), 'utf8');
}

function parse(bytes: Uint8Array): Envelope | null {
  try {
    const v = JSON.parse(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8')) as unknown;
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Envelope) : null;
  } catch {
    return null;
  }
}
