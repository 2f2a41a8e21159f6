/**
 * Webhooks to tenants (INTERFACE §10.2; migration 032): the tenant's webhook rows, as the
 * routes manage them (every query names the tenant, and runs fenced on the tenant routes),
 * and the secrets, sealed under the master key with the webhook's id bound in.
 */
import { randomBytes } from 'node:crypto';
import type { CredentialCipher } from './credential-cipher.js';
import type { Queryable } from './db.js';

export type WebhookStatus = 'enabled' | 'failing' | 'disabled';

export interface Webhook {
  id: string;
  tenant_id: string;
  url: string;
  kinds: string[];
  description: string | null;
  status: WebhookStatus;
  created_at: string;
}

/** What the delivery actor reads besides the public fields. */
export interface WebhookRow extends Webhook {
  secret: Buffer;
  previous_secret: Buffer | null;
  previous_until: Date | null;
  cursor: string;
  pending_message_id: string | null;
  pending_body: string | null;
  pending_cursor: string | null;
  attempts: number;
  next_attempt_at: Date | null;
  failing_since: Date | null;
}

const PUBLIC = `webhook_id AS id, tenant_id, url, kinds, description, status, created_at`;

/** INTERFACE §10.2: `whsec_` + base64 of 32 random bytes (the Standard Webhooks form). */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/** version (4 bytes) | nonce (12) | tag (16) | ciphertext, bound to the webhook and its tenant. */
export function sealSecret(cipher: CredentialCipher, tenantId: string, webhookId: string, secret: string): Buffer {
  const s = cipher.encrypt(secret, { tenantId, installId: webhookId });
  const v = Buffer.alloc(4);
  v.writeUInt32BE(s.keyVersion);
  return Buffer.concat([v, s.nonce, s.tag, s.ciphertext]);
}

export function openSecret(cipher: CredentialCipher, tenantId: string, webhookId: string, sealed: Buffer): string {
  return cipher
    .decrypt(
      {
        keyVersion: sealed.readUInt32BE(0),
        nonce: sealed.subarray(4, 16),
        tag: sealed.subarray(16, 32),
        ciphertext: sealed.subarray(32),
      },
      { tenantId, installId: webhookId },
    )
    .toString('utf8');
}

function toWebhook<T extends { created_at: Date | string }>(r: T): T & { created_at: string } {
  return { ...r, created_at: r.created_at instanceof Date ? r.created_at.toISOString() : r.created_at };
}

export async function createWebhook(
  db: Queryable,
  w: { id: string; tenantId: string; url: string; kinds: string[]; description: string | null; secret: Buffer },
): Promise<Webhook> {
  // Deliveries start at the head of the feed: what commits after the webhook exists.
  const { rows } = await db.query<Webhook>(
    `INSERT INTO webhooks (webhook_id, tenant_id, url, kinds, description, secret, cursor)
     VALUES ($1, $2, $3, $4, $5, $6, coalesce((SELECT last_seq FROM tenant_feed WHERE tenant_id = $2), 0))
     RETURNING ${PUBLIC}`,
    [w.id, w.tenantId, w.url, w.kinds, w.description, w.secret],
  );
  return toWebhook(rows[0]!);
}

export async function listWebhooks(db: Queryable, tenantId: string): Promise<Webhook[]> {
  const { rows } = await db.query<Webhook>(
    `SELECT ${PUBLIC} FROM webhooks WHERE tenant_id = $1 ORDER BY created_at DESC, webhook_id LIMIT 1000`,
    [tenantId],
  );
  return rows.map(toWebhook);
}

export async function getWebhook(db: Queryable, tenantId: string, id: string): Promise<Webhook | null> {
  const { rows } = await db.query<Webhook>(`SELECT ${PUBLIC} FROM webhooks WHERE tenant_id = $1 AND webhook_id = $2`, [
    tenantId,
    id,
  ]);
  return rows[0] ? toWebhook(rows[0]) : null;
}

export interface WebhookPatch {
  url?: string;
  kinds?: string[];
  description?: string | null;
  status?: 'enabled' | 'disabled';
}

/**
 * Applies the patch. Enabling a failing or disabled webhook clears its failure streak and
 * makes its next attempt due now: it resumes from its last delivered cursor.
 */
export async function updateWebhook(
  db: Queryable,
  tenantId: string,
  id: string,
  p: WebhookPatch,
): Promise<Webhook | null> {
  const { rows } = await db.query<Webhook>(
    `UPDATE webhooks SET
       url = coalesce($3, url),
       kinds = coalesce($4, kinds),
       description = CASE WHEN $5 THEN $6 ELSE description END,
       status = coalesce($7, status),
       attempts = CASE WHEN $7 = 'enabled' THEN 0 ELSE attempts END,
       failing_since = CASE WHEN $7 = 'enabled' THEN NULL ELSE failing_since END,
       next_attempt_at = CASE WHEN $7 = 'enabled' THEN NULL ELSE next_attempt_at END,
       updated_at = now()
     WHERE tenant_id = $1 AND webhook_id = $2
     RETURNING ${PUBLIC}`,
    [tenantId, id, p.url ?? null, p.kinds ?? null, 'description' in p, p.description ?? null, p.status ?? null],
  );
  return rows[0] ? toWebhook(rows[0]) : null;
}

export async function deleteWebhook(db: Queryable, tenantId: string, id: string): Promise<boolean> {
  const { rowCount } = await db.query(`DELETE FROM webhooks WHERE tenant_id = $1 AND webhook_id = $2`, [tenantId, id]);
  return (rowCount ?? 0) > 0;
}

/** INTERFACE §10.2: a new secret; the one it replaces keeps signing for `overlapHours`. */
export async function rotateWebhookSecret(
  db: Queryable,
  tenantId: string,
  id: string,
  secret: Buffer,
  overlapHours: number,
): Promise<Webhook | null> {
  const { rows } = await db.query<Webhook>(
    `UPDATE webhooks SET previous_secret = secret, previous_until = now() + make_interval(hours => $4),
       secret = $3, updated_at = now()
     WHERE tenant_id = $1 AND webhook_id = $2
     RETURNING ${PUBLIC}`,
    [tenantId, id, secret, overlapHours],
  );
  return rows[0] ? toWebhook(rows[0]) : null;
}

/**
 * `keys rotate` (INTERFACE §9.1): re-seals every webhook secret (and a previous one still
 * signing) that was sealed under another master key than the current one; answers how many
 * webhooks it rewrote. A secret rotated by its tenant meanwhile is left as it is (it was
 * sealed under the current key already).
 */
export async function rotateWebhookSecrets(db: Queryable, cipher: CredentialCipher): Promise<number> {
  const version = cipher.currentVersion;
  const stale = (b: Buffer | null) => b !== null && b.readUInt32BE(0) !== version;
  const { rows } = await db.query<{ id: string; tenant_id: string; secret: Buffer; previous_secret: Buffer | null }>(
    'SELECT webhook_id AS id, tenant_id, secret, previous_secret FROM webhooks ORDER BY webhook_id',
  );
  let done = 0;
  for (const r of rows) {
    if (!stale(r.secret) && !stale(r.previous_secret)) continue;
    const reseal = (b: Buffer | null) =>
      b === null ? null : sealSecret(cipher, r.tenant_id, r.id, openSecret(cipher, r.tenant_id, r.id, b));
    const { rowCount } = await db.query(
      'UPDATE webhooks SET secret = $2, previous_secret = $3 WHERE webhook_id = $1 AND secret = $4',
      [r.id, reseal(r.secret), reseal(r.previous_secret), r.secret],
    );
    done += rowCount ?? 0;
  }
  return done;
}
