// Shared by the headless-Chromium tests: Debian's /usr/bin/chromium driven by playwright-core,
// the skip rule, and the collection of everything a page logs as an error.

import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';

export const CHROMIUM = '/usr/bin/chromium';
export const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** false, or why the tests are skipped: only when Chromium is missing and CI is not set. */
export const skipReason = !existsSync(CHROMIUM) && !process.env.CI
  ? `${CHROMIUM} not found (install it with 'apt-get install -y chromium' or scripts/bootstrap); skipped outside CI`
  : false;

/** The flags that give headless Chromium a WebGPU adapter on the CPU (SwiftShader). */
export const WEBGPU_FLAGS = ['--enable-unsafe-webgpu', '--use-webgpu-adapter=swiftshader', '--enable-features=Vulkan'];

/** Launches headless Chromium (with WebGPU over SwiftShader when webgpu); fails clearly when it,
 * playwright-core or dist/ is missing. */
export async function launchBrowser({ webgpu = false } = {}) {
  assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is required under CI (apt-get install -y chromium)`);
  assert.ok(existsSync(join(ROOT, 'dist', 'index.browser.mjs')), 'dist/ is missing: run scripts/build-wasm first');
  let chromium;
  try {
    ({ chromium } = await import('playwright-core'));
  } catch (e) {
    throw new Error(`playwright-core is not installed (npm ci): ${e.message}`);
  }
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', ...(webgpu ? WEBGPU_FLAGS : ['--disable-gpu']), '--disable-background-networking',
      '--disable-component-update', '--disable-quic', '--no-first-run', '--disable-sync'],
  });
}

/**
 * A fresh context and page; problems collects console errors (the page's and its workers'),
 * uncaught page errors and crashes, each message once.
 */
export async function openPage(browser, { width = 900, height = 520 } = {}) {
  const context = await browser.newContext({ viewport: { width, height } });
  const page = await context.newPage();
  // Playwright reports a worker's console messages both on the worker and on the page: listen to
  // both (in case), keep each message once.
  const seen = new Set();
  const problems = [];
  const problem = (text) => { if (!seen.has(text)) { seen.add(text); problems.push(text); } };
  const onConsole = (msg) => { if (msg.type() === 'error') problem(`console.error: ${msg.text()}`); };
  page.on('console', onConsole);
  page.on('worker', (w) => w.on('console', onConsole));
  page.on('pageerror', (e) => problem(`pageerror: ${e.stack || e.message}`));
  page.on('crash', () => problem('page crashed'));
  return { context, page, problems };
}

/**
 * A demo page opened with ?device=webgpu (demos/web/common/device.mjs) ran on the device: its
 * badge says webgpu, and no fallback to the cpu was posted or shown.
 */
export async function assertRanOn(page, demo) {
  assert.equal(await page.textContent('#device-used'), demo.device);
  assert.deepEqual(demo.fallbacks, []);
  assert.equal(demo.device, 'webgpu');
  assert.equal(await page.isHidden('#notice'), true);
}
