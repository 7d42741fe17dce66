// bench/browser.mjs must not rot: one quick run of each wasm variant in headless Chromium prints a
// well-formed record, the threaded build on two threads in a cross-origin isolated page. Only the
// shape is checked, never a timing. Skipped as the other browser tests are (helpers.mjs).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { ROOT, skipReason } from './helpers.mjs';

for (const [variant, threads, impl] of [['threaded-simd', 2, 'chromium-wasm-mt'], ['simd', 1, 'chromium-wasm-st']]) {
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
