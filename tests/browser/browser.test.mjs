// Browser test: headless Chromium (Debian's /usr/bin/chromium driven by playwright-core) loads
// tests/browser/train.html from web/server.mjs, once cross-origin isolated (COOP/COEP: the facade
// must pick threaded-simd with more than one thread) and once under /plain/ without those headers
// (it must fall back to simd). Both pages train a small MLP in a module Worker; the losses must fall.
// The /plain/ run also loads the package from a non-root base URL (/plain/dist/...).
//
// Run: node --test tests/browser/     Screenshots: test-output/browser/*.png
// Skipped only when /usr/bin/chromium is missing and CI is not set; under CI that is a failure.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { startServer } from '../../web/server.mjs';
import { ROOT, skipReason, launchBrowser, openPage } from './helpers.mjs';

const OUT = join(ROOT, 'test-output', 'browser');
const RESULT_TIMEOUT_MS = 90_000;

let server;
let browser;
const requests = [];  // [method, path, status] as the server saw them

before(async () => {
  if (skipReason) return;
  mkdirSync(OUT, { recursive: true });
  server = await startServer({ root: ROOT, port: 0, onRequest: (m, p, s) => requests.push([m, p, s]) });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await server?.close();
});

/** Opens path in a fresh context; returns { result, error, problems } once the page reports. */
async function runPage(path, screenshotName) {
  const { context, page, problems } = await openPage(browser);
  try {
    await page.goto(server.url + path.replace(/^\//, ''), { waitUntil: 'load' });
    // Poll on a timer: headless Chromium's virtual time and rAF polling are unreliable with workers.
    await page.waitForFunction(() => window.__result !== undefined || window.__error !== undefined, null,
      { timeout: RESULT_TIMEOUT_MS, polling: 100 });
    const { result, error } = await page.evaluate(() => ({ result: window.__result, error: window.__error }));
    await page.screenshot({ path: join(OUT, screenshotName), fullPage: true });
    return { result, error, problems };
  } catch (e) {
    await page.screenshot({ path: join(OUT, screenshotName), fullPage: true }).catch(() => {});
    throw new Error(`${path}: ${e.message}\nconsole/page problems so far:\n${problems.join('\n') || '(none)'}`);
  } finally {
    await context.close();
  }
}

function assertTrained(result) {
  const { losses } = result;
  assert.ok(Array.isArray(losses) && losses.length >= 10, `expected at least 10 losses, got ${JSON.stringify(losses)}`);
  assert.ok(losses.every(Number.isFinite), `non-finite loss in ${losses}`);
  assert.ok(losses.at(-1) < losses[0], `loss did not fall: first ${losses[0]}, last ${losses.at(-1)}`);
  assert.ok(losses.at(-1) < 0.5 * losses[0], `loss fell by less than half: ${losses[0]} -> ${losses.at(-1)}`);
  assert.equal(result.liveTensorsAfter, 0, 'tensors leaked in the worker (fc.memory().liveTensors after disposing all)');
}

const fetched = (path) => requests.some(([m, p, s]) => m === 'GET' && p === path && s === 200);

test('cross-origin isolated page: threaded-simd with more than one thread trains', { skip: skipReason }, async () => {
  const { result, error, problems } = await runPage('/tests/browser/train.html', 'isolated.png');
  assert.equal(error, undefined, `page reported: ${error}`);
  assert.deepEqual(problems, []);
  assert.equal(result.crossOriginIsolated, true);
  assert.equal(result.variant, 'threaded-simd');
  assert.ok(result.threads > 1, `fc.threads is ${result.threads} (hardwareConcurrency ${result.hardwareConcurrency})`);
  assertTrained(result);
  assert.ok(fetched('/dist/wasm/fucina-threaded-simd.wasm'), 'threaded-simd wasm was not fetched from /dist/wasm/');
  assert.ok(fetched('/dist/wasm/fucina-threaded-simd.mjs'), 'threaded-simd glue was not fetched from /dist/wasm/');
});

// Chromium 156 has relaxed SIMD, so auto's one-thread build there is relaxed-simd (init() checks
// with WebAssembly.validate).
test('page without COOP/COEP (under /plain/): falls back to the one-thread relaxed-simd build and trains', { skip: skipReason }, async () => {
  const { result, error, problems } = await runPage('/plain/tests/browser/train.html', 'plain.png');
  assert.equal(error, undefined, `page reported: ${error}`);
  assert.deepEqual(problems, []);
  assert.equal(result.crossOriginIsolated, false);
  assert.equal(result.variant, 'relaxed-simd');
  assert.equal(result.threads, 1);
  assertTrained(result);
  assert.ok(fetched('/plain/dist/wasm/fucina-relaxed-simd.wasm'), 'relaxed-simd wasm was not fetched from the /plain/ base URL');
  assert.ok(!requests.some(([, p]) => p.startsWith('/plain/dist/wasm/fucina-threaded-simd')), 'the plain page loaded threaded-simd files');
});
