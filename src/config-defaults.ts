/**
 * The defaults of the settings whose value was measured (the figures are in
 * docs/performance-log.md): config.ts applies them, and the code that uses a setting reads it
 * from the config or from here, never the other way round.
 */

/**
 * Unless told otherwise (SERVICE_INGEST_COMMIT_SLOTS). Measured on 2 cores with one
 * transaction per install, 32 busy installs: 1 slot 2 000 committed/s, 2 slots 3 000/s,
 * 4 slots 2 400/s, 8 slots 1 900/s (docs/performance-log.md).
 */
export const DEFAULT_COMMIT_SLOTS = 2;

/** Unless told otherwise (SERVICE_INGEST_MAX_IN_FLIGHT): eight full batches. */
export const DEFAULT_INGEST_MAX_IN_FLIGHT = 4096;
/**
 * Unless told otherwise (SERVICE_INGEST_MAX_IN_FLIGHT_BYTES): 16 MiB of message data. The
 * count reaches its bound first for chat messages (~3 KB); this one bounds a node full of
 * pull requests (~30 KB each: 546 of them) or of pushes near the server's max_payload (16 of
 * 1 MiB). A byte held costs the node about three of RSS (the socket buffers its message
 * shares, the copies on the way in): a drain of 30 KB events over 64 shards peaked at 229 MiB
 * with 16 MiB, 380-387 MiB with 64 MiB and 541-624 MiB with no byte bound (docs/performance-log.md, "Memory").
 */
export const DEFAULT_INGEST_MAX_IN_FLIGHT_BYTES = 16 * 1024 * 1024;

/** Unless told otherwise (SERVICE_HEAP_GROWING_PERCENT): twice the live set (node/heap-growth.ts says why). */
export const DEFAULT_HEAP_GROWING_PERCENT = 100;
