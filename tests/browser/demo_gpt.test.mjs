// Browser test of the Tiny GPT demo (demos/web/gpt/): headless Chromium loads the page from the
// demos server with ?autostart=1&steps=N, so it trains N steps with block checkpointing off and
// stops; the test then switches checkpointing on and trains N more. The loss must fall, the peak
// tensor memory of a step must be lower with checkpointing on, samples must appear, no tensors
// may leak across steps, and nothing may be logged as an error. Then the page with ?device=webgpu
// in a browser with WebGPU (over SwiftShader): it trains on the device or, where the device lacks
// a kernel the model needs, says so and trains on the cpu; either way the loss falls.
//
// Run: node --test tests/browser/demo_gpt.test.mjs      Screenshot: test-output/demos/gpt.png
// docs/img/gpt.png is that screenshot after 600 + 600 steps, on an idle machine:
//   FUCINA_DEMO_STEPS=600 node --test tests/browser/demo_gpt.test.mjs

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, skipReason, launchBrowser, openPage, assertRanOn } from './helpers.mjs';
import { startDemosServer } from '../../demos/web/server.mjs';

const OUT = join(ROOT, 'test-output', 'demos');
// Per run: one run with checkpointing off, one with it on.
const STEPS = Number(process.env.FUCINA_DEMO_STEPS ?? 6);
const TIMEOUT_MS = 120_000;  // a generous bound for a busy machine; the waits are on step counts

let server;
let browser;

/** Waits until the page has stopped after `steps` steps (or reported an error). */
const stopped = (page, steps) => page.waitForFunction((n) => {
  const d = window.__demo;
  return d && (d.errors.length > 0 || (d.steps >= n && !d.running));
}, steps, { timeout: TIMEOUT_MS, polling: 100 });
const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;

before(async () => {
  if (skipReason) return;
  mkdirSync(OUT, { recursive: true });
  server = await startDemosServer({ port: 0 });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await server?.close();
});

test('Tiny GPT: trains, samples, and checkpointing lowers the peak memory', { skip: skipReason }, async () => {
  const { context, page, problems } = await openPage(browser, { width: 1200, height: 900 });
  const state = () => page.evaluate(() => window.__demo);
  try {
    await page.goto(`${server.url}demos/web/gpt/?autostart=1&steps=${STEPS}&sampleEvery=${STEPS}`, { waitUntil: 'load' });
    await stopped(page, STEPS);
    assert.deepEqual((await state()).errors, []);
    assert.equal(await page.isChecked('#checkpoint'), false);

    await page.click('#checkpoint');
    await page.click('#train');
    await stopped(page, 2 * STEPS);
    // The last sample (at step 2·STEPS) arrives just after the step that triggers it.
    await page.waitForFunction((n) => window.__demo.samples.some((s) => s.step === n), 2 * STEPS, { timeout: TIMEOUT_MS, polling: 100 });
    const d = await state();
    await page.screenshot({ path: join(OUT, 'gpt.png'), fullPage: true });

    assert.deepEqual(d.errors, []);
    assert.deepEqual(problems, []);
    assert.equal(d.variant, 'threaded-simd', 'the demos server is cross-origin isolated');
    assert.ok(d.threads > 1, `threads ${d.threads}`);
    assert.equal(d.device, 'cpu');
    assert.equal(await page.textContent('#device-used'), 'cpu');
    assert.equal(await page.isDisabled('#device option[value="webgpu"]'), true, 'no adapter without the WebGPU flags');

    assert.equal(d.losses.length, 2 * STEPS);
    assert.ok(d.losses.every(Number.isFinite), `non-finite loss in ${d.losses}`);
    assert.ok(Math.abs(d.losses[0] - Math.log(256)) < 0.3, `first loss ${d.losses[0]}, expected about ln 256`);
    assert.ok(mean(d.losses.slice(-3)) < mean(d.losses.slice(0, 3)) - 0.3, `loss did not fall: ${d.losses.map((l) => l.toFixed(3))}`);

    const { off, on } = d.peaks;
    assert.ok(off && on, `peaks ${JSON.stringify(d.peaks)}`);
    assert.ok(on.peakBytes < off.peakBytes, `peak with checkpointing on ${on.peakBytes} >= off ${off.peakBytes}`);
    // The figures README.md and demos/web/README.md quote (and test-output/demos/gpt.png, the
    // screenshot docs/img/gpt.png is copied from).
    console.log(`peak tensor memory per step: checkpointing off ${(off.peakBytes / 2 ** 20).toFixed(1)} MiB, ` +
      `on ${(on.peakBytes / 2 ** 20).toFixed(1)} MiB (parameters and optimizer state ${(on.liveBytes / 2 ** 20).toFixed(1)} MiB); ` +
      `median step ${[...d.stepMs].sort((a, b) => a - b)[STEPS].toFixed(0)} ms, samples ${d.samples.map((s) => s.ms.toFixed(0)).join(", ")} ms`);

    // Samples at step 0 (on ready), STEPS and 2·STEPS, each a continuation of the prompt.
    assert.deepEqual(d.samples.map((s) => s.step), [0, STEPS, 2 * STEPS]);
    assert.ok(d.samples.every((s) => s.text.length > 0));
    // The same tensors live after every step (the model, its gradients and the AdamW state).
    assert.ok(d.liveTensors.slice(1).every((n) => n === d.liveTensors[1]), `live tensors per step ${d.liveTensors}`);
  } catch (e) {
    await page.screenshot({ path: join(OUT, 'gpt.png'), fullPage: true }).catch(() => {});
    throw new Error(`${e.message}\nconsole/page problems so far:\n${problems.join('\n') || '(none)'}`);
  } finally {
    await context.close();
  }
});

test('Tiny GPT on webgpu: trains and samples on the device', { skip: skipReason }, async () => {
  const steps = 6;
  const gpuBrowser = await launchBrowser({ webgpu: true });
  const { page, problems } = await openPage(gpuBrowser, { width: 1200, height: 900 });
  try {
    await page.goto(`${server.url}demos/web/gpt/?device=webgpu&autostart=1&steps=${steps}&sampleEvery=${steps}&length=8`, { waitUntil: 'load' });
    await stopped(page, steps);
    const d = await page.evaluate(() => window.__demo);
    await page.screenshot({ path: join(OUT, 'gpt-webgpu.png'), fullPage: true });
    assert.deepEqual(d.errors, []);
    assert.deepEqual(problems, []);
    assert.equal(d.webgpuMissing, '');
    await assertRanOn(page, d);
    assert.equal(d.losses.length, steps);
    assert.ok(mean(d.losses.slice(-3)) < mean(d.losses.slice(0, 3)) - 0.1, `loss did not fall: ${d.losses.map((l) => l.toFixed(3))}`);
    console.log(`Tiny GPT, device webgpu: trained on ${d.device}, ` +
      `loss ${d.losses[0].toFixed(3)} -> ${d.losses.at(-1).toFixed(3)}`);
  } catch (e) {
    throw new Error(`${e.message}\nconsole/page problems so far:\n${problems.join('\n') || '(none)'}`);
  } finally {
    await gpuBrowser.close();
  }
});
