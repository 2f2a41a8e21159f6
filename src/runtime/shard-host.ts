/**
 * The work a node runs for each shard it owns (ARCHITECTURE.md: "Only the owner subscribes
 * to `<ns>.actor.<shard>.>` and runs that shard's ingest consumer"). The shard manager
 * calls `acquire` after winning a lease and `release` before giving one up (or at once
 * when it is lost), so this is the only place shard work starts and stops.
 */
import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from '../log.js';
import type { Names } from './names.js';
import { serveShard, type ActorRequest } from './serve-shard.js';
import type { ReplayGuard } from './replay-guard.js';
import type { Seal } from './seal.js';
import type { ShardListener, ShardWork } from './shard-ports.js';

export interface ShardHostOptions {
  nc: NatsConnection;
  names: Names;
  log: Logger;
  dispatch(req: ActorRequest): Promise<unknown>;
  /** The shard's ingest consumer (ingest/node-ingest.ts), started once its actor requests are served; null: none. */
  ingest: ShardWork | null;
  /** Passivate every activation of the shard (after its subscription and consumer stopped). */
  passivate(shard: number): Promise<void>;
  /** After the shard's work started: resume actors that run without requests (backfill walkers). */
  onAcquired?(shard: number): Promise<void>;
  /** INTERFACE §9.4: seal checked on every actor request, refusals counted. */
  seal?: Seal | null;
  onRefused?(): void;
  /** Issue 32 item 3: a request delivered a second time is refused (shared by every node through KV). */
  replay?: ReplayGuard | null;
}

export class ShardHost implements ShardListener {
  private readonly servers = new Map<number, { stop(): Promise<void> }>();

  constructor(private readonly o: ShardHostOptions) {}

  async acquire(shard: number): Promise<void> {
    if (this.servers.has(shard)) return;
    const log = this.o.log.child({ shard });
    const server = serveShard({
      nc: this.o.nc,
      names: this.o.names,
      shard,
      log,
      handler: this.o.dispatch,
      seal: this.o.seal ?? null,
      onRefused: () => this.o.onRefused?.(),
      replay: this.o.replay ?? null,
    });
    this.servers.set(shard, server);
    try {
      await this.o.ingest?.start(shard, log);
    } catch (err) {
      this.servers.delete(shard);
      await server.stop();
      throw err;
    }
    // A failed resume must not cost the shard: it is logged and retried on the next move.
    await this.o.onAcquired?.(shard).catch((err: unknown) => log.error({ err }, 'resuming actors of the shard failed'));
  }

  async release(shard: number): Promise<void> {
    const server = this.servers.get(shard);
    if (!server) return;
    this.servers.delete(shard);
    // Stop taking new work first, let in-flight handlers finish, then drop activations.
    await Promise.allSettled([server.stop(), this.o.ingest?.stop(shard)]);
    await this.o.passivate(shard);
  }
}
