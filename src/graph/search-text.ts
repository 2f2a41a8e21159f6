/**
 * The text `q` searches (INTERFACE §3: "full-text match on the node's text"), drawn from a
 * node's props. Postgres turns it into a tsvector (migrations 004, 018), which must stay under
 * 1 MB, so the text is capped; a PR's diff is deliberately not searched (up to 1 MB of code
 * would drown every word query and blow the cap).
 */
import { sanitizeText } from '../store/sanitize.js';
import type { Props } from './merge-props.js';

/** Characters kept; well under the tsvector limit even for text of unique words. */
export const SEARCH_TEXT_MAX = 100_000;

/** Props whose string value is searchable, in the order they are joined. */
const TEXT_PROPS = [
  'title',
  'name',
  'real_name',
  'full_name',
  'login',
  'text',
  'body',
  'message',
  'path',
  'user_id',
  'channel_id',
] as const;

export function searchText(props: Props): string {
  const parts: string[] = [];
  for (const key of TEXT_PROPS) {
    const v = props[key];
    if (typeof v === 'string' && v.length > 0) parts.push(v);
  }
  for (const list of [props.labels, props.files]) {
    if (!Array.isArray(list)) continue;
    for (const item of list) {
      if (typeof item === 'string') parts.push(item);
      else if (item && typeof item === 'object' && typeof (item as { name?: unknown }).name === 'string') {
        parts.push((item as { name: string }).name);
      }
    }
  }
  const text = parts.join('\n');
  // A cut through a surrogate pair leaves a lone half; sanitizeText makes it U+FFFD.
  return sanitizeText(text.length > SEARCH_TEXT_MAX ? text.slice(0, SEARCH_TEXT_MAX) : text);
}
