/**
 * The NATS fence (INTERFACE §9.4): every ingest message and every actor request this
 * service puts on NATS carries an HMAC-SHA256 of its body (header `Svc-Seal`) under a key
 * derived from SERVICE_MASTER_KEY. A client that can publish on the deployment's subjects
 * but does not hold the master key cannot inject events (skipping the webhook signatures)
 * nor ask an actor to emit or uninstall: the consumer and the actor host refuse unsealed
 * or mis-sealed messages and count them.
 *
 * During a rolling change of SERVICE_MASTER_KEY (issue 32 item 1) a node holds two keys,
 * current and previous, while its peers hold one of them (K1 before they roll, K2 after the
 * previous key is dropped). So a node seals with every key it holds: the header carries one
 * MAC per key, comma-separated, current first, and a receiver accepts the message when any
 * of them verifies under any key it holds. A node with one key writes one MAC, as before.
 */
import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';
import type { MsgHdrs } from '@nats-io/transport-node';
import { headers as natsHeaders } from '@nats-io/transport-node';

export const SEAL_HEADER = 'Svc-Seal';
const INFO = 'connector-service/nats-seal/v1';
/** A base64url HMAC-SHA256; more MACs than this in one header are not read (a rotation has two). */
const MAC_CHARS = 43;
const MAX_MACS = 4;

export interface Seal {
  /** The seal of `body`: its MAC under each configured key (base64url, comma-separated, current first). */
  sign(body: Uint8Array): string;
  /** Whether one MAC of `seal` is the MAC of `body` under one configured key. */
  verify(body: Uint8Array, seal: string | null | undefined): boolean;
  /** Headers carrying the seal of `body`, added to `into` when given. */
  headers(body: Uint8Array, into?: MsgHdrs): MsgHdrs;
}

/** `keys`: the current master key first, then previous ones. */
export function createSeal(keys: readonly string[]): Seal {
  if (keys.length === 0) throw new Error('a seal needs at least one master key');
  const derived = keys.map((k) =>
    Buffer.from(hkdfSync('sha256', Buffer.from(k, 'utf8'), 'connector-service', INFO, 32)),
  );
  const mac = (key: Buffer, body: Uint8Array) => createHmac('sha256', key).update(body).digest();
  const sign = (body: Uint8Array) => derived.map((k) => mac(k, body).toString('base64url')).join(',');
  return {
    sign,
    verify(body, seal) {
      if (typeof seal !== 'string' || seal.length > MAX_MACS * (MAC_CHARS + 1)) return false;
      const given = seal
        .split(',')
        .filter((m) => m.length === MAC_CHARS)
        .map((m) => Buffer.from(m, 'base64url'))
        .filter((b) => b.length === 32);
      if (given.length === 0) return false;
      // Each configured key's MAC is computed once, and only until one matches.
      return derived.some((k) => {
        const want = mac(k, body);
        return given.some((g) => timingSafeEqual(want, g));
      });
    },
    headers(body, into) {
      const h = into ?? natsHeaders();
      h.set(SEAL_HEADER, sign(body));
      return h;
    },
  };
}
