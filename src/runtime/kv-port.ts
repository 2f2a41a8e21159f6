/** The connectors' view of a NATS KV bucket: get, create-if-absent, CAS update, put, delete. */
import type { KV } from '@nats-io/kv';
import type { KvPort } from './ports.js';
import { isWrongSequence } from './shard-kv.js';
import { token } from './names.js';

/** KV keys allow `[-/_=.a-zA-Z0-9]`; each `.`-separated part of a key goes through `token()`. */
export function kvKey(parts: string[]): string {
  return parts.map(token).join('.');
}

export function kvPort(kv: KV): KvPort {
  return {
    async get(key) {
      const e = await kv.get(key);
      if (e === null || e.operation !== 'PUT') return null;
      return { value: e.value, revision: e.revision };
    },
    async create(key, value) {
      try {
        return await kv.create(key, value);
      } catch (err) {
        if (isWrongSequence(err)) return null;
        throw err;
      }
    },
    async update(key, value, revision) {
      try {
        return await kv.update(key, value, revision);
      } catch (err) {
        if (isWrongSequence(err)) return null;
        throw err;
      }
    },
    put: (key, value) => kv.put(key, value),
    async delete(key) {
      await kv.delete(key);
    },
  };
}
