/**
 * A shard manager alone in its own OS process, for the kill -9 takeover test
 * (test/integration/leases.test.ts). Settings come from the environment; it prints one
 * JSON line per event on stdout: `ready` (with its pid), `acquire`, `release`, `owned`.
 * SIGTERM stops it gracefully; SIGKILL is what the test sends.
 */
import { createLogger } from '../../src/log.js';
import { names } from '../../src/runtime/names.js';
import { connectNats } from '../../src/runtime/nats-connect.js';
import { ShardManager } from '../../src/runtime/shard-manager.js';

function need(name: string): string {
  const v = process.env[name];
  if (!v) throw new Error(`lease-node: ${name} is required`);
  return v;
}

const emit = (event: Record<string, unknown>): void => {
  process.stdout.write(`${JSON.stringify({ ...event, at: Date.now() })}\n`);
};

const nodeId = need('LEASE_NODE_ID');
// Logs go to stderr so stdout stays one JSON event per line.
const log = createLogger({ level: process.env.LEASE_LOG_LEVEL ?? 'warn', node: nodeId }, process.stderr);
const nc = await connectNats({ servers: need('LEASE_NATS_URL'), name: nodeId, log });
const manager = new ShardManager({
  nc,
  names: names(need('LEASE_NAMESPACE')),
  nodeId,
  shards: Number(need('LEASE_SHARDS')),
  leaseTtlMs: Number(need('LEASE_TTL_MS')),
  log,
  listener: {
    acquire: async (shard) => emit({ type: 'acquire', shard }),
    release: async (shard) => emit({ type: 'release', shard }),
  },
});
manager.onChange = (owned) => emit({ type: 'owned', owned });
emit({ type: 'ready', pid: process.pid });
await manager.start();
emit({ type: 'started', owned: manager.owned() });

process.once('SIGTERM', () => {
  void manager
    .stop()
    .then(() => nc.drain())
    .finally(() => process.exit(0));
});
