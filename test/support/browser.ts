/**
 * A real browser for the tests that walk pages as a person would (the OAuth install flow,
 * INTERFACE §10.7): Debian's `chromium` driven by `puppeteer-core`, headless, a fresh profile
 * per launch, nothing fetched from outside. scripts/test.sh installs `chromium` when it is
 * missing; if it still cannot be found the test fails saying so (never a silent skip).
 * Screenshots go to `test-artifacts/` (gitignored) for a person to look at after a run.
 */
import { accessSync, constants, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';

export const ARTIFACTS_DIR = fileURLToPath(new URL('../../test-artifacts/', import.meta.url));

/** Flags that work as root on a headless machine with no network beyond loopback. */
const FLAGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-dev-shm-usage',
];

const CANDIDATES = ['chromium', 'chromium-browser', 'google-chrome-stable', 'google-chrome'];

/** `CHROMIUM_PATH`, else the first of the usual names in /usr/bin or PATH; null when none. */
function findChromium(env: NodeJS.ProcessEnv = process.env): string | null {
  if (env.CHROMIUM_PATH) return env.CHROMIUM_PATH;
  const dirs = ['/usr/bin', ...(env.PATH ?? '').split(delimiter).filter(Boolean)];
  for (const name of CANDIDATES) {
    for (const dir of dirs) {
      try {
        accessSync(join(dir, name), constants.X_OK);
        return join(dir, name);
      } catch {
        // not here
      }
    }
  }
  return null;
}

export interface TestBrowser {
  browser: Browser;
  /** A new tab; console errors and failed page loads are collected in `problems`. */
  newPage(): Promise<Page>;
  /** Messages the pages logged as errors (a CSP violation is one). */
  problems: string[];
  /** Saves a full-page PNG as `test-artifacts/<name>.png`; answers its path. */
  screenshot(page: Page, name: string): Promise<string>;
  close(): Promise<void>;
}

export async function launchBrowser(): Promise<TestBrowser> {
  const executablePath = findChromium();
  if (executablePath === null) {
    throw new Error(
      'no Chromium found for the browser tests: scripts/test.sh installs it (apt-get install chromium); ' +
        'or set CHROMIUM_PATH',
    );
  }
  const profile = mkdtempSync(join(tmpdir(), 'connectors-chromium-'));
  const browser = await puppeteer.launch({
    executablePath,
    headless: true,
    userDataDir: profile,
    args: FLAGS,
    timeout: 60_000,
  });
  const problems: string[] = [];
  return {
    browser,
    problems,
    async newPage() {
      const page = await browser.newPage();
      page.setDefaultTimeout(30_000);
      page.on('console', (m) => {
        // A 4xx page (the failure page answers 400) or a missing favicon is logged as a failed
        // load; the tests assert statuses themselves. Anything else (a CSP refusal) is a problem.
        if (m.type() === 'error' && !m.text().startsWith('Failed to load resource'))
          problems.push(`${page.url()}: ${m.text()}`);
      });
      page.on('pageerror', (err) => problems.push(`${page.url()}: ${String(err)}`));
      return page;
    },
    async screenshot(page, name) {
      mkdirSync(ARTIFACTS_DIR, { recursive: true });
      const path = join(ARTIFACTS_DIR, `${name}.png`) as `${string}.png`;
      await page.screenshot({ path, fullPage: true });
      return path;
    },
    async close() {
      await browser.close().catch(() => undefined);
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
