import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { TestContext } from 'node:test';
import { ROOT } from './paths.js';

/** Debian's chromium, driven by playwright-core: no browser download. */
export const CHROMIUM = '/usr/bin/chromium';

/** Where tests leave artifacts (screenshots); ignored by git. */
export const TEST_OUTPUT = join(ROOT, 'test-output');

/** Skips outside CI when chromium is missing; under CI a missing browser fails the test. */
export function needChromium(t: TestContext): boolean {
  if (existsSync(CHROMIUM)) return true;
  if (process.env.CI === 'true') throw new Error(`${CHROMIUM} is missing: install Debian's chromium package`);
  t.skip(`${CHROMIUM} is not installed (apt-get install chromium)`);
  return false;
}

export interface PageCheck {
  readonly consoleErrors: string[];
  readonly requests: string[];
  readonly chartsRendered: number;
  readonly canvases: number;
  readonly barParts: number;
  readonly text: string;
}

/**
 * Opens an HTML file with the network off (every request that is not the file itself is refused and recorded),
 * waits for its charts, and saves a full-page screenshot under test-output/.
 */
export async function openReport(file: string, screenshot: string): Promise<PageCheck> {
  const browser = await launchChromium();
  try {
    const page = await browser.newPage({ viewport: { width: 1100, height: 900 } });
    const consoleErrors: string[] = [];
    const requests: string[] = [];
    page.on('console', (m) => m.type() === 'error' && consoleErrors.push(m.text()));
    page.on('pageerror', (e) => consoleErrors.push(e.message));
    const url = pathToFileURL(file).href;
    await page.route('**/*', (route) => (route.request().url() === url ? route.continue() : (requests.push(route.request().url()), route.abort())));
    await page.goto(url);
    // Page code as strings: the test build has no DOM types.
    await page.waitForFunction('window.__chartsRendered !== undefined', undefined, { timeout: 10_000 });
    const result = (await page.evaluate(`({
      chartsRendered: window.__chartsRendered,
      canvases: document.querySelectorAll('.uplot canvas').length,
      barParts: document.querySelectorAll('svg.stacked rect.part').length,
      text: document.body.innerText,
    })`)) as Omit<PageCheck, 'consoleErrors' | 'requests'>;
    mkdirSync(TEST_OUTPUT, { recursive: true });
    await page.screenshot({ path: join(TEST_OUTPUT, screenshot), fullPage: true });
    return { consoleErrors, requests, ...result };
  } finally {
    await browser.close();
  }
}

/** Debian's chromium, headless, with its calls home turned off. */
export async function launchChromium(): Promise<import('playwright-core').Browser> {
  const { chromium } = await import('playwright-core');
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-background-networking', '--disable-component-update', '--disable-default-apps', '--disable-sync', '--no-first-run', '--disable-domain-reliability', '--disable-client-side-phishing-detection', '--metrics-recording-only', '--disable-features=Translate,OptimizationHints,MediaRouter,AutofillServerCommunication', '--disable-gpu'],
  });
}
