/**
 * The NATS fence (INTERFACE §9.4): every ingest message and every actor request this
 * service puts on NATS carries an HMAC-SHA256 of its body (header `Svc-Seal`) under a key
 * derived from SERVICE_MASTER_KEY. A client that can publish on the deployment's subjects
 * but does not hold the master key cannot inject events (skipping the webhook signatures)
 * nor ask an actor to emit or uninstall: the consumer and the actor host refuse unsealed
 * or mis-sealed messages and count them.
 *
 * Seals made under SERVICE_MASTER_KEY_PREVIOUS keys are accepted too, so nodes on the old
 * and the new key serve side by side during a rotation (INTERFACE §9.2).
 */
import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';
import type { MsgHdrs } from '@nats-io/transport-node';
import { headers as natsHeaders } from '@nats-io/transport-node';

export const SEAL_HEADER = 'Svc-Seal';
const INFO = 'connector-service/nats-seal/v1';

export interface Seal {
  /** The seal of `body` under the current key (base64url). */
  sign(body: Uint8Array): string;
  /** Whether `seal` is the seal of `body` under any configured key. */
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
  return {
    sign: (body) => mac(derived[0]!, body).toString('base64url'),
    verify(body, seal) {
      if (typeof seal !== 'string' || seal.length !== 43) return false;
      const given = Buffer.from(seal, 'base64url');
      if (given.length !== 32) return false;
      return derived.some((k) => timingSafeEqual(mac(k, body), given));
    },
    headers(body, into) {
      const h = into ?? natsHeaders();
      h.set(SEAL_HEADER, mac(derived[0]!, body).toString('base64url'));
      return h;
    },
  };
}
