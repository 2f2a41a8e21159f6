/**
 * What the change feed (INTERFACE §10.1) and the webhooks that carry it (§10.2) answer:
 * one change, and a page of them. Shared by the route, the SSE stream's `data:` lines and
 * the webhook deliveries' bodies, so all three say the same thing.
 */
import { z } from 'zod';
import { CONNECTOR_IDS } from '../store/installs.js';
import { NODE_KINDS } from '../graph/kinds.js';

const Change = z
  .object({
    cursor: z
      .string()
      .describe("This change's place in the tenant's feed: pass it as `cursor` (or `Last-Event-ID`) to read after it"),
    node_id: z.uuid(),
    kind: z.enum(NODE_KINDS),
    op: z.enum(['upserted', 'deleted']),
    install_id: z.uuid().describe('The install whose event changed the node'),
    connector_id: z.enum(CONNECTOR_IDS),
    changed_at: z.iso.datetime({ offset: true }).describe('ISO 8601 UTC, when the change was committed'),
  })
  .meta({ id: 'Change' });

export const ChangesPage = z
  .object({
    changes: z.array(Change).describe('Oldest first; a node changed several times may appear once (coalesced)'),
    next_cursor: z.string().describe('Always set: pass it to read what committed after this page'),
  })
  .meta({ id: 'ChangesPage' });
