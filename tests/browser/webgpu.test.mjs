// The webgpu device in headless Chromium, WebGPU over SwiftShader (WEBGPU_FLAGS): the page
// (tests/browser/webgpu.html) trains one MLP on the cpu and on the webgpu device, from a cross-
// origin isolated page (threaded-simd: the engine's memory is shared, which the shim copies out
// of before a write) and from a plain one (simd). The two loss curves must agree. And
// webgpu_parity.html replays every op's parity cases on the device, held to docs/webgpu-ops.md
// as tests/js/webgpu_parity.test.mjs holds them in Node.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from '../../web/server.mjs';
import { skipReason, launchBrowser, openPage, ROOT } from './helpers.mjs';
import { families, opList, webgpuMatrix } from '../js/parity_families.mjs';
import { judge } from '../js/webgpu_parity.mjs';

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

// Opens a page in both variants (path, then under /plain/: not cross-origin isolated) and waits
// for its window.__result, which check(result) judges; the page must report no error or problem.
function inBothVariants(pagePath, name, timeout, check) {
  for (const [prefix, variant] of [['', 'threaded-simd'], ['plain/', 'relaxed-simd']]) {  // Chromium has relaxed SIMD
    test(`webgpu in Chromium (${variant}): ${name}`, { skip: skipReason }, async () => {
      const { context, page, problems } = await openPage(browser);
      try {
        await page.goto(`${server.url}${prefix}${pagePath}`, { waitUntil: 'load' });
        await page.waitForFunction(() => window.__result !== undefined || window.__error !== undefined, null,
          { timeout, polling: 100 });
        const { result, error } = await page.evaluate(() => ({ result: window.__result, error: window.__error }));
        assert.equal(error, undefined, `page reported: ${error}`);
        assert.deepEqual(problems, []);
        assert.equal(result.variant, variant);
        check(result);
      } finally {
        await context.close();
      }
    });
  }
}

inBothVariants('tests/browser/webgpu.html', "the device's losses are the cpu's (an MLP, a CNN, a GPT)", 120_000, (result) => {
  assert.ok(result.cpu[11] < result.cpu[0], 'the MLP\'s loss falls');
  assert.equal(result.cpu.length, 18);  // 12 MLP steps, then 3 of the CNN and the GPT
  result.webgpu.forEach((l, i) => assert.ok(Math.abs(l - result.cpu[i]) <= 1e-4 * (1 + Math.abs(result.cpu[i])),
    `step ${i}: webgpu ${l}, cpu ${result.cpu[i]}`));
  assert.ok(result.counters.dispatches > 0 && result.counters.pipelinesMade > 0);
});

inBothVariants(`tests/browser/webgpu_parity.html?families=${families().map(([f]) => f).join(',')}`,
  'every op does on the device what docs/webgpu-ops.md says, the parity fixtures replayed there', 300_000, (result) => {
    const rows = webgpuMatrix();
    assert.deepEqual(opList().map((op) => judge(op, rows.get(op).status, result.outcomes[op])).filter(Boolean), []);
  });
