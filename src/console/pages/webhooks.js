// @ts-check
/**
 * Webhooks to the tenant (INTERFACE §10.2): its webhooks and their status, and one webhook
 * with its delivery attempts, newest first. Every webhook route needs `webhooks:write`.
 */
import { api } from '../api.js';
import { announce, code, count, dl, h, none, notice, table, time, value } from '../dom.js';
import { load, olderButton, startPage } from '../view.js';
import { state } from './installs.js';

/** @typedef {import('../view.js').PageContext} PageContext */

const NEED_LIST = { what: 'webhooks', scope: 'webhooks:write', verb: 'read the webhooks', listing: true };
const NEED_ONE = { what: 'this webhook', scope: 'webhooks:write', verb: 'read this webhook' };
const NEED_DELIVERIES = {
  what: "this webhook's deliveries",
  scope: 'webhooks:write',
  verb: "read this webhook's deliveries",
  listing: true,
};

const kinds = (/** @type {unknown} */ k) =>
  Array.isArray(k) && k.length > 0 ? k.flatMap((x, i) => [i > 0 ? ', ' : '', code(x)]) : 'every kind';

/** @param {PageContext} ctx */
export async function webhooksPage(ctx) {
  startPage(ctx, 'Webhooks');
  ctx.container.append(
    h('p', {}, "Endpoints that receive the tenant's graph changes, signed per the Standard Webhooks specification."),
  );
  const answer = await load(ctx, NEED_LIST, () => api('webhooks', { signal: ctx.signal }));
  if (answer === null) return;
  /** @type {any[]} */
  const hooks = answer.webhooks;
  if (hooks.length === 0) {
    ctx.container.append(notice('info', 'This tenant has no webhooks.'));
    return;
  }
  const t = table({
    caption: count(hooks.length, 'webhook'),
    rows: hooks,
    columns: [
      {
        head: 'URL',
        cell: (w) => h('a', { href: `#/webhooks/${encodeURIComponent(w.id)}` }, w.url),
        className: 'wrap',
      },
      { head: 'Status', cell: (w) => state(w.status) },
      { head: 'Kinds', cell: (w) => kinds(w.kinds) },
      { head: 'Description', cell: (w) => value(w.description) },
      { head: 'Created', cell: (w) => time(w.created_at) },
    ],
  });
  ctx.container.append(t.el);
}

/** @param {PageContext} ctx */
export async function webhookPage(ctx) {
  const heading = startPage(ctx, 'Webhook');
  const id = ctx.params.id ?? '';
  ctx.container.append(h('p', {}, h('a', { href: '#/webhooks' }, 'All webhooks')));
  const hook = await load(ctx, NEED_ONE, () => api(`webhooks/${encodeURIComponent(id)}`, { signal: ctx.signal }));
  if (hook === null) return;
  heading.textContent = `Webhook: ${hook.url}`;
  ctx.container.append(
    dl([
      ['Id', code(hook.id)],
      ['URL', code(hook.url)],
      ['Status', state(hook.status)],
      ['Kinds', kinds(hook.kinds)],
      ['Description', value(hook.description)],
      ['Created', time(hook.created_at)],
      ['Updated', time(hook.updated_at)],
    ]),
  );
  const section = h(
    'section',
    { 'aria-labelledby': 'deliveries-heading' },
    h('h2', { id: 'deliveries-heading' }, 'Deliveries'),
  );
  ctx.container.append(section);
  const path = `webhooks/${encodeURIComponent(id)}/deliveries`;
  const page = (/** @type {string | undefined} */ cursor) =>
    api(path, { signal: ctx.signal, query: { limit: 50, cursor } });
  const first = await load(ctx, NEED_DELIVERIES, () => page(undefined), section);
  if (first === null) return;
  if (first.deliveries.length === 0) {
    section.append(notice('info', 'No delivery attempted yet.'));
    return;
  }
  const t = table({
    caption: 'Delivery attempts, newest first',
    rows: first.deliveries,
    columns: [
      { head: 'Attempted', cell: (d) => time(d.attempted_at) },
      { head: 'Answer', cell: (d) => (d.status_code === null ? none() : code(d.status_code)) },
      { head: 'Error', cell: (d) => value(d.error), className: 'wrap' },
      { head: 'Duration (ms)', cell: (d) => value(d.duration_ms), className: 'num' },
      { head: 'Changes', cell: (d) => value(d.changes), className: 'num' },
      { head: 'Message id', cell: (d) => code(d.message_id), className: 'wrap' },
    ],
  });
  section.append(
    t.el,
    olderButton(ctx, NEED_DELIVERIES, {
      cursor: first.next_cursor,
      noun: 'deliveries',
      next: async (cursor) => {
        const p = await page(cursor);
        return { items: p.deliveries, cursor: p.next_cursor };
      },
      addRows: t.addRows,
      focusAfter: t.el,
    }),
  );
  announce(`${count(first.deliveries.length, 'delivery', 'deliveries')} shown.`);
}
