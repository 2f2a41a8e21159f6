/**
 * `connectors keys rotate` (INTERFACE §9.1): re-encrypts every live credential still under a
 * master key's version with the cipher's current key (the data key, data-keys.ts), so none
 * depends on a master key that is about to be removed (webhooks.ts does the webhook secrets).
 *
 * Idempotent and resumable: only rows under another key version are touched, one row per
 * short transaction, so a second run (or a run after a crash) finds only what is left.
 * Safe while nodes serve: each row is locked (`FOR UPDATE`) and re-checked before it is
 * rewritten, so a node refreshing a token at the same moment either waits for the
 * rotation or has already written the row under the current key (nodes read with
 * SERVICE_MASTER_KEY_PREVIOUS configured, so every version in flight stays readable).
 */
import type pg from 'pg';
import type { CredentialCipher } from './credential-cipher.js';
import { withTx } from './db.js';

const BATCH = 200;

interface Row {
  install_id: string;
  tenant_id: string;
  key_version: number;
  nonce: Buffer;
  ciphertext: Buffer;
  tag: Buffer;
}

/** Returns how many credentials were re-encrypted by this call. */
export async function rotateCredentials(pool: pg.Pool, cipher: CredentialCipher): Promise<number> {
  const version = cipher.currentVersion;
  let done = 0;
  let after = '00000000-0000-0000-0000-000000000000';
  for (;;) {
    const { rows } = await pool.query<{ install_id: string }>(
      `SELECT install_id FROM credentials
       WHERE key_version <> $1 AND revoked_at IS NULL AND install_id > $2
       ORDER BY install_id LIMIT ${BATCH}`,
      [version, after],
    );
    for (const { install_id } of rows) {
      after = install_id;
      const rewrote = await withTx(pool, async (tx) => {
        const { rows: locked } = await tx.query<Row>(
          `SELECT install_id, tenant_id, key_version, nonce, ciphertext, tag FROM credentials
           WHERE install_id = $1 AND key_version <> $2 AND revoked_at IS NULL FOR UPDATE`,
          [install_id, version],
        );
        const row = locked[0];
        if (!row) return false;
        const binding = { tenantId: row.tenant_id, installId: row.install_id };
        const plain = cipher.decrypt(
          { keyVersion: row.key_version, nonce: row.nonce, ciphertext: row.ciphertext, tag: row.tag },
          binding,
        );
        const sealed = cipher.encrypt(plain, binding);
        await tx.query(
          `UPDATE credentials SET key_version = $2, nonce = $3, ciphertext = $4, tag = $5, updated_at = now()
           WHERE install_id = $1`,
          [row.install_id, sealed.keyVersion, sealed.nonce, sealed.ciphertext, sealed.tag],
        );
        return true;
      });
      if (rewrote) done++;
    }
    if (rows.length < BATCH) return done;
  }
}
