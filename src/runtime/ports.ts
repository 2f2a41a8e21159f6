/**
 * The contracts between layers (ARCHITECTURE.md "Layout"): what actors, connectors, the
 * edge and the store see of the runtime, and what the runtime needs from the store. Types
 * only; the implementations are `runtime/router.ts` (ActorAsk), `runtime/kv-port.ts`
 * (KvPort), `ingest/publish.ts` (publishing IngestEvent) and `store/runtime-ports.ts`
 * (BlobPort, DeadLetterPort, StoredEventsPort).
 */
import type { ActorKey } from './names.js';

/**
 * Time as timers see it. The runtime uses `systemClock` (runtime/clock.ts); tests hand
 * a manual clock (test/support/clock.ts) to whatever schedules, so nothing sleeps.
 */
export interface Clock {
  now(): number;
  /** Runs `fn` after `ms`; the handle only ever goes back to `clearTimeout`. */
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/**
 * One actor kind's protocol: for each message `type`, the message's other fields and the
 * answer its handler resolves with (restate's handler map, typed). Each actor module
 * exports its own (`InstallProtocol`, `ChatBucketProtocol`, ...).
 */
export type Protocol = Record<string, { msg: object; answer: unknown }>;

declare const speaks: unique symbol;

/**
 * The key of an actor whose kind speaks `P`; each kind's key function returns one, so an
 * `ask` with it checks the message against `P` and knows the answer's type. A plain
 * `ActorKey` (a list of keys to resume, say) asks with `P` unknown: answer `unknown`.
 */
export type KeyOf<P extends Protocol> = ActorKey & { readonly [speaks]?: P };

/** Request/reply to any actor in the cluster (routes to its shard's owner). */
export interface AskOptions {
  timeoutMs?: number;
  idempotent?: boolean;
  unownedMs?: number;
}

export interface ActorAsk {
  /**
   * The answer's type is the one `P` names for the message's `type`, never the caller's
   * choice. `idempotent: true` only where running the message twice is harmless (reads,
   * `health`, `refresh`, `resume`): a request its node never answered (it died) is resent
   * to the shard's next owner (runtime/router.ts, INTERFACE §8.24). Never on emit or uninstall.
   * `unownedMs`: when no node has held the actor's shard for this long (every attempt met no
   * responders), give up with `ActorUnavailable` (503, `Retry-After`) instead of waiting out
   * `timeoutMs`: a client's request is answered while its own timeout still lets it retry.
   */
  ask<P extends Protocol, T extends keyof P & string>(
    key: KeyOf<P>,
    msg: { type: T } & P[T]['msg'],
    opts?: AskOptions,
  ): Promise<P[T]['answer']>;
}

/** A small key-value store with compare-and-set (backed by a NATS KV bucket). */
export interface KvPort {
  get(key: string): Promise<{ value: Uint8Array; revision: number } | null>;
  /** Create-if-absent; returns the new revision, or null when the key exists. */
  create(key: string, value: Uint8Array): Promise<number | null>;
  /** Compare-and-set on revision; returns the new revision, or null on a mismatch. */
  update(key: string, value: Uint8Array, revision: number): Promise<number | null>;
  put(key: string, value: Uint8Array): Promise<number>;
  delete(key: string): Promise<void>;
}

export interface IngestEvent {
  installId: string;
  tenantId: string;
  connectorId: string;
  /** The upstream event id, unique per install. */
  id: string;
  kind: string;
  occurredAt: string | null;
  payload: unknown;
  /**
   * Optional: `payload` as UTF-8 JSON text, exactly as received (a webhook body). The
   * publisher writes it into the message as it is instead of encoding `payload` again;
   * it must parse to `payload`. It is not part of the stored event.
   */
  payloadJson?: Uint8Array;
}

/**
 * Where payloads too large for one NATS message live. Contract: every `put` stores a new
 * object under a new ref (never content-addressed), so deleting one ref can never remove
 * the payload of another message; `get` returns `null` for an unknown ref.
 */
export interface BlobPort {
  /** `tenantId`: whose payload it is, so the store can fence it per tenant (migration 013). */
  put(data: Uint8Array, tenantId?: string): Promise<string>;
  get(ref: string): Promise<Uint8Array | null>;
  delete(ref: string): Promise<void>;
}

/** Where events that cannot be delivered go, with the last error, for an operator to replay. */
export interface DeadLetterPort {
  record(d: {
    stream: string;
    streamSeq: number;
    subject: string;
    msgId: string | null;
    installId: string | null;
    deliveries: number;
    error: string;
    payload: Uint8Array;
  }): Promise<void>;
}

/** An event as the events table keys it: `(install_id, id)`. */
export interface StoredEventKey {
  installId: string;
  /** The upstream event id (IngestEvent.id). */
  id: string;
}

/**
 * Which ingest events are already stored (committed by the install actor), so a new shard
 * owner does not hold an install's lane for an event whose commit happened and only its
 * ack was lost (ingest/takeover.ts). Only a committed row may answer true.
 */
export interface StoredEventsPort {
  /** One answer per key, in order: true when the events table holds it. */
  whichStored(keys: readonly StoredEventKey[]): Promise<boolean[]>;
}
