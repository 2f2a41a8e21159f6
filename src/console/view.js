// @ts-check
/**
 * What every page of the console shares: its frame (a heading, a busy state), the message
 * for a call that failed, and the "show older" control of cursor-paginated listings.
 *
 * A failed call is a sentence on the page, never a blank page: a route the service does not
 * have (404 on a listing: INTERFACE §10 routes arrive with upgrades), a key without the scope
 * (403 `forbidden`, §10.4), a refused key, a rate limit, an unreachable service.
 */
import { ApiError, isAbort } from './api.js';
import { announce, h, notice } from './dom.js';

/**
 * What a page needs and how to say so: `what` names it in a sentence ("the audit log"),
 * `scope` is the key scope its route needs, `verb` what the key would do ("read the audit log").
 * `listing`: the call lists, so a 404 means the service has no such route.
 * @typedef {{ what: string, scope: string, verb: string, listing?: boolean }} Need
 */

/**
 * @typedef {object} PageContext
 * @property {HTMLElement} container where the page renders
 * @property {Record<string, string>} params the route's path parameters
 * @property {URLSearchParams} query the route's query (after `?` in the hash)
 * @property {AbortSignal} signal aborted when the user leaves the page
 */

/**
 * Clears the page and gives it its heading (the target of focus after a navigation).
 * @param {PageContext} ctx
 * @param {string} title
 */
export function startPage(ctx, title) {
  const heading = h('h1', { tabindex: -1 }, title);
  ctx.container.replaceChildren(heading);
  document.title = `${title} · connector-service console`;
  return heading;
}

/**
 * Runs a call for the page; on failure shows why (and answers null), unless the user left.
 * @template T
 * @param {PageContext} ctx
 * @param {Need} need
 * @param {() => Promise<T>} call
 * @param {HTMLElement} [where] where the message goes; default the page
 * @returns {Promise<T | null>}
 */
export async function load(ctx, need, call, where = ctx.container) {
  const busy = h('p', { class: 'loading' }, 'Loading…');
  where.append(busy);
  where.setAttribute('aria-busy', 'true');
  try {
    const answer = await call();
    return ctx.signal.aborted ? null : answer;
  } catch (err) {
    if (isAbort(err) || ctx.signal.aborted) return null;
    where.append(problem(err, need));
    return null;
  } finally {
    busy.remove();
    where.removeAttribute('aria-busy');
  }
}

/**
 * The message for a failed call.
 * @param {unknown} err
 * @param {Need} need
 */
export function problem(err, need) {
  if (!(err instanceof ApiError)) return notice('error', `Something went wrong in the console: ${String(err)}`);
  const status = h('code', {}, `${err.status} ${err.code}`);
  const route = h('code', {}, err.route);
  /** @type {Array<string | Node>} */
  let text;
  if (err.status === 404 && need.listing) {
    text = [`This service does not offer ${need.what}: `, route, ' answered ', status, '.'];
  } else if (err.status === 403) {
    text = [`This API key may not ${need.verb}: it lacks the scope `, h('code', {}, need.scope), ' (', status, ').'];
    text.push(' Forget the key and type one that has the scope.');
  } else if (err.status === 401) {
    text = ['The service refused this API key (', status, '): it is unknown, revoked or expired.'];
    text.push(' Forget the key and type another.');
  } else if (err.status === 429) {
    const wait = err.retryAfterS === null ? 'in a moment' : `in ${err.retryAfterS} s`;
    text = [`Too many requests for this tenant (`, status, `): try again ${wait}.`];
  } else if (err.status === 0) {
    text = [`The service did not answer `, route, ` (${err.message}). Check that it runs, then reload.`];
  } else {
    text = [`Could not ${need.verb}: ${sentence(err.message)} (`, status, ').'];
  }
  const box = notice('error', ...text);
  if (err.requestId) box.append(h('p', { class: 'request-id' }, 'Request id: ', h('code', {}, err.requestId)));
  return box;
}

const sentence = (/** @type {string} */ s) => (s === '' ? 'no reason given' : s.replace(/[.!?]?$/, ''));

/**
 * "Show older": loads the next page of a cursor-paginated listing and appends its rows;
 * gone after the last page.
 * @template T
 * @param {PageContext} ctx
 * @param {Need} need
 * @param {{ cursor: string | null, noun: string, next: (cursor: string) => Promise<{ items: T[], cursor: string | null }>,
 *   addRows: (items: T[]) => void, focusAfter: HTMLElement }} spec
 */
export function olderButton(ctx, need, spec) {
  const box = h('div', { class: 'pager' });
  let cursor = spec.cursor;
  const button = h('button', { type: 'button', class: 'secondary' }, `Show older ${spec.noun}`);
  button.addEventListener('click', async () => {
    if (cursor === null) return;
    button.disabled = true;
    box.querySelector('.notice')?.remove();
    const page = await load(ctx, need, () => spec.next(/** @type {string} */ (cursor)), box);
    button.disabled = false;
    if (page === null) {
      button.focus();
      return;
    }
    spec.addRows(page.items);
    cursor = page.cursor;
    announce(`${page.items.length} more ${spec.noun} shown.`);
    if (cursor === null) {
      button.remove();
      spec.focusAfter.focus();
    } else {
      button.focus();
    }
  });
  if (cursor !== null) box.append(button);
  return box;
}
