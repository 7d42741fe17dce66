// bench/browser.mjs must not rot: one quick run of each wasm variant in headless Chromium prints a
// well-formed record, the threaded build on two threads in a cross-origin isolated page. Nor may
// the page of npm run bench:webgpu: headless with WebGPU over SwiftShader, it prints W4's and W1's
// lines on the cpu and on the device. Only the shape is checked, never a timing. Skipped as the
// other browser tests are (helpers.mjs).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { ROOT, skipReason } from './helpers.mjs';

for (const [variant, threads, impl] of [['threaded-simd', 2, 'chromium-wasm-mt'], ['simd', 1, 'chromium-wasm-st'], ['relaxed-simd', 1, 'chromium-wasm-rx']]) {
  test(`bench/browser.mjs times W4 in Chromium: ${variant}, ${threads} thread(s)`, { skip: skipReason }, () => {
    const out = execFileSync(process.execPath, [join(ROOT, 'bench', 'browser.mjs'), '--workload', 'w4-fc', '--variant', variant,
      '--threads', String(threads), '--quick', '--json'], { encoding: 'utf8' });
    const r = JSON.parse(out.trim());
    assert.equal(r.error, undefined, out);
    assert.equal(r.impl, impl);
    assert.equal(r.threads, threads);
    assert.equal(r.crossOriginIsolated, true);
    assert.match(r.user_agent, /HeadlessChrome/);
    for (const f of ['median_ms', 'min_ms', 'max_ms', 'gflops_median', 'peak_bytes'])
      assert.equal(typeof r[f], 'number', `${f} in ${out}`);
    assert.ok(r.min_ms <= r.median_ms && r.median_ms <= r.max_ms);
  });
}

test('npm run bench:webgpu -- --headless prints W4 and W1 on the wasm build and on webgpu, with the counters', { skip: skipReason }, () => {
  const out = execFileSync(process.execPath, [join(ROOT, 'bench', 'webgpu-browser.mjs'), '--headless', '--workloads', 'w4-fc,w1',
    '--steps', '1'], { encoding: 'utf8' });
  const lines = out.trim().split('\n');
  assert.match(lines[0], /^adapter: .*swiftshader.* \(the CPU: its times mean nothing\); engine: wasm threaded-simd, \d+ threads?$/i);
  const time = String.raw`[\d.]+ ms/step, [\d.]+ GFLOP/s`;
  // A step in steady state makes nothing and moves nothing between host and device.
  const counters = String.raw`per step: [1-9]\d* dispatches in [\d.]+ submits, 0 B up, 0 B down, 0 pipelines, 0 buffers made; \d+ B live`;
  for (const w of ['w4-fc', 'w1']) {
    assert.match(out, new RegExp(`^${w} cpu \\(wasm threaded-simd, \\d+ threads?\\): ${time}$`, 'm'), out);
    assert.match(out, new RegExp(`^${w} webgpu \\(.*swiftshader.*\\): ${time}; ${counters}$`, 'mi'), out);
  }
  assert.equal(lines.at(-1), 'done');
});
