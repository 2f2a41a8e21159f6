/**
 * What the console's browser test (browser-console.test.ts) uses besides the browser itself:
 * an accessibility pass with axe-core, a description of the focused element, and an HTTP
 * proxy in front of the service that answers chosen calls as a service without a route
 * (404) or a key without a scope (403 `forbidden`, INTERFACE §10.4) would.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Page } from 'puppeteer-core';
import { ARTIFACTS_DIR } from './browser.js';

/**
 * The page's globals, for the callbacks puppeteer runs in the browser: this file is compiled
 * for Node (no DOM library), so they are declared here, loosely, for this module only.
 */
declare const document: any, window: any;

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

export interface AxeFinding {
  id: string;
  impact: string | null;
  help: string;
  targets: string[];
}

/**
 * axe-core's pass over the page as it is now: its violations of serious or critical impact
 * (the full report, every impact, goes to `test-artifacts/axe-<name>.json`). axe's source
 * is evaluated through the DevTools protocol, which the page's CSP does not govern, so the
 * page keeps its own policy while it is checked.
 */
export async function axeViolations(page: Page, name: string): Promise<AxeFinding[]> {
  if (!(await page.evaluate(() => 'axe' in window))) await page.evaluate(AXE_SOURCE);
  const found = await page.evaluate(async () => {
    const axe = window.axe;
    const result = await axe.run(document, { resultTypes: ['violations'] });
    // A run that checked nothing would pass anything.
    if (result.passes.length === 0) throw new Error('axe-core checked no rule on the page');
    return (result.violations as any[]).map((v) => ({
      id: v.id as string,
      impact: (v.impact ?? null) as string | null,
      help: v.help as string,
      targets: (v.nodes as any[]).map((n) => String(n.target)),
    }));
  });
  mkdirSync(ARTIFACTS_DIR, { recursive: true });
  writeFileSync(join(ARTIFACTS_DIR, `axe-${name}.json`), `${JSON.stringify(found, null, 2)}\n`);
  return found.filter((f) => f.impact === 'serious' || f.impact === 'critical');
}

/** The focused element as a person would name it: `a "Installs"`, `input#api-key`, `h1 "Graph"` (its label, else its text). */
export function focused(page: Page): Promise<string> {
  return page.evaluate(() => {
    const el = document.activeElement;
    if (!el || el === document.body) return 'body';
    const tag = el.tagName.toLowerCase();
    if (el.id && (tag === 'input' || tag === 'select' || tag === 'main')) return `${tag}#${el.id}`;
    const name = el.getAttribute('aria-label') ?? el.textContent ?? '';
    return `${tag} "${name.trim().replace(/\s+/g, ' ')}"`;
  });
}

/** Presses Tab `n` times and answers where the focus went after each press. */
export async function tabThrough(page: Page, n: number): Promise<string[]> {
  const stops: string[] = [];
  for (let i = 0; i < n; i++) {
    await page.keyboard.press('Tab');
    stops.push(await focused(page));
  }
  return stops;
}

/** How the proxy answers one call instead of the service: a status and §2 code, or null to forward it. */
export type Refusal = (req: IncomingMessage) => { status: number; code: string; message: string } | null;

export interface RefusingProxy {
  url: string;
  close(): Promise<void>;
}

/** Forwards every request to `target` except those `refuse` answers itself, in the §2 error shape. */
export async function startRefusingProxy(target: string, refuse: Refusal): Promise<RefusingProxy> {
  const upstream = new URL(target);
  const server: Server = createServer((req, res) => {
    const refusal = refuse(req);
    if (refusal) {
      res.writeHead(refusal.status, { 'content-type': 'application/json', 'x-request-id': 'refused-by-proxy' });
      res.end(
        JSON.stringify({ error: { code: refusal.code, message: refusal.message, request_id: 'refused-by-proxy' } }),
      );
      return;
    }
    const out = request(
      { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    out.setTimeout(30_000, () => out.destroy(new Error('upstream timed out')));
    out.on('error', () => {
      if (!res.headersSent) res.writeHead(502);
      res.end();
    });
    req.pipe(out);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    async close() {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}
