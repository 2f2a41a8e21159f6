/**
 * JetStream messages that exhausted their deliveries are kept here, whole, for an
 * operator to inspect or replay; nothing is dropped silently (STYLE "Errors").
 */
import { isUuid, type Queryable } from './db.js';
import { sanitizeText } from './sanitize.js';

export interface DeadLetter {
  stream: string;
  streamSeq: number;
  subject: string;
  msgId?: string | null;
  /** Stored only when it is a uuid: a bogus id must not stop the record being written. */
  installId?: string | null;
  deliveries: number;
  error: string;
  payload: Uint8Array;
}

/** Long upstream bodies in errors are cut; the payload itself is kept whole. */
const MAX_ERROR_CHARS = 4000;

/**
 * Returns the dead letter's id. Once per stream message (migration 070): when a row holds the
 * same stream, sequence, subject, `Nats-Msg-Id` and install already, that row's id is
 * returned and nothing is written.
 */
export async function recordDeadLetter(q: Queryable, dl: DeadLetter): Promise<string> {
  const { rows } = await q.query<{ id: string }>(
    `WITH found AS (
       SELECT id FROM dead_letters
       WHERE stream = $1 AND stream_seq = $2 AND subject = $3 AND msg_id IS NOT DISTINCT FROM $4::text
         AND install_id IS NOT DISTINCT FROM $5::uuid
       LIMIT 1
     ), added AS (
       INSERT INTO dead_letters (stream, stream_seq, subject, msg_id, install_id, deliveries, error, payload)
       SELECT $1, $2::bigint, $3, $4::text, $5::uuid, $6::int, $7, $8::bytea
       WHERE NOT EXISTS (SELECT 1 FROM found)
       RETURNING id
     )
     SELECT id FROM added UNION ALL SELECT id FROM found`,
    [
      sanitizeText(dl.stream),
      dl.streamSeq,
      sanitizeText(dl.subject),
      dl.msgId == null ? null : sanitizeText(dl.msgId),
      isUuid(dl.installId) ? dl.installId : null,
      dl.deliveries,
      sanitizeText(dl.error.slice(0, MAX_ERROR_CHARS)),
      Buffer.from(dl.payload.buffer, dl.payload.byteOffset, dl.payload.byteLength),
    ],
  );
  return rows[0]!.id;
}

export async function countDeadLetters(q: Queryable): Promise<number> {
  const { rows } = await q.query<{ n: string }>('SELECT count(*) AS n FROM dead_letters');
  return Number(rows[0]!.n);
}
