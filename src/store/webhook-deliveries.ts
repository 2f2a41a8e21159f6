/**
 * The delivery side of webhooks (INTERFACE §10.2; migration 032): what the delivery actor
 * reads and writes (on the nodes' own pool), the deliveries log the tenant reads, and its
 * retention.
 */
import type { Queryable } from './db.js';
import type { WebhookRow, WebhookStatus } from './webhooks.js';

export interface Delivery {
  id: string;
  message_id: string;
  attempted_at: string;
  status_code: number | null;
  error: string | null;
  duration_ms: number;
  changes: number;
}

export async function loadWebhookRow(db: Queryable, id: string): Promise<WebhookRow | null> {
  const { rows } = await db.query<WebhookRow>(
    `SELECT webhook_id AS id, tenant_id, url, kinds, description, status, created_at, secret, previous_secret,
            previous_until, cursor, pending_message_id, pending_body, pending_cursor, attempts, next_attempt_at,
            failing_since
       FROM webhooks WHERE webhook_id = $1`,
    [id],
  );
  return rows[0] ?? null;
}

/** Webhooks that deliver (enabled or failing), for the actor host to resume. */
export async function deliveringWebhookIds(db: Queryable): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `SELECT webhook_id AS id FROM webhooks WHERE status <> 'disabled' ORDER BY webhook_id`,
  );
  return rows.map((r) => r.id);
}

/** No matching change up to `cursor`: the webhook moves on without a message. */
export async function advanceWebhookCursor(db: Queryable, id: string, from: string, to: string): Promise<void> {
  await db.query(
    `UPDATE webhooks SET cursor = $3 WHERE webhook_id = $1 AND cursor = $2 AND pending_message_id IS NULL`,
    [id, from, to],
  );
}

/**
 * The next message, stored before its first attempt so that every retry sends it again as it
 * is; false when another message is pending already.
 */
export async function setPendingMessage(
  db: Queryable,
  id: string,
  m: { messageId: string; body: string; cursor: string },
): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE webhooks SET pending_message_id = $2, pending_body = $3, pending_cursor = $4, attempts = 0,
       next_attempt_at = NULL
     WHERE webhook_id = $1 AND pending_message_id IS NULL`,
    [id, m.messageId, m.body, m.cursor],
  );
  return rowCount === 1;
}

/**
 * One attempt in the deliveries log; when it was `delivered` (2xx), in the same statement the
 * cursor moves past the message and the failure streak ends.
 */
export async function recordDelivery(
  db: Queryable,
  d: Omit<Delivery, 'id' | 'attempted_at'> & { webhookId: string; tenantId: string; attemptedAt: Date },
  delivered: boolean,
): Promise<void> {
  await db.query(
    `WITH logged AS (
       INSERT INTO webhook_deliveries (webhook_id, tenant_id, message_id, attempted_at, status_code, error,
         duration_ms, changes)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
     )
     UPDATE webhooks SET cursor = pending_cursor, pending_message_id = NULL, pending_body = NULL,
       pending_cursor = NULL, attempts = 0, next_attempt_at = NULL, failing_since = NULL,
       status = CASE WHEN status = 'failing' THEN 'enabled' ELSE status END
     WHERE webhook_id = $1 AND pending_message_id = $3 AND $9`,
    [d.webhookId, d.tenantId, d.message_id, d.attemptedAt, d.status_code, d.error, d.duration_ms, d.changes, delivered],
  );
}

/** An attempt failed: when the next one is due, and the status the failure streak has reached. */
export async function markFailed(
  db: Queryable,
  id: string,
  f: { attempts: number; nextAttemptAt: Date; failingSince: Date; status: WebhookStatus },
): Promise<void> {
  await db.query(
    `UPDATE webhooks SET attempts = $2, next_attempt_at = $3, failing_since = $4,
       status = CASE WHEN status = 'disabled' THEN status ELSE $5 END
     WHERE webhook_id = $1`,
    [id, f.attempts, f.nextAttemptAt, f.failingSince, f.status],
  );
}

/** One page of the deliveries log, newest first; `cursor` is a page's `next_cursor`. */
export async function listDeliveries(
  db: Queryable,
  tenantId: string,
  webhookId: string,
  limit: number,
  cursor: string | null,
): Promise<{ deliveries: Delivery[]; next_cursor: string | null }> {
  const { rows } = await db.query<Delivery & { seq: string; attempted_at: Date }>(
    `SELECT seq, delivery_id AS id, message_id, attempted_at, status_code, error, duration_ms, changes
       FROM webhook_deliveries
      WHERE tenant_id = $1 AND webhook_id = $2 AND ($3::bigint IS NULL OR seq < $3)
      ORDER BY seq DESC LIMIT $4`,
    [tenantId, webhookId, cursor, limit + 1],
  );
  const page = rows.slice(0, limit);
  return {
    deliveries: page.map(({ seq: _seq, ...d }) => ({ ...d, attempted_at: d.attempted_at.toISOString() })),
    next_cursor: rows.length > limit ? page.at(-1)!.seq : null,
  };
}

/** Deletes up to `limit` delivery log rows attempted before `olderThan`; answers how many. */
export async function pruneDeliveries(db: Queryable, olderThan: Date, limit: number): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM webhook_deliveries WHERE seq IN
       (SELECT seq FROM webhook_deliveries WHERE attempted_at < $1 LIMIT $2)`,
    [olderThan, limit],
  );
  return rowCount ?? 0;
}
