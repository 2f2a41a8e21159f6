/**
 * Where the chat bucket actors keep their few numbers between activations: the dedup KV
 * bucket, whose 10-minute TTL outlives any bucket's memory (a bucket refills in at most
 * a minute) and any Retry-After Slack gives. A failed write is logged, not thrown: the
 * activation still holds the state, and losing it costs at most one early write.
 */
import type { KvPort } from '../../runtime/ports.js';
import type { Logger } from '../../log.js';

const enc = new TextEncoder();
const dec = new TextDecoder();

export async function readJson<T>(kv: KvPort, key: string): Promise<Partial<T> | null> {
  const e = await kv.get(key);
  if (e === null) return null;
  try {
    const v: unknown = JSON.parse(dec.decode(e.value));
    return typeof v === 'object' && v !== null ? (v as Partial<T>) : null;
  } catch {
    return null;
  }
}

export async function writeJson(kv: KvPort, key: string, value: unknown, log: Logger): Promise<void> {
  try {
    await kv.put(key, enc.encode(JSON.stringify(value)));
  } catch (err) {
    log.warn({ err, key }, 'bucket state not persisted; kept in memory');
  }
}
