/**
 * The change feed over HTTP (INTERFACE §10.1): `GET /api/v1/graph/changes`, a page of the
 * tenant's changes after a cursor (change-read.ts); with `wait`, a long-poll that answers
 * within a second of the next commit; with `Accept: text/event-stream`, an SSE stream
 * (sse-stream.ts). Both wake on the feed's NATS notice (runtime/feed-notices.ts), with a slow
 * re-read as the safety net for a lost notice.
 */
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { BadRequest } from '../../errors.js';
import {
  isFeedCursor,
  MAX_CHANGES_LIMIT,
  readChanges,
  type ChangesPage as Page,
  type ReadOptions,
} from '../../graph/change-read.js';
import { NODE_KINDS } from '../../graph/kinds.js';
import type { Queryable } from '../../store/db.js';
import type { EdgeContext } from '../context.js';
import { ChangesPage } from '../feed-schemas.js';
import { operation } from '../operation.js';
import { ownInstall, validInput } from '../params.js';
import { installIdFilter, limitParam } from '../schemas.js';
import { FeedStreams, SAFETY_POLL_MS, wantsEventStream } from './sse-stream.js';
import { runWithWaitBudget, WaitBudget } from '../../wait-budget.js';

export const ChangesQuery = z
  .object({
    cursor: z
      .string()
      .max(20)
      .refine(isFeedCursor, { message: 'must be a cursor this feed gave, or latest' })
      .optional()
      .describe("A `next_cursor` or a change's `cursor`; `latest`: no changes, the head as `next_cursor`"),
    limit: limitParam(MAX_CHANGES_LIMIT, 100),
    wait: z.int().min(0).max(30).optional().describe('Seconds to hold the request while nothing is newer (long-poll)'),
    kind: z.enum(NODE_KINDS).optional(),
    install_id: installIdFilter('changes'),
  })
  .strict();
type Query = z.output<typeof ChangesQuery>;

const ChangesHeaders = z.object({
  'last-event-id': z
    .string()
    .max(20)
    .optional()
    .describe('SSE: resume after this change (wins over `cursor`, as a reconnecting EventSource sends both)'),
});

const LIST = operation({
  operationId: 'listChanges',
  tag: 'graph',
  summary: "The tenant's graph changes after a cursor, oldest first (a feed, long-poll or SSE)",
  description:
    'No gaps and no reordering across cursors: after any cursor a client sees at least the last change of ' +
    'every node changed since, never an older change of a node after a newer one. `wait=S` holds the request ' +
    'up to S seconds while nothing is newer. `Accept: text/event-stream` answers a Server-Sent Events stream: ' +
    'one `event: change` per change, `id:` its cursor, `data:` its JSON, a comment line at least every 15 s. ' +
    'A cursor older than `SERVICE_CHANGES_RETENTION_DAYS` answers 410 `cursor_expired`.',
  auth: 'bearer',
  scope: 'graph:read',
  querystring: ChangesQuery,
  headers: ChangesHeaders,
  responses: {
    200: {
      description: 'A page of changes (or, for `Accept: text/event-stream`, the stream)',
      schema: ChangesPage,
      also: { 'text/event-stream': z.string().describe('`event: change` / `id:` / `data:` blocks') },
    },
  },
  errors: ['bad_request', 'not_found', { kind: 'Gone', code: 'cursor_expired' }],
});

export const changeRoutes: FastifyPluginAsync<EdgeContext> = async (plugin, ctx) => {
  const app = plugin.withTypeProvider<ZodTypeProvider>();
  const streams = new FeedStreams(ctx);
  // A held request or an open stream would keep the server from closing.
  plugin.addHook('preClose', async () => streams.closeAll());

  app.get('/graph/changes', { schema: LIST, attachValidation: true }, async (req, reply) => {
    const q = validInput<Query>(req, 'querystring');
    const base = await readOptions(ctx, req, q);
    if (wantsEventStream(req)) {
      const resume = req.headers['last-event-id'];
      if (resume !== undefined && !(typeof resume === 'string' && isFeedCursor(resume) && resume !== 'latest'))
        throw new BadRequest('Last-Event-ID is not a change cursor');
      const first = await readChanges(ctx.db, req.tenantId, { ...base, cursor: resume ?? q.cursor, limit: 100 });
      await streams.serve(req, reply, base, first);
      return reply;
    }
    const opts = { ...base, cursor: q.cursor, limit: q.limit };
    let page = await readChanges(ctx.db, req.tenantId, opts);
    if (page.changes.length > 0 || !q.wait) return answer(page);
    const held = streams.hold(req, 'long_poll');
    try {
      const until = Date.now() + q.wait * 1000;
      // A held request writes nothing until it answers: its socket may idle past the server's timeout.
      req.raw.socket?.setTimeout(q.wait * 1000 + 15_000);
      for (let left = q.wait * 1000; left > 0 && !held.signal.aborted; left = until - Date.now()) {
        await ctx.feed.wait(req.tenantId, page.head, Math.min(left, SAFETY_POLL_MS), held.signal);
        if (held.signal.aborted) break;
        // INTERFACE §9.3: each read after a wait for news has its own 2 s (wait-budget.ts).
        const cursor = page.next_cursor;
        page = await runWithWaitBudget(new WaitBudget(), () => readChanges(ctx.db, req.tenantId, { ...opts, cursor }));
        if (page.changes.length > 0) break;
      }
    } finally {
      held.release();
    }
    return answer(page);
  });
};

/** The filters, validated (a foreign install is 404 as everywhere, INTERFACE §2). */
async function readOptions(ctx: EdgeContext, req: FastifyRequest, q: Query): Promise<ReadOptions> {
  const install = q.install_id === undefined ? null : await ownInstall(ctx.db as Queryable, req.tenantId, q.install_id);
  return {
    kind: q.kind,
    installId: install?.install_id,
    retentionDays: ctx.config.follow.changesRetentionDays,
  };
}

/** The page as the document says it (the graph layer names connectors as plain strings); MCP `list_changes` too. */
export function answer(page: Page): z.input<typeof ChangesPage> {
  return { changes: page.changes as z.input<typeof ChangesPage>['changes'], next_cursor: page.next_cursor };
}
