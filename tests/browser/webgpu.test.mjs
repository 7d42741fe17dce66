// The webgpu device in headless Chromium, WebGPU over SwiftShader (WEBGPU_FLAGS): the page
// (tests/browser/webgpu.html) trains one MLP on the cpu and on the webgpu device, from a cross-
// origin isolated page (threaded-simd: the engine's memory is shared, which the shim copies out
// of before a write) and from a plain one (simd). The two loss curves must agree.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from '../../web/server.mjs';
import { skipReason, launchBrowser, openPage, ROOT } from './helpers.mjs';

let server;
let browser;

before(async () => {
  if (skipReason) return;
  server = await startServer({ root: ROOT, port: 0 });
  browser = await launchBrowser({ webgpu: true });
});

after(async () => {
  await browser?.close();
  await server?.close();
});

for (const [path, variant] of [['/tests/browser/webgpu.html', 'threaded-simd'], ['/plain/tests/browser/webgpu.html', 'simd']]) {
  test(`webgpu in Chromium (${variant}): the device's losses are the cpu's (an MLP, a CNN, a GPT)`, { skip: skipReason }, async () => {
    const { context, page, problems } = await openPage(browser);
    try {
      await page.goto(server.url + path.replace(/^\//, ''), { waitUntil: 'load' });
      await page.waitForFunction(() => window.__result !== undefined || window.__error !== undefined, null,
        { timeout: 120_000, polling: 100 });
      const { result, error } = await page.evaluate(() => ({ result: window.__result, error: window.__error }));
      assert.equal(error, undefined, `page reported: ${error}`);
      assert.deepEqual(problems, []);
      assert.equal(result.variant, variant);
      assert.ok(result.cpu[11] < result.cpu[0], 'the MLP\'s loss falls');
      assert.equal(result.cpu.length, 18);  // 12 MLP steps, then 3 of the CNN and the GPT
      result.webgpu.forEach((l, i) => assert.ok(Math.abs(l - result.cpu[i]) <= 1e-4 * (1 + Math.abs(result.cpu[i])),
        `step ${i}: webgpu ${l}, cpu ${result.cpu[i]}`));
      assert.ok(result.counters.dispatches > 0 && result.counters.pipelinesMade > 0);
    } finally {
      await context.close();
    }
  });
}
