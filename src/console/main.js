// @ts-check
/**
 * The console's entry (INTERFACE §10.7): the API key form, the navigation and a hash router
 * (`#/installs`, `#/graph?q=…`): a page is a function that renders into `<main>` from the
 * public routes. After a navigation the new page's heading takes the focus, so a keyboard
 * or screen-reader user lands on what changed.
 */
import { api, ApiError, forgetKey, isAbort, storedKey, storeKey } from './api.js';
import { announce, h } from './dom.js';
import { auditPage } from './pages/audit.js';
import { deadLettersPage } from './pages/dead-letters.js';
import { graphPage, nodePage } from './pages/graph.js';
import { eventsPage, installPage, installsPage } from './pages/installs.js';
import { webhookPage, webhooksPage } from './pages/webhooks.js';
import { problem, startPage } from './view.js';

/** @typedef {import('./view.js').PageContext} PageContext */

/** @type {Array<{ path: RegExp, names: string[], section: string, page: (ctx: PageContext) => Promise<void> }>} */
const ROUTES = [
  { path: /^\/installs$/, names: [], section: 'installs', page: installsPage },
  { path: /^\/installs\/([^/]+)$/, names: ['id'], section: 'installs', page: installPage },
  { path: /^\/installs\/([^/]+)\/events$/, names: ['id'], section: 'installs', page: eventsPage },
  { path: /^\/dead-letters$/, names: [], section: 'dead-letters', page: deadLettersPage },
  { path: /^\/webhooks$/, names: [], section: 'webhooks', page: webhooksPage },
  { path: /^\/webhooks\/([^/]+)$/, names: ['id'], section: 'webhooks', page: webhookPage },
  { path: /^\/graph$/, names: [], section: 'graph', page: graphPage },
  { path: /^\/graph\/nodes\/([^/]+)$/, names: ['id'], section: 'graph', page: nodePage },
  { path: /^\/audit$/, names: [], section: 'audit', page: auditPage },
];

const byId = (/** @type {string} */ id) => /** @type {HTMLElement} */ (document.getElementById(id));

/** Aborts the page being left (its calls stop; nothing it loads is shown). */
let leaving = new AbortController();

function route() {
  const [path = '', search = ''] = location.hash.replace(/^#/, '').split('?');
  return { path: path === '' || path === '/' ? '/installs' : path, query: new URLSearchParams(search) };
}

/** @param {{ focus: boolean }} opts */
async function render(opts) {
  leaving.abort();
  leaving = new AbortController();
  // Each page renders into an element of its own: what a page left behind still loads lands
  // in an element no longer shown, never in the next page.
  const container = document.createElement('div');
  byId('page').replaceChildren(container);
  const signedIn = storedKey() !== null;
  byId('nav').hidden = !signedIn;
  byId('forget-key').hidden = !signedIn;
  if (!signedIn) {
    showKeyForm(container);
    return;
  }
  const { path, query } = route();
  let match = null;
  for (const r of ROUTES) {
    const m = r.path.exec(path);
    if (m) {
      match = { r, params: Object.fromEntries(r.names.map((n, i) => [n, decodeURIComponent(m[i + 1] ?? '')])) };
      break;
    }
  }
  for (const a of byId('nav').querySelectorAll('a')) {
    if (a.dataset.section === match?.r.section) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  /** @type {PageContext} */
  const ctx = { container, params: match?.params ?? {}, query, signal: leaving.signal };
  const done = match ? match.r.page(ctx) : notFoundPage(ctx, path);
  // The page's heading exists once its function has started (before its first call returns).
  if (opts.focus) container.querySelector('h1')?.focus();
  await done.catch((err) => {
    if (!isAbort(err)) container.append(problem(err, { what: 'this page', scope: '', verb: 'show this page' }));
  });
}

/** @param {PageContext} ctx @param {string} path */
async function notFoundPage(ctx, path) {
  startPage(ctx, 'No such page');
  ctx.container.append(
    h('p', {}, 'The console has no page ', h('code', {}, path), '. '),
    h('p', {}, h('a', { href: '#/installs' }, 'Go to the installs')),
  );
}

/** The key form: the one thing to do without a key, so its field takes the focus. */
function showKeyForm(/** @type {HTMLElement} */ container) {
  document.title = 'API key · connector-service console';
  const input = h('input', {
    id: 'api-key',
    type: 'password',
    autocomplete: 'off',
    spellcheck: 'false',
    required: true,
    'aria-describedby': 'api-key-help',
  });
  const error = h('div', { id: 'api-key-error' });
  const submit = h('button', { type: 'submit' }, 'Use this key');
  // No `name` on the input: even a form submitted without this script sends no key anywhere.
  const form = h(
    'form',
    { class: 'key-form', novalidate: true },
    h('label', { for: 'api-key' }, 'Tenant API key'),
    input,
    h(
      'p',
      { id: 'api-key-help', class: 'hint' },
      "Kept in this tab's session storage until you forget it or close the tab; sent only to this service, " +
        'as the Bearer of its API calls.',
    ),
    submit,
    error,
  );
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const key = input.value.trim();
    error.replaceChildren();
    input.removeAttribute('aria-invalid');
    if (key === '') return refuse('Type an API key first.');
    submit.disabled = true;
    try {
      // Any valid key may list the connectors (INTERFACE §10.4): the key is checked, nothing else.
      await api('connectors', { key });
    } catch (err) {
      submit.disabled = false;
      if (err instanceof ApiError && err.status === 401) return refuse('The service does not know this key.');
      error.append(problem(err, { what: 'the connectors', scope: '', verb: 'check the key' }));
      return;
    }
    storeKey(key);
    announce('Key accepted.');
    await render({ focus: true });
  });
  /** @param {string} text */
  function refuse(text) {
    input.setAttribute('aria-invalid', 'true');
    input.setAttribute('aria-errormessage', 'api-key-error');
    error.append(h('p', { class: 'field-error', role: 'alert' }, text));
    input.focus();
  }
  container.replaceChildren(
    h('h1', { tabindex: -1 }, 'Connect with an API key'),
    h(
      'p',
      {},
      "The console shows one tenant's installs, events, dead letters, webhooks, graph and audit log, " +
        "through the service's public API. Type one of the tenant's API keys.",
    ),
    form,
  );
  input.focus();
}

function boot() {
  byId('forget-key').addEventListener('click', async () => {
    forgetKey();
    announce('The key is forgotten.');
    await render({ focus: true });
  });
  // The skip link moves focus without touching the hash (the hash is the router's).
  byId('skip-link').addEventListener('click', (event) => {
    event.preventDefault();
    byId('content').focus();
  });
  window.addEventListener('hashchange', () => void render({ focus: true }));
  // A link to the page already shown changes no hash: it reloads that page's data instead.
  document.addEventListener('click', (event) => {
    const link = event.target instanceof Element ? event.target.closest('a[href^="#/"]') : null;
    if (link && link.getAttribute('href') === location.hash) void render({ focus: true });
  });
  void render({ focus: false });
}

boot();
