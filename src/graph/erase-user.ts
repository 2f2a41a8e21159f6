/**
 * `POST /api/v1/graph/erase` (INTERFACE §10.5): a platform user of an install forgotten, in
 * one transaction: the user's node loses its name props, every node it authored (an
 * `authored_by` edge to it: chat messages, code-host comments, reviews, issues and pull
 * requests) loses its text, and so do the stored events that carried that text; a tombstone
 * (migration 040) keeps later chat events of the user from bringing it back (the chat
 * driver's `withoutForgotten`). Each changed node is a change of the feed.
 */
import { CONTENT_KEYS, recordForgotten } from '../store/forgotten.js';
import type { Queryable } from '../store/db.js';
import type { Install } from '../store/installs.js';
import { recordChanges } from './change-log.js';
import type { GraphChange } from './change.js';
import { searchText } from './search-text.js';

/** A user's name props (INTERFACE §9.5), gone with the user. */
export const NAME_PROPS = ['name', 'real_name', 'display_name', 'email'];
/** The text of what a user authored. */
const TEXT_PROPS = ['text', 'body', 'files'];

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
  return rowCount ?? 0;
}

/** Webhook payloads: the body of each comment, review, issue and pull request the login wrote. */
async function eraseCodehostEvents(tx: Queryable, install: Install, login: string): Promise<number> {
  let n = 0;
  for (const field of ['comment', 'review', 'issue', 'pull_request']) {
    const { rowCount } = await tx.query(
      `UPDATE events e SET payload = e.payload #- ARRAY[$3, 'body']
         FROM installs i
        WHERE i.tenant_id = $1 AND i.connector_id = 'codehost' AND e.install_id = i.install_id
          AND e.payload->$3->'user'->>'login' = $2 AND e.payload->$3 ? 'body'`,
      [install.tenant_id, login, field],
    );
    n += rowCount ?? 0;
  }
  return n;
}
