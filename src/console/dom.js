// @ts-check
/**
 * The console's DOM helpers. Everything a page shows is built with these: text always goes
 * in as text nodes (never parsed as HTML), attributes by name, so no value from the service
 * can become markup or code (INTERFACE §10.7: the console under a strict CSP).
 */

/** @typedef {string | number | Node | null | undefined | false} Child */
/** @typedef {Record<string, string | number | boolean | null | undefined | EventListener>} Attrs */

/**
 * An element: `h('a', { href: '#/x' }, 'text')`. `on…` attributes take listeners; `true`
 * sets a boolean attribute, `false`, null and undefined leave it out.
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {Attrs} [attrs]
 * @param {...(Child | Child[])} children
 * @returns {HTMLElementTagNameMap[K]}
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (typeof value === 'function') el.addEventListener(name.slice(2), value);
    else if (value === true) el.setAttribute(name, '');
    else if (value !== false && value !== null && value !== undefined) el.setAttribute(name, String(value));
  }
  append(el, children);
  return el;
}

/**
 * @param {Element} el
 * @param {(Child | Child[])[]} children
 */
function append(el, children) {
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.append(typeof c === 'object' ? c : document.createTextNode(String(c)));
  }
}

/** An ISO timestamp as `2026-11-27 15:08:01 UTC` in a `<time>`; `—` when absent. */
export function time(/** @type {unknown} */ iso) {
  if (typeof iso !== 'string' || iso === '') return none();
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return document.createTextNode(iso);
  return h('time', { datetime: iso }, `${d.toISOString().slice(0, 19).replace('T', ' ')} UTC`);
}

/** An id or other machine string, in a `<code>`. */
export const code = (/** @type {unknown} */ v) => (v === null || v === undefined ? none() : h('code', {}, String(v)));

/** What an absent value reads as (screen readers say "none"). */
export const none = () => h('span', { class: 'none', 'aria-label': 'none' }, '—');

/** A value of unknown shape: text as is, anything else as compact JSON; empty reads as none. */
export function value(/** @type {unknown} */ v) {
  if (v === null || v === undefined || v === '' || (Array.isArray(v) && v.length === 0)) return none();
  if (typeof v === 'string') return document.createTextNode(v);
  if (typeof v === 'number' || typeof v === 'boolean') return document.createTextNode(String(v));
  return h('code', {}, JSON.stringify(v));
}

/** Words a field name abbreviates, as a person writes them. */
const WORDS = /** @type {Record<string, string>} */ ({ prs: 'PRs', pr: 'PR', dms: 'DMs', url: 'URL' });

/** A field name as a label: `prs_done` → `PRs done`, `group_dms_excluded` → `Group DMs excluded`. */
export function label(/** @type {string} */ key) {
  const words = key.split('_').map((w) => WORDS[w] ?? w);
  const first = words[0] ?? '';
  words[0] = first.charAt(0).toUpperCase() + first.slice(1);
  return words.join(' ');
}

/**
 * A description list of `[term, definition]` pairs.
 * @param {Array<[string, Child | Child[]]>} pairs
 */
export function dl(pairs, className = 'fields') {
  return h(
    'dl',
    { class: className },
    pairs.map(([term, def]) => h('div', {}, h('dt', {}, term), h('dd', {}, def))),
  );
}

/**
 * A data table: a caption, one header cell per column, one row per item. The wrapper
 * scrolls a wide table and can take focus, so a keyboard scrolls it too.
 * @template T
 * @param {{ caption: string, columns: Array<{ head: string, cell: (item: T) => Child | Child[], className?: string }>,
 *   rows: T[] }} spec
 */
export function table({ caption, columns, rows }) {
  const body = h('tbody');
  const t = h(
    'table',
    {},
    h('caption', {}, caption),
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        columns.map((c) => h('th', { scope: 'col', class: c.className }, c.head)),
      ),
    ),
    body,
  );
  const addRows = (/** @type {T[]} */ items) => {
    for (const item of items)
      body.append(
        h(
          'tr',
          {},
          columns.map((c) => h('td', { class: c.className }, c.cell(item))),
        ),
      );
  };
  addRows(rows);
  const wrap = h('div', { class: 'table-wrap', role: 'region', 'aria-label': caption, tabindex: 0 }, t);
  return { el: wrap, body, addRows };
}

/**
 * A notice: `info` for an empty list or a hint, `error` for what went wrong.
 * @param {'info' | 'error' | 'ok'} kind
 * @param {...(Child | Child[])} children
 */
export function notice(kind, ...children) {
  return h('div', { class: `notice notice-${kind}` }, h('p', {}, ...children));
}

/** `1 node`, `3 nodes`. */
export const count = (/** @type {number} */ n, /** @type {string} */ noun, plural = `${noun}s`) =>
  `${n} ${n === 1 ? noun : plural}`;

/** Says `text` to assistive technology through the page's polite live region. */
export function announce(/** @type {string} */ text) {
  const el = document.getElementById('announce');
  if (!el) return;
  el.textContent = '';
  // A change after a tick is read even when the same sentence comes twice.
  setTimeout(() => (el.textContent = text), 50);
}
