// @ts-check
/**
 * The audit log (INTERFACE §10.5): every key, install, emit, node action, webhook change,
 * replay, erase and export of the tenant, newest first. Needs the `audit:read` scope.
 */
import { api } from '../api.js';
import { announce, code, count, h, notice, table, time, value } from '../dom.js';
import { load, olderButton, startPage } from '../view.js';
import { state } from './installs.js';

/** @typedef {import('../view.js').PageContext} PageContext */

const NEED = { what: 'an audit log', scope: 'audit:read', verb: 'read the audit log', listing: true };

/** @param {PageContext} ctx */
export async function auditPage(ctx) {
  startPage(ctx, 'Audit log');
  ctx.container.append(h('p', {}, "What was done with the tenant's keys, newest first. Entries are never changed."));
  const page = (/** @type {string | undefined} */ cursor) =>
    api('audit', { signal: ctx.signal, query: { limit: 50, cursor } });
  const first = await load(ctx, NEED, () => page(undefined));
  if (first === null) return;
  if (first.entries.length === 0) {
    ctx.container.append(notice('info', 'Nothing recorded yet.'));
    return;
  }
  const t = table({
    caption: 'Audit entries, newest first',
    rows: first.entries,
    columns: [
      { head: 'At', cell: (e) => time(e.at) },
      { head: 'Action', cell: (e) => code(e.action) },
      { head: 'Outcome', cell: (e) => state(e.outcome) },
      {
        head: 'Target',
        cell: (e) => (typeof e.target === 'string' ? code(e.target) : value(e.target)),
        className: 'wrap',
      },
      { head: 'Key id', cell: (e) => code(e.key_id) },
      { head: 'Request id', cell: (e) => code(e.request_id), className: 'wrap' },
    ],
  });
  ctx.container.append(
    t.el,
    olderButton(ctx, NEED, {
      cursor: first.next_cursor,
      noun: 'entries',
      next: async (cursor) => {
        const p = await page(cursor);
        return { items: p.entries, cursor: p.next_cursor };
      },
      addRows: t.addRows,
      focusAfter: t.el,
    }),
  );
  announce(`${count(first.entries.length, 'entry', 'entries')} shown.`);
}
