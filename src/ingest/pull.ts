/**
 * How a shard owner pulls its slice of the ingest stream: one pull request at a time, each
 * asking for no more events than the node has room for (buffer.ts), so the events a
 * node holds stay bounded however many shards it owns.
 *
 * - Sizes adapt: the first asks for PULL_MIN; a request filled at once (a backlog) makes the
 *   next one twice as large, up to PULL_MAX; one that ended short makes the next one what it
 *   got. An idle shard so reserves one place (its request lasts 10 s, and 63 idle shards
 *   asking for 8 held 504 places, most of what 16 MiB of 30 KB events leaves room for), and a
 *   busy one pulls in large requests.
 * - While the node is full, a shard waits for room, except when an event its lanes wait
 *   for is due back from the server (a nak'd event, or one an earlier owner left): it then
 *   asks for one event, which the server serves from its redeliveries first. Without this,
 *   a node full of events waiting for their redelivery would wait for ever.
 * - A request lives on the consumer's leader: when that nats-server dies, the request dies
 *   with it. Heartbeats every second end the request after two missed (about 2 s, where
 *   the 30 s default stood still for 30 s on a 3-node 2.9.10 cluster) and the next request
 *   goes to the new leader. Requests last 10 s, so an idle shard costs one request per 10 s.
 */
import { backoffCeilingMs, backoffMs as retryWaitMs } from '../backoff.js';
import type { Consumer, ConsumerMessages, JsMsg } from '@nats-io/jetstream';
import type { Logger } from '../log.js';
import type { IngestBuffer, PullReservation } from './buffer.js';

/** What a shard's first request asks for. */
export const PULL_MIN = 8;
const PULL_MAX = 256;
/**
 * A shard that holds events already waits until this much room is free (or its usual
 * request size, if smaller) rather than pull a few at a time: each pull request costs the
 * node a subscription and a timer, and many shards competing for a full node's last places
 * made requests of a few events each.
 */
export const PULL_LEAST = 32;
const EXPIRES_MS = 10_000;
const HEARTBEAT_MS = 1_000;
/** Between failed pulls (backoff.ts). */
const PULL_RETRY = { firstMs: 250, capMs: 5_000 };
/**
 * Between asks for a due redelivery while the node is full (backoff.ts's ceiling, without
 * its jitter): an ask made too early brings one more event past the node's bound, and the
 * wait is for a time the server keeps, not a spread of callers that failed together.
 */
const DUE_ASK = { firstMs: 250, capMs: 8_000 };
/** A failing pull is logged when it starts failing, then at most this often. */
const FAILURE_LOG_EVERY_MS = 30_000;

export interface ShardPullerOptions {
  consumer: Consumer;
  buffer: IngestBuffer;
  log: Logger;
  /** Takes one pulled message into the shard's hands. */
  dispatch(m: JsMsg): void;
  /** Epoch ms of the earliest redelivery the shard's lanes wait for, or null. */
  nextRedelivery(): number | null;
  /** Events the shard holds now. */
  held(): number;
  /**
   * Deliveries went missing before the one of stream sequence `seq` (its delivery sequence
   * jumped): called, and awaited, before that message is dispatched.
   */
  onGap(seq: number): Promise<void>;
}

export class ShardPuller {
  private stopping = false;
  private current: ConsumerMessages | null = null;
  /** Ends the pause under way (see `pause`), if any; `nudgeable` if a nudge may end it too. */
  private wakeUp: (() => void) | null = null;
  private nudgeable = false;
  /** The consumer's delivery sequence of the last message seen (0: none yet). */
  private lastDelivery = 0;
  /** Asking for a due redelivery while full: not again before this, longer while they do not come. */
  private dueNotBefore = 0;
  private dueAsks = 0;

  constructor(private readonly o: ShardPullerOptions) {}

  /** Pull until `stop`; never throws (failures are logged and retried with backoff). */
  async run(): Promise<void> {
    let size = PULL_MIN;
    let failures = 0;
    let lastLogged = 0;
    while (!this.stopping) {
      const ask = await this.room(size);
      if (ask === null) break;
      const { n, reservation } = ask;
      let got = 0;
      let backoffMs: number | null = null;
      try {
        const messages = await this.o.consumer.fetch({
          max_messages: n,
          expires: EXPIRES_MS,
          idle_heartbeat: HEARTBEAT_MS,
        });
        this.current = messages;
        // Not awaited: close() only queues its end in the iterator, which the loop below runs.
        if (this.stopping) void messages.close();
        for await (const m of messages) {
          const d = m.info.deliverySequence;
          if (this.lastDelivery > 0 && d > this.lastDelivery + 1) await this.o.onGap(m.seq);
          this.lastDelivery = Math.max(this.lastDelivery, d);
          got++;
          // Held first, then its reserved place given back: the room seen by waiters never grows meanwhile.
          this.o.dispatch(m);
          if (reservation) this.o.buffer.arrived(reservation);
        }
        if (failures > 0) this.o.log.info({ failures }, 'ingest pull works again');
        failures = 0;
      } catch (err) {
        failures++;
        const now = Date.now();
        if (!this.stopping && (failures === 1 || now - lastLogged >= FAILURE_LOG_EVERY_MS)) {
          lastLogged = now;
          this.o.log.warn({ err, failures }, 'ingest pull failed; retrying');
        }
        backoffMs = retryWaitMs(PULL_RETRY, failures);
      } finally {
        this.current = null;
        if (reservation) this.o.buffer.cancel(reservation);
      }
      // After the places this request did not fill went back: they are not kept through the backoff.
      if (backoffMs !== null && !this.stopping) await this.pause(backoffMs, null, false);
      size = got >= n ? Math.min(PULL_MAX, n * 2) : Math.max(1, got);
    }
  }

  /** Look again at what to wait for (a lane began to wait for a redelivery, the shard emptied); a backoff goes on. */
  nudge(): void {
    if (this.nudgeable) this.wakeUp?.();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.wakeUp?.();
    await this.current?.close();
  }

  /**
   * What to ask for next, once the node has room (or an awaited redelivery is due), with
   * its places reserved already: reserving after an `await` would let another shard take
   * the same room. Null when stopping.
   */
  private async room(size: number): Promise<{ n: number; reservation: PullReservation | null } | null> {
    for (;;) {
      if (this.stopping) return null;
      const free = this.o.buffer.free();
      // A shard with nothing in hand takes any room: it must never wait behind the others for ever.
      const span = this.o.buffer.span();
      const least = this.o.held() === 0 ? 1 : Math.min(size, PULL_LEAST, Math.max(1, Math.floor(span / 8)));
      if (free >= least) {
        const n = Math.min(size, free);
        this.dueAsks = 0;
        return { n, reservation: this.o.buffer.reserve(n) };
      }
      const due = this.o.nextRedelivery();
      const now = Date.now();
      // Our due time is a little ahead of the server's (it counts from the nak's arrival): one
      // asked too early brings a new event instead, so the next ask waits, longer each time.
      const at = due === null ? null : Math.max(due, this.dueNotBefore);
      if (at !== null && at <= now) {
        this.dueNotBefore = now + backoffCeilingMs(DUE_ASK, ++this.dueAsks);
        return { n: 1, reservation: null };
      }
      await this.pause(at === null ? null : at - now, least, true);
    }
  }

  /**
   * Wait `ms` (null: no limit), or until the node has `room` places free (null: not for room),
   * or until `stop` (or a `nudge`, when `nudgeable`).
   * Nothing outlives the pause: a race against one long-lived stop promise would leave a
   * reaction on it per pause, and a full node pauses once per settled event.
   */
  private pause(ms: number | null, room: number | null, nudgeable: boolean): Promise<void> {
    return new Promise<void>((resolve) => {
      let timer: NodeJS.Timeout | null = null;
      let leave: () => void = () => undefined;
      const done = () => {
        if (timer) clearTimeout(timer);
        leave();
        if (this.wakeUp === done) this.wakeUp = null;
        resolve();
      };
      this.wakeUp = done;
      this.nudgeable = nudgeable;
      if (ms !== null) timer = setTimeout(done, ms);
      if (room !== null) leave = this.o.buffer.onRoom(done, room);
    });
  }
}
