// @ts-check
/**
 * Installs (INTERFACE §3, §9.4, §10.6): the tenant's installs with status, backfill and
 * catch-up; one install with its progress fields and side effects; its recent events.
 */
import { api } from '../api.js';
import { announce, code, count, dl, h, label, none, notice, table, time, value } from '../dom.js';
import { load, olderButton, startPage } from '../view.js';

/** @typedef {import('../view.js').PageContext} PageContext */

const NEED_INSTALLS = { what: 'installs', scope: 'installs:read', verb: 'read the installs', listing: true };
const NEED_INSTALL = { what: 'this install', scope: 'installs:read', verb: 'read this install' };
const NEED_EVENTS = { what: 'the events', scope: 'installs:read', verb: "read this install's events" };

const CONNECTORS = /** @type {Record<string, string>} */ ({ chatapp: 'Chat (Slack)', codehost: 'Code host (GitHub)' });
const connectorName = (/** @type {string} */ id) => CONNECTORS[id] ?? id;

/** A state word with its own colour (`active`, `complete`, `failed`, …): the word itself says it. */
export const state = (/** @type {unknown} */ s) =>
  typeof s === 'string' ? h('span', { class: `state state-${s.replace(/[^a-z_]/g, '')}` }, s) : none();

/** The link to an install, named as a person knows it. */
function installLink(/** @type {any} */ install) {
  return h(
    'a',
    { href: `#/installs/${encodeURIComponent(install.install_id)}` },
    install.display_name ?? install.external_id,
  );
}

/** `catch_up` of a chat install (§10.6): its state, the gap's start, what it recovered. */
function catchUpSummary(/** @type {any} */ c) {
  if (!c || typeof c !== 'object') return none();
  return [state(c.state), c.recovered ? ` · ${c.recovered} recovered` : ''];
}

/** @param {PageContext} ctx */
export async function installsPage(ctx) {
  startPage(ctx, 'Installs');
  const answer = await load(ctx, NEED_INSTALLS, () => api('connectors/installs', { signal: ctx.signal }));
  if (answer === null) return;
  /** @type {any[]} */
  const installs = answer.installs;
  if (installs.length === 0) {
    ctx.container.append(notice('info', 'This tenant has no installs yet.'));
    return;
  }
  const t = table({
    caption: `${count(installs.length, 'install')}, newest first`,
    rows: installs,
    columns: [
      { head: 'Install', cell: (i) => [installLink(i), h('br'), code(i.install_id)] },
      { head: 'Connector', cell: (i) => connectorName(i.connector_id) },
      { head: 'Status', cell: (i) => state(i.status) },
      { head: 'Backfill', cell: (i) => [state(i.backfill?.state), ' ', time(i.backfill?.updated_at)] },
      { head: 'Catch-up', cell: (i) => catchUpSummary(i.catch_up) },
      { head: 'Created', cell: (i) => time(i.created_at) },
    ],
  });
  ctx.container.append(t.el);
}

/** The fields of a progress object beside its `state` (the connector's own, INTERFACE §3). */
function progress(/** @type {Record<string, unknown>} */ obj) {
  return Object.entries(obj)
    .filter(([k]) => k !== 'state')
    .map(
      ([k, v]) => /** @type {[string, Node]} */ ([label(k), k.endsWith('_at') || k === 'since' ? time(v) : value(v)]),
    );
}

/** A titled section of a page, side by side with its siblings on a wide screen. */
const panel = (/** @type {string} */ id, /** @type {string} */ title, /** @type {Node} */ body) =>
  h('section', { class: 'panel', 'aria-labelledby': `${id}-heading` }, h('h2', { id: `${id}-heading` }, title), body);

/** @param {PageContext} ctx */
export async function installPage(ctx) {
  const heading = startPage(ctx, 'Install');
  const id = ctx.params.id ?? '';
  const install = await load(ctx, NEED_INSTALL, () =>
    api(`connectors/installs/${encodeURIComponent(id)}`, { signal: ctx.signal }),
  );
  if (install === null) return;
  const name = install.display_name ?? install.external_id;
  heading.textContent = `Install: ${name}`;
  document.title = `${heading.textContent} · connector-service console`;
  const links = h(
    'ul',
    { class: 'links' },
    h('li', {}, h('a', { href: `#/installs/${encodeURIComponent(id)}/events` }, 'Recent events')),
    h('li', {}, h('a', { href: `#/dead-letters?install_id=${encodeURIComponent(id)}` }, 'Dead letters')),
    h('li', {}, h('a', { href: `#/graph?install_id=${encodeURIComponent(id)}` }, 'Graph nodes')),
  );
  const effects = install.effects ?? {};
  ctx.container.append(
    links,
    dl([
      ['Install id', code(install.install_id)],
      ['Connector', connectorName(install.connector_id)],
      ['Status', state(install.status)],
      [install.connector_id === 'chatapp' ? 'Team id' : 'Installation id', code(install.external_id)],
      ['Created', time(install.created_at)],
      ['Updated', time(install.updated_at)],
    ]),
    h(
      'div',
      { class: 'panels' },
      panel(
        'backfill',
        'Backfill',
        install.backfill
          ? dl([['State', state(install.backfill.state)], ...progress(install.backfill)])
          : notice('info', 'No backfill reported.'),
      ),
      panel(
        'catch-up',
        'Catch-up',
        install.catch_up
          ? dl([['State', state(install.catch_up.state)], ...progress(install.catch_up)])
          : notice('info', 'No catch-up reported for this install.'),
      ),
      panel(
        'effects',
        'Side effects',
        dl([
          ['Pending', value(effects.pending)],
          ['Retrying', value(effects.retrying)],
          ['Failed', value(effects.failed)],
          ['Last error', value(effects.last_error)],
          ['Last error at', time(effects.last_error_at)],
        ]),
      ),
    ),
  );
}

/** @param {PageContext} ctx */
export async function eventsPage(ctx) {
  const heading = startPage(ctx, 'Recent events');
  const id = ctx.params.id ?? '';
  const kind = ctx.query.get('kind') ?? '';
  const back = h('p', {}, h('a', { href: `#/installs/${encodeURIComponent(id)}` }, 'Back to the install'));
  const kindInput = h('input', { id: 'events-kind', type: 'text', value: kind, spellcheck: 'false' });
  const filter = h(
    'form',
    { class: 'filters', role: 'search', 'aria-label': 'Filter the events' },
    h('div', { class: 'field' }, h('label', { for: 'events-kind' }, 'Kind'), kindInput),
    h('button', { type: 'submit' }, 'Filter'),
  );
  filter.addEventListener('submit', (event) => {
    event.preventDefault();
    const k = kindInput.value.trim();
    location.hash = `#/installs/${encodeURIComponent(id)}/events${k ? `?kind=${encodeURIComponent(k)}` : ''}`;
  });
  ctx.container.append(back, filter);
  const path = `connectors/installs/${encodeURIComponent(id)}/events`;
  const page = (/** @type {string | undefined} */ cursor) =>
    api(path, { signal: ctx.signal, query: { kind, limit: 50, cursor } });
  const [install, first] = await Promise.all([
    api(`connectors/installs/${encodeURIComponent(id)}`, { signal: ctx.signal }).catch(() => null),
    load(ctx, NEED_EVENTS, () => page(undefined)),
  ]);
  if (install) heading.textContent = `Recent events: ${install.display_name ?? install.external_id}`;
  if (first === null) return;
  if (first.events.length === 0) {
    ctx.container.append(notice('info', kind ? `No event of kind ${kind}.` : 'No event stored for this install yet.'));
    return;
  }
  const t = table({
    caption: kind ? `Events of kind ${kind}, newest first` : 'Events, newest first',
    rows: first.events,
    columns: [
      { head: 'Received', cell: (e) => time(e.received_at) },
      { head: 'Kind', cell: (e) => code(e.kind) },
      { head: 'Event id', cell: (e) => code(e.id), className: 'wrap' },
      { head: 'Occurred', cell: (e) => time(e.occurred_at) },
      { head: 'Payload', cell: (e) => payload(e.payload) },
    ],
  });
  ctx.container.append(
    t.el,
    olderButton(ctx, NEED_EVENTS, {
      cursor: first.next_cursor,
      noun: 'events',
      next: async (cursor) => {
        const p = await page(cursor);
        return { items: p.events, cursor: p.next_cursor };
      },
      addRows: t.addRows,
      focusAfter: t.el,
    }),
  );
  announce(`${count(first.events.length, 'event')} shown.`);
}

/** A payload behind a disclosure: its text first, when it has one, then the JSON. */
function payload(/** @type {unknown} */ p) {
  const text = p && typeof p === 'object' && 'text' in p && typeof p.text === 'string' ? p.text : null;
  return h(
    'details',
    {},
    h('summary', {}, text ? `“${text.length > 60 ? `${text.slice(0, 60)}…` : text}”` : 'Show payload'),
    h('pre', {}, JSON.stringify(p, null, 2)),
  );
}
