/**
 * The webhook fan-out lists (active installs per GitHub `installation.id`), cached on this
 * edge so a delivery costs no Postgres round trip, which was the largest part of the
 * edge's work per webhook (bench/ingest).
 *
 * Invariants (ARCHITECTURE.md "Inbound": nothing lost):
 * - A just-created install gets the next delivery: "no install" is never cached; every
 *   committed change to the installs table is announced to every edge (Postgres NOTIFY
 *   from a trigger, migration 007), and the cache forgets everything when it hears one;
 *   the admin install route also forgets locally before it answers 201.
 * - A lookup that raced a change is used for its own request but not kept (generation
 *   check), so an answer older than an announced change is never served from here.
 * - Nothing is cached while the announcements cannot be heard (listener down or not yet
 *   listening): then every lookup queries. Entries also expire after `ttlMs`, which
 *   bounds staleness if the listener's connection died without an error.
 * - An install uninstalled elsewhere may be published to until the announcement arrives
 *   (milliseconds); the install actor drops events of an install that is not active.
 * - At most `maxEntries` installations, oldest dropped first.
 */
import type { BoundInstall, FindBoundInstalls } from './find-bound-installs.js';

export interface BoundInstallsCacheOptions {
  find: FindBoundInstalls;
  ttlMs?: number;
  maxEntries?: number;
  now?: () => number;
}

const DEFAULT_TTL_MS = 5_000;
const DEFAULT_MAX_ENTRIES = 10_000;

export class BoundInstallsCache {
  private readonly entries = new Map<number, { installs: readonly BoundInstall[]; expiresAt: number }>();
  private generation = 0;
  private live = false;
  private readonly find: FindBoundInstalls;
  private readonly ttlMs: number;
  private readonly maxEntries: number;
  private readonly now: () => number;

  constructor(o: BoundInstallsCacheOptions) {
    this.find = o.find;
    this.ttlMs = o.ttlMs ?? DEFAULT_TTL_MS;
    this.maxEntries = o.maxEntries ?? DEFAULT_MAX_ENTRIES;
    this.now = o.now ?? Date.now;
  }

  async lookup(installationId: number): Promise<readonly BoundInstall[]> {
    const startedAt = this.now();
    const hit = this.entries.get(installationId);
    if (hit && hit.expiresAt > startedAt) return hit.installs;
    const generation = this.generation;
    // The lookup's query is sent after this point, so it sees every change announced so far.
    const installs = await this.find(installationId);
    if (this.live && generation === this.generation && installs.length > 0) {
      this.entries.delete(installationId); // re-inserted last: the Map's order is its age
      this.entries.set(installationId, { installs, expiresAt: startedAt + this.ttlMs });
      if (this.entries.size > this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    }
    return installs;
  }

  /** Installs changed (anywhere), or may have: forget every list, and any lookup in flight. */
  invalidate(): void {
    this.generation++;
    this.entries.clear();
  }

  /** Whether changes are being heard; caching happens only while they are. */
  setLive(live: boolean): void {
    this.invalidate();
    this.live = live;
  }

  get size(): number {
    return this.entries.size;
  }
}
