import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import { chromium, type Browser, type Page } from 'playwright-core';

// Debian's Chromium, headless, driven by playwright-core: the pages are tested as a person uses
// them. axe-core checks each page's accessibility; screenshots are kept (not committed) under
// test-artifacts/screenshots for a reviewer to look at.

const CHROMIUM = process.env.SVC_CHROMIUM ?? '/usr/bin/chromium';
export const SCREENSHOTS = join(process.cwd(), 'test-artifacts', 'screenshots');

export async function launchBrowser(): Promise<Browser> {
  if (!existsSync(CHROMIUM))
    throw new Error(`no Chromium at ${CHROMIUM}: install Debian's chromium (apt-get install chromium) or set SVC_CHROMIUM`);
  closeOnExit();
  // Without the background-networking flags Chromium keeps calling home, which this closed
  // network refuses (and slows everything down).
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--disable-dev-shm-usage',
    ],
    // Our handlers below close the browser and then end this process too.
    handleSIGINT: false,
    handleSIGTERM: false,
  });
  open.add(browser);
  browser.on('disconnected', () => open.delete(browser));
  return browser;
}

const open = new Set<Browser>();
let installed = false;

/**
 * After Ctrl-C of a test run, a worker and its Chromium stayed behind. A signal, or the test
 * runner going away (a forked worker's IPC channel closes), now closes every browser this
 * process launched and ends the process.
 */
function closeOnExit(): void {
  if (installed) return;
  installed = true;
  const end = (code: number) => () => {
    const closing = Promise.allSettled([...open].map((b) => b.close()));
    // A browser that does not answer must not keep the process: give up after 5 s.
    void Promise.race([closing, new Promise((r) => setTimeout(r, 5000).unref())]).finally(() => process.exit(code));
  };
  process.once('SIGINT', end(130));
  process.once('SIGTERM', end(143));
  process.once('disconnect', end(1));
}

const axeSource: string = (createRequire(import.meta.url)('axe-core') as { source: string }).source;

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: Array<{ target: string[] }>;
}

/**
 * The page's serious and critical accessibility violations (WCAG 2 A and AA, and best
 * practices). axe is evaluated through the DevTools protocol, which the page's CSP does not
 * govern, so the page keeps its real policy while it is checked. It is evaluated once per page
 * load (half a megabyte of script, about 0.1 s): checking a page again at another width reuses it.
 * Only violations are collected (`resultTypes`): the passes' details are what makes a run slow.
 */
export async function seriousViolations(page: Page): Promise<AxeViolation[]> {
  if (!(await page.evaluate('typeof axe === "object"'))) await page.evaluate(axeSource);
  const violations = await page.evaluate(async () => {
    const { axe, document } = globalThis as unknown as {
      document: unknown;
      axe: { run(ctx: unknown, o: unknown): Promise<{ violations: AxeViolation[] }> };
    };
    const r = await axe.run(document, {
      resultTypes: ['violations'],
      runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21aa', 'best-practice'] },
    });
    return r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => ({ target: n.target })) }));
  });
  return violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
}

export async function screenshot(page: Page, folder: string, name: string): Promise<void> {
  const dir = join(SCREENSHOTS, folder);
  mkdirSync(dir, { recursive: true });
  await page.screenshot({ path: join(dir, `${name}.png`), fullPage: true });
}

export const WIDTHS = [
  { name: 'desktop', width: 1280, height: 800 },
  { name: 'phone', width: 390, height: 844 },
] as const;
