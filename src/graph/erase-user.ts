/**
 * `POST /api/v1/graph/erase` (INTERFACE §10.5): a platform user of an install forgotten, in
 * one transaction: the user's node loses its name props, every node it authored (an
 * `authored_by` edge to it: chat messages, code-host comments, reviews, issues, pull
 * requests and commits) loses its text, and so do the stored events and dead letters that carried that
 * text; a tombstone (migration 040) keeps every later event of the user (a late or repeated
 * delivery, a backfill or catch-up re-reading history, a replayed dead letter) from bringing
 * it back: the drivers' `withoutForgotten`, in the ingest transaction that stores the event
 * (chat: forget-deleted.ts; code host: forget-erased.ts). Each changed node is a change of
 * the feed.
 */
import {
  CONTENT_KEYS,
  chatInstallsOfWorkspace,
  holdForgetLock,
  recordForgotten,
  scrubDeadLetters,
  withoutContent,
  type EnvelopedEvent,
} from '../store/forgotten.js';
import type { Queryable } from '../store/db.js';
import type { Install } from '../store/installs.js';
import { recordChanges } from './change-log.js';
import type { GraphChange } from './change.js';
import { withoutAuthorsText } from './codehost-authored.js';
import { searchText } from './search-text.js';
import { jsonText } from '../store/sanitize.js';

/** A user's name props (INTERFACE §9.5), gone with the user. */
export const NAME_PROPS = ['name', 'real_name', 'display_name', 'email'];
/** The text of what a user authored (a commit's: its message, and the name it was made under). */
const TEXT_PROPS = ['text', 'body', 'files', 'message', 'author_name'];

export interface Erased {
  nodes: number;
  events: number;
  changes: GraphChange[];
}

/** Null when the install has no such user (nothing to erase is still an answer: zeros). */
export async function eraseUser(tx: Queryable, install: Install, userExternalId: string): Promise<Erased> {
  const chat = install.connector_id === 'chatapp';
  const kind = chat ? 'chat.user' : 'codehost.user';
  if (chat && !userExternalId.startsWith(`${install.external_id}:`)) return { nodes: 0, events: 0, changes: [] };
  // First: an ingest transaction of the tenant still open (it read no tombstone) commits before we look.
  await holdForgetLock(tx, [install.tenant_id], 'exclusive');
  await recordForgotten(tx, [{ tenantId: install.tenant_id, kind, externalId: userExternalId }]);

  const { rows: users } = await tx.query<{ node_id: string; props: Record<string, unknown> }>(
    `SELECT node_id, props FROM graph_nodes WHERE tenant_id = $1 AND kind = $2 AND external_id = $3 FOR UPDATE`,
    [install.tenant_id, kind, userExternalId],
  );
  const changes: GraphChange[] = [];
  const rewrite = async (node: { node_id: string; kind: string; props: Record<string, unknown> }, keys: string[]) => {
    if (!keys.some((k) => node.props[k] !== undefined && node.props[k] !== null)) return;
    const props = Object.fromEntries(Object.entries(node.props).map(([k, v]) => [k, keys.includes(k) ? null : v]));
    await tx.query('UPDATE graph_nodes SET props = $2, search_text = $3, updated_at = now() WHERE node_id = $1', [
      node.node_id,
      props,
      searchText(props),
    ]);
    changes.push({ node_id: node.node_id, kind: node.kind, op: 'upserted' });
  };
  const user = users[0];
  if (user) {
    await rewrite({ ...user, kind }, NAME_PROPS);
    const { rows: authored } = await tx.query<{ node_id: string; kind: string; props: Record<string, unknown> }>(
      `SELECT n.node_id, n.kind, n.props FROM graph_edges e JOIN graph_nodes n ON n.node_id = e.from_node
        WHERE e.to_node = $1 AND e.type = 'authored_by' AND e.tenant_id = $2 AND n.tenant_id = $2
        FOR UPDATE OF n`,
      [user.node_id, install.tenant_id],
    );
    for (const node of authored) await rewrite(node, TEXT_PROPS);
  }
  const events = chat
    ? await eraseChatEvents(tx, install, userExternalId.slice(install.external_id.length + 1))
    : await eraseCodehostEvents(tx, install, userExternalId);
  if (changes.length > 0) {
    await recordChanges(tx, [
      { tenantId: install.tenant_id, installId: install.install_id, connectorId: install.connector_id, changes },
    ]);
  }
  return { nodes: changes.length, events, changes };
}

/**
 * The user's messages and edits lose their content, its name lookups their names, in every
 * install of the workspace.
 */
async function eraseChatEvents(tx: Queryable, install: Install, userId: string): Promise<number> {
  const { rowCount } = await tx.query(
    `UPDATE events e
        SET payload = CASE WHEN e.kind = 'user_info' THEN e.payload - $4::text[] ELSE e.payload - $5::text[] END
       FROM installs i
      WHERE i.tenant_id = $1 AND i.connector_id = 'chatapp' AND i.external_id = $2 AND e.install_id = i.install_id
        AND ((e.kind IN ('message', 'message_changed') AND e.payload->>'user' = $3 AND e.payload ?| $5::text[])
          OR (e.kind = 'user_info' AND e.payload->>'user_id' = $3 AND e.payload ?| $4::text[]))`,
    [install.tenant_id, install.external_id, userId, NAME_PROPS, CONTENT_KEYS],
  );
  const redact = (ev: EnvelopedEvent): unknown => {
    const p = ev.payload as Record<string, unknown> | null;
    if (typeof p !== 'object' || p === null) return null;
    if (ev.kind === 'user_info' && p.user_id === userId && NAME_PROPS.some((k) => k in p))
      return Object.fromEntries(Object.entries(p).filter(([k]) => !NAME_PROPS.includes(k)));
    if ((ev.kind === 'message' || ev.kind === 'message_changed') && p.user === userId) {
      const out = withoutContent(p);
      return out === p ? null : out;
    }
    return null;
  };
  const installs = await chatInstallsOfWorkspace(tx, install.tenant_id, install.external_id);
  await scrubDeadLetters(tx, installs, [userId], redact);
  return rowCount ?? 0;
}

/**
 * The stored code-host events of the tenant ($1) that carry text the login ($2) wrote: those
 * that name it at all (migration 099's index, so the erase reads only them), then the rule's
 * own paths. Locked for the rewrite.
 */
export const CODEHOST_EVENTS_OF_LOGIN = `SELECT e.install_id, e.id, e.kind, e.payload
       FROM events e
      WHERE e.tenant_id = $1 AND e.connector_id = 'codehost' AND codehost_payload_logins(e.payload) ? $2
        AND (jsonb_path_exists(e.payload, 'lax $.** ? (@.user.login == $l || @.author.login == $l)',
                               jsonb_build_object('l', $2::text))
             OR e.payload->'pusher'->>'name' = $2
             OR e.payload->'head_commit'->'author'->>'username' = $2
             OR e.payload->'head_commit'->'committer'->>'username' = $2
             OR EXISTS (SELECT 1 FROM jsonb_array_elements(CASE jsonb_typeof(e.payload->'commits')
                                                           WHEN 'array' THEN e.payload->'commits' END) c
                         WHERE c->'author'->>'username' = $2 OR c->'committer'->>'username' = $2))
      FOR UPDATE OF e`;

/**
 * Webhook payloads of every code-host install of the tenant: the text of each object the login
 * wrote, and of the edits of it (codehost-authored.ts, the rule ingest applies after the erase).
 * One rewrite of the changed rows.
 */
async function eraseCodehostEvents(tx: Queryable, install: Install, login: string): Promise<number> {
  const { rows } = await tx.query<{ install_id: string; id: string; kind: string; payload: unknown }>(
    CODEHOST_EVENTS_OF_LOGIN,
    [install.tenant_id, login],
  );
  const changed = rows.flatMap((r) => {
    const payload = withoutAuthorsText(r.kind, r.payload, (l) => l === login);
    return payload === r.payload ? [] : [{ install_id: r.install_id, id: r.id, payload }];
  });
  if (changed.length > 0) {
    await tx.query(
      `UPDATE events e SET payload = c.payload
         FROM jsonb_to_recordset($1::jsonb) AS c(install_id uuid, id text, payload jsonb)
        WHERE e.install_id = c.install_id AND e.id = c.id`,
      [jsonText(changed)],
    );
  }
  const { rows: installs } = await tx.query<{ install_id: string }>(
    `SELECT install_id FROM installs WHERE tenant_id = $1 AND connector_id = 'codehost'`,
    [install.tenant_id],
  );
  await scrubDeadLetters(
    tx,
    installs.map((i) => i.install_id),
    [login],
    (ev) => {
      const payload = withoutAuthorsText(ev.kind, ev.payload, (l) => l === login);
      return payload === ev.payload ? null : payload;
    },
  );
  return changed.length;
}
