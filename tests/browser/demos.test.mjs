// The browser demos (demos/web, served by `npm run demos`) in headless Chromium: the landing
// page, the dataset route, the Fashion-MNIST classifier (MLP, then briefly the CNN, in one page
// so the data loads once) and the 2-D playground. Each page trains for a fixed number of steps
// through its test hook (?autostart=1&steps=N, window.__demo); the loss must fall, Fashion's test
// accuracy must beat chance, and nothing may be logged as an error.
//
// Run: node --test tests/browser/     Screenshots: test-output/demos/*.png

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { startDemosServer } from '../../demos/web/server.mjs';
import { ROOT, skipReason, launchBrowser, openPage } from './helpers.mjs';

const OUT = join(ROOT, 'test-output', 'demos');
const TIMEOUT_MS = 120_000;

let server;
let browser;

before(async () => {
  server = await startDemosServer({ port: 0 });
  if (skipReason) return;
  mkdirSync(OUT, { recursive: true });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await server?.close();
});

/** HEAD with the path sent as is (fetch would resolve '..' away): resolves to the status code. */
const statusOf = (path) => new Promise((resolve, reject) => {
  request({ host: '127.0.0.1', port: server.port, path, method: 'HEAD' }, (res) => { res.resume(); resolve(res.statusCode); })
    .on('error', reject).end();
});

test('the demos server serves the four Fashion-MNIST files and nothing else outside the repository', async () => {
  for (const f of ['train-images-idx3-ubyte.gz', 'train-labels-idx1-ubyte.gz', 't10k-images-idx3-ubyte.gz', 't10k-labels-idx1-ubyte.gz'])
    assert.equal(await statusOf(`/data/fashion-mnist/${f}`), 200, f);
  for (const path of ['/data/fashion-mnist/', '/data/fashion-mnist/README', '/data/fashion-mnist//t10k-labels-idx1-ubyte.gz',
    '/data/fashion-mnist/t10k-labels-idx1-ubyte.gz/', '/data/fashion-mnist/../../../etc/passwd', '/data/fashion-mnist/%2e%2e/x',
    '/data/fashion-mnist/..%2ft10k-labels-idx1-ubyte.gz', '/data/', '/../../etc/passwd'])
    assert.ok([403, 404].includes(await statusOf(path)), `${path} was served`);
  assert.equal(await statusOf('/'), 302);
});

/** Opens path, waits until window.__demo reports done (or an error); returns { page, demo, problems }. */
async function openDemo(path, viewport) {
  const opened = await openPage(browser, viewport);
  await opened.page.goto(server.url + path, { waitUntil: 'load' });
  return { ...opened, demo: await waitDone(opened) };
}

async function waitDone({ page, problems }) {
  try {
    // Poll on a timer: headless Chromium's rAF polling is unreliable with busy workers.
    await page.waitForFunction(() => window.__demo?.done || window.__demo?.errors.length > 0, null,
      { timeout: TIMEOUT_MS, polling: 100 });
  } catch (e) {
    throw new Error(`${e.message}\nconsole/page problems so far:\n${problems.join('\n') || '(none)'}`);
  }
  return page.evaluate(() => JSON.parse(JSON.stringify(window.__demo)));
}

function assertClean(demo, problems) {
  assert.deepEqual(demo.errors, []);
  assert.deepEqual(problems, []);
}

/** The mean of the last few losses is below the mean of the first few (batch losses are noisy). */
function assertLossFell(losses, steps, factor) {
  assert.equal(losses.length > 0 && losses.every(Number.isFinite), true, `losses: ${losses}`);
  const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const k = Math.min(5, Math.floor(losses.length / 3));
  const [first, last] = [mean(losses.slice(0, k)), mean(losses.slice(-k))];
  assert.ok(last < factor * first, `loss did not fall enough over ${steps} steps: ${first} -> ${last}`);
}

test('landing page links the three demos', { skip: skipReason }, async () => {
  const { context, page, problems } = await openPage(browser, { width: 900, height: 560 });
  try {
    const response = await page.goto(server.url, { waitUntil: 'load' });
    assert.ok(response.url().endsWith('/demos/web/'), response.url());
    const links = await page.$$eval('a.card', (as) => as.map((a) => a.getAttribute('href')));
    assert.deepEqual(links, ['fashion/', 'gpt/', 'playground/']);
    assert.equal(await page.evaluate(() => crossOriginIsolated), true);
    await page.screenshot({ path: join(OUT, 'index.png'), fullPage: true });
    assert.deepEqual(problems, []);
  } finally {
    await context.close();
  }
});

test('Fashion-MNIST: the MLP, then the CNN, train in the worker', { skip: skipReason }, async () => {
  const steps = 30;
  const opened = await openDemo(`demos/web/fashion/?autostart=1&steps=${steps}&eval=10`, { width: 900, height: 600 });
  const { context, page, problems } = opened;
  try {
    let { demo } = opened;
    assertClean(demo, problems);
    assert.equal(demo.variant, 'threaded-simd');
    assert.ok(demo.threads > 1, `threads ${demo.threads}`);
    assert.equal(demo.model, 'mlp');
    assert.equal(demo.losses.length, steps);
    assertLossFell(demo.losses, steps, 0.6);
    assert.equal(demo.accuracies.length, 4);  // before training, and every 10 steps
    assert.ok(demo.accuracies.at(-1) > 0.5, `MLP test accuracy ${demo.accuracies.at(-1)} after ${steps} steps`);
    await page.screenshot({ path: join(OUT, 'fashion-mlp.png'), fullPage: true });

    const cnnSteps = 6;
    await page.evaluate((n) => window.__demo.run('cnn', n), cnnSteps);
    demo = await waitDone(opened);
    assertClean(demo, problems);
    assert.equal(demo.model, 'cnn');
    assert.equal(demo.losses.length, cnnSteps);
    assertLossFell(demo.losses, cnnSteps, 0.9);
    assert.ok(demo.accuracies.at(-1) > 0.2, `CNN test accuracy ${demo.accuracies.at(-1)} after ${cnnSteps} steps (chance is 0.1)`);
    await page.screenshot({ path: join(OUT, 'fashion-cnn.png'), fullPage: true });
  } finally {
    await context.close();
  }
});

test('2-D playground: the MLP separates the spirals', { skip: skipReason }, async () => {
  const steps = 300;
  const { context, page, demo, problems } = await openDemo(`demos/web/playground/?autostart=1&steps=${steps}`,
    { width: 900, height: 560 });
  try {
    assertClean(demo, problems);
    assert.equal(demo.steps, steps);
    assertLossFell(demo.losses, steps, 0.5);
    assert.ok(demo.accuracy > 0.6, `train accuracy ${demo.accuracy}`);
    await page.screenshot({ path: join(OUT, 'playground.png'), fullPage: true });
  } finally {
    await context.close();
  }
});
