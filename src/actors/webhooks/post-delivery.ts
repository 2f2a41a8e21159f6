/**
 * One delivery attempt to a tenant's endpoint (INTERFACE §10.2): a `POST` of the message,
 * signed per the Standard Webhooks specification (`webhook-id`, `webhook-timestamp`,
 * `webhook-signature` = `v1,<base64 HMAC-SHA256 of id.timestamp.body>` per live secret,
 * space-separated), to the address the URL check resolved (webhook-url.ts) and no other:
 * the connection's own lookup answers that address, so a DNS answer that changed since the
 * check (rebinding) is never used, while TLS still verifies the certificate for the host.
 * No redirect is followed, the attempt gives up after 10 s, and at most 64 KiB of the answer
 * is read. Outcomes are values; nothing here throws.
 */
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { Webhook } from 'standardwebhooks';
import type { ResolvedAddress } from '../../webhook-url.js';

const DELIVERY_TIMEOUT_MS = 10_000;
const MAX_ANSWER_BYTES = 64 * 1024;

export interface DeliveryMessage {
  messageId: string;
  body: string;
  /** The secrets that sign it (`whsec_…`): the current one, and the previous one during its overlap. */
  secrets: readonly string[];
}

export interface AttemptOutcome {
  ok: boolean;
  statusCode: number | null;
  error: string | null;
  durationMs: number;
}

/** The Standard Webhooks headers of `m` at `at`. */
function signedHeaders(m: DeliveryMessage, at: Date): Record<string, string> {
  const signature = m.secrets.map((s) => new Webhook(s).sign(m.messageId, at, m.body)).join(' ');
  return {
    'content-type': 'application/json',
    'webhook-id': m.messageId,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': signature,
  };
}

/** A lookup that answers `address` whatever it is asked (the connection goes where the check said). */
function pinned(address: ResolvedAddress): LookupFunction {
  return (_host, options, callback) => {
    if ((options as { all?: boolean }).all) {
      (callback as unknown as (e: null, a: Array<{ address: string; family: number }>) => void)(null, [address]);
    } else callback(null, address.address, address.family);
  };
}

export function postDelivery(
  url: URL,
  address: ResolvedAddress,
  m: DeliveryMessage,
  now: () => Date = () => new Date(),
  signal?: AbortSignal,
): Promise<AttemptOutcome> {
  const started = performance.now();
  const took = () => Math.round(performance.now() - started);
  const client = url.protocol === 'https:' ? https : http;
  const timeout = AbortSignal.timeout(DELIVERY_TIMEOUT_MS);
  return new Promise<AttemptOutcome>((resolve) => {
    let settled = false;
    const done = (o: Omit<AttemptOutcome, 'durationMs'>) => {
      if (settled) return;
      settled = true;
      resolve({ ...o, durationMs: took() });
    };
    const req = client.request(
      url,
      {
        method: 'POST',
        headers: { ...signedHeaders(m, now()), 'user-agent': 'connector-service-webhooks' },
        lookup: pinned(address),
        signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
        // One connection per attempt: a pooled socket could be one opened to an earlier address.
        agent: false,
      },
      (res) => {
        const status = res.statusCode ?? 0;
        let read = 0;
        res.on('data', (chunk: Buffer) => {
          read += chunk.length;
          if (read >= MAX_ANSWER_BYTES) res.destroy();
        });
        const finish = () =>
          done(
            status >= 200 && status < 300
              ? { ok: true, statusCode: status, error: null }
              : { ok: false, statusCode: status, error: `the endpoint answered ${status}` },
          );
        res.on('end', finish);
        res.on('close', finish);
        res.on('error', finish);
      },
    );
    req.on('error', (err: Error & { code?: string }) => {
      const timedOut = timeout.aborted;
      done({
        ok: false,
        statusCode: null,
        error: timedOut ? `no answer within ${DELIVERY_TIMEOUT_MS / 1000} s` : `${err.code ?? 'error'}: ${err.message}`,
      });
    });
    req.end(m.body);
  });
}
