/**
 * `GET /console` and its files under `/console/…` (INTERFACE §10.7): a tenant's web console,
 * static files from `src/console/` (copied into dist by the build), read once at start.
 *
 * The console is a browser client of the public routes only: the page holds no data and no
 * key (the tenant types its key in; it stays in the tab's session storage and travels as the
 * Bearer of the console's own API calls), so these routes take no key. They are pages, not
 * API operations, so they stay out of `/openapi.json` (hidden, as `/docs`' own files are).
 *
 * Every answer carries a strict Content-Security-Policy: scripts, styles and images of this
 * origin only, calls to this origin only, no inline code, no frames, no plugins; nosniff, no
 * Referer, not framed. A file is revalidated on each load (ETag), so an upgrade shows at once.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { extname, join, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { NotFound } from '../../errors.js';
import { sendError } from '../error-map.js';

const CONSOLE_PATH = '/console';

export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
};

interface Asset {
  body: Buffer;
  type: string;
  etag: string;
}

const PAGE = 'index.html';

/** Every servable file of `dir` by its path below it (`pages/graph.js`); nothing else is ever read. */
function loadConsoleAssets(dir = fileURLToPath(new URL('../../console/', import.meta.url))): Map<string, Asset> {
  const assets = new Map<string, Asset>();
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    const type = TYPES[extname(entry.name)];
    if (!entry.isFile() || type === undefined) continue;
    const path = join(entry.parentPath, entry.name);
    const body = readFileSync(path);
    const name = path.slice(dir.length).split(sep).join('/');
    assets.set(name, { body, type, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"` });
  }
  if (!assets.has(PAGE)) throw new Error(`the console's ${PAGE} is missing from ${dir}`);
  return assets;
}

function send(req: FastifyRequest, reply: FastifyReply, asset: Asset): FastifyReply {
  reply
    .header('content-security-policy', CONSOLE_CSP)
    .header('x-content-type-options', 'nosniff')
    .header('x-frame-options', 'DENY')
    .header('referrer-policy', 'no-referrer')
    .header('cross-origin-opener-policy', 'same-origin')
    .header('cross-origin-resource-policy', 'same-origin')
    .header('cache-control', 'no-cache')
    .header('etag', asset.etag);
  if (req.headers['if-none-match'] === asset.etag) return reply.code(304).send();
  return reply.type(asset.type).send(asset.body);
}

const hidden = { schema: { hide: true } };

export const consoleRoutes: FastifyPluginAsync = async (app) => {
  const assets = loadConsoleAssets();
  const page = assets.get(PAGE)!;
  app.get(CONSOLE_PATH, hidden, async (req, reply) => send(req, reply, page));
  app.get(`${CONSOLE_PATH}/*`, hidden, async (req, reply) => {
    const name = (req.params as { '*': string })['*'];
    // The page's relative links resolve against `/console`, never `/console/`.
    if (name === '') return reply.redirect(CONSOLE_PATH, 308);
    const asset = name === PAGE ? undefined : assets.get(name);
    if (asset === undefined) return sendError(reply, new NotFound(`no console file ${name}`));
    return send(req, reply, asset);
  });
};
