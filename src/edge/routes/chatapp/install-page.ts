/**
 * The chat OAuth callback's answers to a browser (INTERFACE §10.7): a small server-rendered
 * page saying what was installed, or what failed with its §2 code; or a 303 to the
 * `success_url` / `failure_url` bound to the state, carrying `install_id` or `error`.
 *
 * The page is static text: every value is HTML-escaped, and the Content-Security-Policy
 * allows nothing but its own stylesheet (by hash), so nothing on it can run or load. It never
 * shows the OAuth code, the state or a token; the answer is not cached and sends no Referer
 * (the callback's URL carries the code).
 */
import { createHash } from 'node:crypto';
import escapeHtml from 'escape-html';
import type { FastifyReply, FastifyRequest } from 'fastify';
import Negotiator from 'negotiator';
import type { AppError } from '../../../errors.js';
import type { InstallResult } from '../../../connectors/chatapp/oauth-install.js';
import { STATUS_OF } from '../../error-map.js';

const STYLE =
  'body{font:16px/1.5 system-ui,sans-serif;max-width:38rem;margin:3rem auto;padding:0 1rem;color:#1d1d1f}' +
  'h1{font-size:1.5rem;margin-bottom:.5rem}dl{display:grid;grid-template-columns:max-content 1fr;gap:.25rem 1rem}' +
  'dt{font-weight:600}dd{margin:0}code{background:#f0f0f3;padding:0 .3em;border-radius:3px}' +
  '.ok{color:#116329}.failed{color:#a40e26}';

/** Exactly the one stylesheet below may apply; no script, image, frame, form or base. */
const PAGE_CSP = [
  "default-src 'none'",
  `style-src 'sha256-${createHash('sha256').update(STYLE, 'utf8').digest('base64')}'`,
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const MEDIA_TYPES = ['application/json', 'text/html'];

/** A browser's navigation asks for HTML first; a wildcard, no Accept, or JSON keep §3's JSON. */
export function wantsHtml(req: FastifyRequest): boolean {
  return new Negotiator({ headers: req.headers }).mediaType(MEDIA_TYPES) === 'text/html';
}

/** `url` with one more query parameter, its own query and fragment kept as they were. */
export function withQueryParam(url: string, name: string, value: string): string {
  const u = new URL(url);
  const pair = `${encodeURIComponent(name)}=${encodeURIComponent(value)}`;
  u.search = u.search.length > 1 ? `${u.search.slice(1)}&${pair}` : pair;
  return u.toString();
}

export function redirectBrowser(reply: FastifyReply, url: string): FastifyReply {
  return reply.header('cache-control', 'no-store').header('referrer-policy', 'no-referrer').redirect(url, 303);
}

export function sendInstalledPage(reply: FastifyReply, r: InstallResult): FastifyReply {
  const team = escapeHtml(r.team_name ?? r.team_id);
  return sendPage(
    reply,
    200,
    'Workspace connected',
    `<h1 class="ok">Workspace connected</h1>
<p>The workspace <strong>${team}</strong> is now connected. You can close this tab.</p>
<dl>
<dt>Workspace</dt><dd>${team} (<code>${escapeHtml(r.team_id)}</code>)</dd>
<dt>Install id</dt><dd><code>${escapeHtml(r.install_id)}</code></dd>
<dt>Status</dt><dd>${escapeHtml(r.status)}</dd>
</dl>`,
  );
}

export function sendFailedPage(reply: FastifyReply, err: AppError): FastifyReply {
  return sendPage(
    reply,
    STATUS_OF[err.kind],
    'Install failed',
    `<h1 class="failed">The install did not complete</h1>
<p>${escapeHtml(sentence(err.message))}</p>
<dl>
<dt>Error code</dt><dd><code>${escapeHtml(err.code)}</code></dd>
<dt>Request id</dt><dd><code>${escapeHtml(reply.request.id)}</code></dd>
</dl>
<p>Start the install again from the application that sent you here.</p>`,
  );
}

/** An error message as a sentence on a page: capital first letter, final full stop. */
function sentence(message: string): string {
  const s = message.charAt(0).toUpperCase() + message.slice(1);
  return /[.!?]$/.test(s) ? s : `${s}.`;
}

function sendPage(reply: FastifyReply, status: number, title: string, main: string): FastifyReply {
  const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>${STYLE}</style>
</head>
<body>
<main>
${main}
</main>
</body>
</html>
`;
  return reply
    .code(status)
    .header('content-security-policy', PAGE_CSP)
    .header('x-content-type-options', 'nosniff')
    .header('x-frame-options', 'DENY')
    .header('referrer-policy', 'no-referrer')
    .header('cache-control', 'no-store')
    .type('text/html; charset=utf-8')
    .send(html);
}
