/** In-memory blob and dead-letter ports for ingest consumer tests (the Postgres ones are tested with the store). */
import type { BlobPort, DeadLetterPort } from '../../src/runtime/ports.js';

export function memoryBlobs(): BlobPort & { size(): number } {
  const store = new Map<string, Uint8Array>();
  let next = 0;
  return {
    async put(data) {
      const ref = `blob-${++next}`;
      store.set(ref, data.slice());
      return ref;
    },
    async get(ref) {
      return store.get(ref) ?? null;
    },
    async delete(ref) {
      store.delete(ref);
    },
    size: () => store.size,
  };
}

export type DeadLetter = Parameters<DeadLetterPort['record']>[0];

export function memoryDeadLetters(): DeadLetterPort & { records: DeadLetter[] } {
  const records: DeadLetter[] = [];
  return {
    records,
    async record(d) {
      records.push(d);
    },
  };
}
