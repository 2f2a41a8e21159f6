/**
 * A deleted chat message is forgotten (INTERFACE §10.5, ARCHITECTURE "Data lifecycle"), in
 * the ingest transaction that stores its `message_deleted`:
 *
 * - `forgetDeleted` (after the batch's events are stored and projected): a tombstone named as
 *   the message's node, and the content gone from every stored copy: the original `message`
 *   event, its `message_changed` versions, and the dead letters carrying any of them. The
 *   graph node lost its text in the projection (project-chat.ts), its search vector with it.
 * - `withoutForgotten` (before the events are stored): an event of a message or of a user
 *   with a tombstone is stored and projected without its content. So a deletion that arrives
 *   before its original (a backfill racing it, a redelivery, a replayed dead letter) still
 *   wins: the text never comes back.
 *
 * The deletion's own event carries no content (normalize-event.ts keeps no `previous_message`).
 */
import { NAME_PROPS } from '../../graph/erase-user.js';
import type { IngestEvent } from '../../runtime/ports.js';
import type { Queryable } from '../../store/db.js';
import {
  chatInstallsOfWorkspace,
  forgottenAmong,
  forgottenKey,
  holdForgetLock,
  recordForgotten,
  scrubChatMessageEvents,
  scrubDeadLetters,
  withoutContent,
  type ChatMessageRef,
  type EnvelopedEvent,
  type ForgottenKey,
} from '../../store/forgotten.js';
import type { Install } from '../../store/installs.js';

/** The kinds whose payload carries a message's content (INTERFACE §4). */
const CONTENT_KINDS = new Set(['message', 'message_changed']);

interface Batch {
  install: Install;
  events: readonly IngestEvent[];
}

const str = (v: unknown): string | null => (typeof v === 'string' && v.length > 0 ? v : null);

/** The message an event names (channel and ts), and its author when the payload says. */
function messageOf(kind: string, payload: unknown): { channelId: string; ts: string; user: string | null } | null {
  if (typeof payload !== 'object' || payload === null) return null;
  const p = payload as Record<string, unknown>;
  const channelId = str(p.channel_id);
  const ts = str(p.ts);
  if (channelId === null || ts === null || !(CONTENT_KINDS.has(kind) || kind === 'message_deleted')) return null;
  return { channelId, ts, user: str(p.user) };
}

/** The tombstone of a message's node and of its author's (INTERFACE §5 external ids). */
function keysOf(install: Install, m: { channelId: string; ts: string; user: string | null }): ForgottenKey[] {
  const team = install.external_id;
  const keys = [{ tenantId: install.tenant_id, kind: 'chat.message', externalId: `${team}:${m.channelId}:${m.ts}` }];
  if (m.user !== null) keys.push({ tenantId: install.tenant_id, kind: 'chat.user', externalId: `${team}:${m.user}` });
  return keys;
}

/** An erased user's name lookups (`user_info`, INTERFACE §9.5) keep their ids only. */
function userInfoOf(install: Install, payload: unknown): ForgottenKey | null {
  const userId = str((payload as Record<string, unknown> | null)?.user_id);
  return userId === null
    ? null
    : { tenantId: install.tenant_id, kind: 'chat.user', externalId: `${install.external_id}:${userId}` };
}

function without(payload: unknown, keys: readonly string[]): unknown {
  if (typeof payload !== 'object' || payload === null) return payload;
  return Object.fromEntries(Object.entries(payload).filter(([k]) => !keys.includes(k)));
}

/** Each batch's events as they may be stored: content removed where a tombstone says so. One lookup for all. */
export async function withoutForgotten(tx: Queryable, batches: readonly Batch[]): Promise<IngestEvent[][]> {
  const asked = batches.map(({ install, events }) =>
    events.map((e) => {
      const named = e.kind === 'user_info' ? userInfoOf(install, e.payload) : null;
      if (named !== null) return [named];
      const m = CONTENT_KINDS.has(e.kind) ? messageOf(e.kind, e.payload) : null;
      return m === null ? [] : keysOf(install, m);
    }),
  );
  const all = asked.flat(2);
  if (all.length === 0) return batches.map((b) => [...b.events]);
  const found = await forgottenAmong(tx, all);
  return batches.map(({ events }, b) =>
    events.map((e, i) => {
      if (!asked[b]![i]!.some((k) => found.has(forgottenKey(k)))) return e;
      const { payloadJson: _asReceived, ...rest } = e;
      return { ...rest, payload: e.kind === 'user_info' ? without(e.payload, NAME_PROPS) : withoutContent(e.payload) };
    }),
  );
}

/** The deletions among the batches' newly stored events, forgotten everywhere. Returns the copies changed. */
export async function forgetDeleted(tx: Queryable, batches: readonly Batch[]): Promise<number> {
  const deleted: Array<{ install: Install; ref: ChatMessageRef }> = [];
  for (const { install, events } of batches) {
    for (const e of events) {
      const m = e.kind === 'message_deleted' ? messageOf(e.kind, e.payload) : null;
      if (m === null) continue;
      const ref = { tenantId: install.tenant_id, team: install.external_id, channelId: m.channelId, ts: m.ts };
      deleted.push({ install, ref });
    }
  }
  if (deleted.length === 0) return 0;
  // Before the scrub below looks for dead letters: one being recorded meanwhile (it holds the
  // lock exclusively while it reads the tombstones) is then either found here or finds ours.
  await holdForgetLock(
    tx,
    deleted.map((d) => d.ref.tenantId),
    'shared',
  );
  await recordForgotten(
    tx,
    deleted.map(({ install, ref }) => keysOf(install, { ...ref, user: null })[0]!),
  );
  let changed = await scrubChatMessageEvents(
    tx,
    deleted.map((d) => d.ref),
  );
  const workspaces = new Map<string, { tenantId: string; team: string; gone: Set<string> }>();
  for (const { ref } of deleted) {
    const key = `${ref.tenantId}\u0000${ref.team}`;
    const w = workspaces.get(key) ?? { tenantId: ref.tenantId, team: ref.team, gone: new Set<string>() };
    w.gone.add(`${ref.channelId}:${ref.ts}`);
    workspaces.set(key, w);
  }
  for (const { tenantId, team, gone } of workspaces.values()) {
    const redact = (ev: EnvelopedEvent) => {
      const m = CONTENT_KINDS.has(ev.kind) ? messageOf(ev.kind, ev.payload) : null;
      return m !== null && gone.has(`${m.channelId}:${m.ts}`) ? withoutContent(ev.payload) : null;
    };
    const installs = await chatInstallsOfWorkspace(tx, tenantId, team);
    const needles = [...gone].map((g) => g.slice(g.indexOf(':') + 1));
    changed += await scrubDeadLetters(tx, installs, needles, redact);
  }
  return changed;
}
