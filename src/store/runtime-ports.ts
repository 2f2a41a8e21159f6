/**
 * Postgres implementations of the ports the runtime declares (runtime/ports.ts) for the
 * ingest path (ingest/), so that code knows NATS and nothing of SQL (ARCHITECTURE "Layout").
 */
import type { Pool } from 'pg';
import type { BlobPort, StoredEventsPort } from '../runtime/ports.js';
import { deleteBlob, getBlob, putBlob } from './blobs.js';
import { storedEventKeys } from './events.js';

/** Every put is a new row with a new uuid ref, never content-addressed (BlobPort's contract). */
export function pgBlobPort(pool: Pool): BlobPort {
  return {
    put: (data, tenantId) => putBlob(pool, Buffer.from(data.buffer, data.byteOffset, data.byteLength), tenantId),
    get: (ref) => getBlob(pool, ref),
    delete: async (ref) => {
      await deleteBlob(pool, ref);
    },
  };
}

/** On the cross-tenant pool, as the ingest path that stores the events. */
export function pgStoredEventsPort(pool: Pool): StoredEventsPort {
  return { whichStored: (keys) => storedEventKeys(pool, keys) };
}
