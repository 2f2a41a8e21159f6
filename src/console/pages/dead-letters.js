// @ts-check
/**
 * Dead letters (INTERFACE §9.3): events that could not be stored, newest first, each with
 * a Replay button (`POST /api/v1/dead-letters/{id}/replay`: the event goes back on the
 * ingest path, is ingested once, and leaves the list).
 */
import { api } from '../api.js';
import { announce, code, h, notice, table, time } from '../dom.js';
import { load, olderButton, problem, startPage } from '../view.js';

/** @typedef {import('../view.js').PageContext} PageContext */

const NEED_LIST = { what: 'dead letters', scope: 'installs:read', verb: 'read the dead letters', listing: true };
const NEED_REPLAY = { what: 'replay', scope: 'installs:write', verb: 'replay dead letters' };

/** @param {PageContext} ctx */
export async function deadLettersPage(ctx) {
  startPage(ctx, 'Dead letters');
  const installId = ctx.query.get('install_id');
  ctx.container.append(
    h(
      'p',
      {},
      'Events the service could not store after its retries. Replay puts one back on the ingest path: ',
      'it is stored once, and leaves this list.',
    ),
  );
  if (installId) {
    ctx.container.append(
      h(
        'p',
        {},
        'Only the install ',
        h('a', { href: `#/installs/${encodeURIComponent(installId)}` }, code(installId)),
        '. ',
        h('a', { href: '#/dead-letters' }, 'Show every install'),
      ),
    );
  }
  const page = (/** @type {string | undefined} */ cursor) =>
    api('dead-letters', { signal: ctx.signal, query: { install_id: installId, limit: 50, cursor } });
  const first = await load(ctx, NEED_LIST, () => page(undefined));
  if (first === null) return;
  if (first.dead_letters.length === 0) {
    ctx.container.append(notice('ok', 'No dead letters: every event was stored.'));
    return;
  }
  const t = table({
    caption: 'Dead letters, newest first',
    rows: first.dead_letters,
    columns: [
      { head: 'Dead-lettered', cell: (d) => time(d.dead_lettered_at) },
      {
        head: 'Install',
        cell: (d) => h('a', { href: `#/installs/${encodeURIComponent(d.install_id)}` }, code(d.install_id)),
      },
      { head: 'Kind', cell: (d) => code(d.kind) },
      { head: 'Event id', cell: (d) => code(d.event_id), className: 'wrap' },
      { head: 'Error', cell: (d) => d.error, className: 'wrap' },
      { head: 'Replay', cell: (d) => replayButton(ctx, d.id) },
    ],
  });
  ctx.container.append(
    t.el,
    olderButton(ctx, NEED_LIST, {
      cursor: first.next_cursor,
      noun: 'dead letters',
      next: async (cursor) => {
        const p = await page(cursor);
        return { items: p.dead_letters, cursor: p.next_cursor };
      },
      addRows: t.addRows,
      focusAfter: t.el,
    }),
  );
}

/**
 * A row's Replay button; its outcome replaces it in the cell and is announced. The focus
 * moves to that outcome (the button is gone).
 * @param {PageContext} ctx
 * @param {string} id
 */
function replayButton(ctx, id) {
  const cell = h('div', { class: 'replay' });
  const button = h(
    'button',
    { type: 'button', class: 'small' },
    'Replay',
    h('span', { class: 'visually-hidden' }, ` dead letter ${id}`),
  );
  button.addEventListener('click', async () => {
    button.disabled = true;
    cell.querySelector('.notice')?.remove();
    try {
      await api(`dead-letters/${encodeURIComponent(id)}/replay`, { method: 'POST', signal: ctx.signal });
    } catch (err) {
      if (ctx.signal.aborted) return;
      button.disabled = false;
      const why = problem(err, NEED_REPLAY);
      cell.append(why);
      announce(`Dead letter ${id} was not replayed. ${why.textContent}`);
      button.focus();
      return;
    }
    const done = h('span', { class: 'state state-complete', tabindex: -1 }, 'Replayed');
    cell.replaceChildren(done);
    done.focus();
    announce(`Dead letter ${id} replayed: its event is back on the ingest path.`);
  });
  cell.append(button);
  return cell;
}
