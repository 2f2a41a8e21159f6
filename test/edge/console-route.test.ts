/**
 * `GET /console` and its files (INTERFACE §10.7): served without a key, each under the strict
 * Content-Security-Policy, nosniff and not framed; no inline script or style in the page;
 * nothing served but the console's own files; no console route in the API document. The
 * console's scripts build the DOM from text only: no HTML parsing sink appears in them.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONSOLE_CSP } from '../../src/edge/routes/console.js';
import { edgeFixture } from '../support/edge.js';

type Fixture = Awaited<ReturnType<typeof edgeFixture>>;
let f: Fixture;
beforeAll(async () => {
  f = await edgeFixture();
});
afterAll(() => f.close());

const CONSOLE_DIR = fileURLToPath(new URL('../../src/console/', import.meta.url));

const get = (url: string, headers: Record<string, string> = {}) => f.app.inject({ method: 'GET', url, headers });

function expectConsoleHeaders(res: Awaited<ReturnType<typeof get>>): void {
  expect(res.headers['content-security-policy']).toBe(CONSOLE_CSP);
  expect(res.headers['x-content-type-options']).toBe('nosniff');
  expect(res.headers['x-frame-options']).toBe('DENY');
  expect(res.headers['referrer-policy']).toBe('no-referrer');
}

describe('GET /console', () => {
  it('answers the page without a key, under the strict CSP', async () => {
    const res = await get('/console');
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    expectConsoleHeaders(res);
    expect(CONSOLE_CSP).toBe(
      "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; " +
        "base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
    );
  });

  it('has no inline script, style or handler; every file it names is served with its type and the CSP', async () => {
    const html = (await get('/console')).body;
    expect(html).not.toMatch(/<style/i);
    expect(html).not.toMatch(/\sstyle=/i);
    expect(html).not.toMatch(/\son[a-z]+=/i);
    for (const m of html.matchAll(/<script\b[^>]*>/gi)) expect(m[0]).toMatch(/\ssrc="console\//);
    const refs = [...html.matchAll(/\s(?:src|href)="(console\/[^"]+)"/g)].map((m) => m[1]!);
    expect(refs.sort()).toEqual(['console/console.css', 'console/icon.svg', 'console/main.js']);
    const types: Record<string, string> = {
      'console/console.css': 'text/css; charset=utf-8',
      'console/icon.svg': 'image/svg+xml',
      'console/main.js': 'text/javascript; charset=utf-8',
    };
    for (const ref of refs) {
      const res = await get(`/${ref}`);
      expect(res.statusCode, ref).toBe(200);
      expect(res.headers['content-type']).toBe(types[ref]);
      expectConsoleHeaders(res);
    }
  });

  it('serves every module main.js imports, transitively', async () => {
    const seen = new Set<string>();
    const visit = async (path: string): Promise<void> => {
      if (seen.has(path)) return;
      seen.add(path);
      const res = await get(`/console/${path}`);
      expect(res.statusCode, path).toBe(200);
      expect(res.headers['content-type']).toBe('text/javascript; charset=utf-8');
      const dir = path.includes('/') ? path.slice(0, path.lastIndexOf('/') + 1) : '';
      for (const m of res.body.matchAll(/^import\b[^;]*?from '(\.{1,2}\/[^']+)';/gms)) {
        await visit(new URL(m[1]!, `http://x/${dir}`).pathname.slice(1));
      }
    };
    await visit('main.js');
    expect([...seen].sort()).toEqual([
      'api.js',
      'dom.js',
      'main.js',
      'pages/audit.js',
      'pages/dead-letters.js',
      'pages/graph.js',
      'pages/installs.js',
      'pages/webhooks.js',
      'view.js',
    ]);
  });

  it('revalidates by ETag: an unchanged file answers 304', async () => {
    const first = await get('/console/main.js');
    const etag = first.headers.etag as string;
    expect(etag).toMatch(/^"[\w-]+"$/);
    expect(first.headers['cache-control']).toBe('no-cache');
    const again = await get('/console/main.js', { 'if-none-match': etag });
    expect(again.statusCode).toBe(304);
    expect(again.body).toBe('');
  });

  it('serves nothing else: unknown files, other paths and the page under another name are 404 in the §2 shape', async () => {
    for (const url of [
      '/console/nope.js',
      '/console/%2e%2e/package.json',
      '/console/..%2f..%2fpackage.json',
      '/console/index.html',
      '/console/pages',
      '/console/pages/',
    ]) {
      const res = await get(url);
      expect(res.statusCode, url).toBe(404);
      expect(res.json().error.code).toBe('not_found');
    }
  });

  it('/console/ sends the browser to /console, where the relative links resolve', async () => {
    const res = await get('/console/');
    expect(res.statusCode).toBe(308);
    expect(res.headers.location).toBe('/console');
  });

  it('is not an operation of the API document', async () => {
    const doc = (await get('/openapi.json')).json() as { paths: Record<string, unknown> };
    expect(Object.keys(doc.paths).filter((p) => p.startsWith('/console'))).toEqual([]);
  });
});

describe("the console's scripts", () => {
  const files = readdirSync(CONSOLE_DIR, { recursive: true, encoding: 'utf8' }).filter((p) => p.endsWith('.js'));

  it('build the DOM from text only: no HTML-parsing sink, no eval', () => {
    expect(files.length).toBeGreaterThan(5);
    for (const file of files) {
      const src = readFileSync(join(CONSOLE_DIR, file), 'utf8');
      expect(src, file).not.toMatch(/innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function/);
    }
  });

  it('keep the key in session storage only, never in local storage or a URL', () => {
    for (const file of files) {
      const src = readFileSync(join(CONSOLE_DIR, file), 'utf8');
      expect(src, file).not.toMatch(/localStorage|document\.cookie/);
    }
    const api = readFileSync(join(CONSOLE_DIR, 'api.js'), 'utf8');
    expect(api).toMatch(/sessionStorage\.setItem/);
  });
});
