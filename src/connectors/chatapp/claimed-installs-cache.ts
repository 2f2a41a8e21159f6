/**
 * The team → active install lookup of the chat events intake, cached on this edge so an
 * event costs no Postgres round trip before its publish (issue 12, item 2). The same
 * invariants as the code-host fan-out cache (codehost/bound-installs-cache.ts):
 * - A just-installed workspace gets its next event: "no install" is never cached, and
 *   every committed change to the installs table is announced (Postgres NOTIFY from a
 *   trigger, migration 007) and makes the cache forget everything.
 * - A lookup that raced a change serves its own request but is not kept (generation check),
 *   nor shared with lookups that start after the change.
 * - Nothing is cached while the announcements cannot be heard (listener down or not yet
 *   listening); entries also expire after `ttlMs`, which bounds staleness if the
 *   listener's connection died silently.
 * - An install uninstalled elsewhere may be published to until the announcement arrives
 *   (milliseconds); the install actor drops events of an install that is not active.
 * - At most `maxEntries` teams, oldest dropped first.
 */
import type pg from 'pg';
import type { Logger } from '../../log.js';
import type { Install } from '../../store/installs.js';
import { listenNotify } from '../../store/listen-notify.js';

export type FindClaimedInstall = (teamId: string) => Promise<Install | null>;

export interface ClaimedInstallsCacheOptions {
  find: FindClaimedInstall;
  ttlMs?: number;
  maxEntries?: number;
  now?: () => number;
}

const DEFAULT_TTL_MS = 5_000;
const DEFAULT_MAX_ENTRIES = 10_000;
/** migration 007's channel; its payload is the connector id of the changed install. */
const INSTALLS_CHANGED_CHANNEL = 'installs_changed';

export class ClaimedInstallsCache {
  private readonly entries = new Map<string, { install: Install; expiresAt: number }>();
  private readonly inFlight = new Map<string, Promise<Install | null>>();
  private generation = 0;
  private live = false;
  private readonly find: FindClaimedInstall;
  private readonly ttlMs: number;
  private readonly maxEntries: number;
  private readonly now: () => number;

  constructor(o: ClaimedInstallsCacheOptions) {
    this.find = o.find;
    this.ttlMs = o.ttlMs ?? DEFAULT_TTL_MS;
    this.maxEntries = o.maxEntries ?? DEFAULT_MAX_ENTRIES;
    this.now = o.now ?? Date.now;
  }

  async lookup(teamId: string): Promise<Install | null> {
    const startedAt = this.now();
    const hit = this.entries.get(teamId);
    if (hit && hit.expiresAt > startedAt) return hit.install;
    const generation = this.generation;
    // One query per team at a time: a busy workspace's burst after an announcement (or at
    // start) would otherwise send one per request. A query in flight was sent after the
    // last announcement (`invalidate` forgets it), so it sees every change announced so far.
    const flying = this.inFlight.get(teamId);
    if (flying) return flying;
    const pending = this.find(teamId);
    this.inFlight.set(teamId, pending);
    let install: Install | null;
    try {
      install = await pending;
    } finally {
      if (this.inFlight.get(teamId) === pending) this.inFlight.delete(teamId);
    }
    if (this.live && generation === this.generation && install !== null) {
      this.entries.delete(teamId); // re-inserted last: the Map's order is its age
      this.entries.set(teamId, { install, expiresAt: startedAt + this.ttlMs });
      if (this.entries.size > this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    }
    return install;
  }

  /** Installs changed (anywhere), or may have: forget every entry, and any lookup in flight. */
  invalidate(): void {
    this.generation++;
    this.entries.clear();
    this.inFlight.clear();
  }

  /** Whether changes are being heard; caching happens only while they are. */
  setLive(live: boolean): void {
    this.invalidate();
    this.live = live;
  }

  /** Whether the announcements are being heard (entries are kept only then). */
  get listening(): boolean {
    return this.live;
  }

  get size(): number {
    return this.entries.size;
  }
}

/** Keeps the cache hearing chat install changes until `stop()`. */
export function hearChatInstallChanges(
  pool: pg.Pool,
  log: Logger,
  cache: ClaimedInstallsCache,
): { stop(): Promise<void> } {
  return listenNotify(pool, INSTALLS_CHANGED_CHANNEL, log, {
    notified: (connectorId) => {
      if (connectorId === 'chatapp') cache.invalidate();
    },
    live: (listening) => cache.setLive(listening),
  });
}
