// bench/ must not rot: one quick W1 run of bench/bench.mjs (the simd variant) prints one JSON line
// with the documented fields (and --warmup replaces its warm-up count), ab-paired.mjs prints its
// comparison line, run.mjs keeps only the configurations --configs names, the inference workloads
// (W6, W7) run natively and in wasm with their rates, and every configuration is quoted as a
// fraction of its multiply-add ceiling. Only the shape is checked, never a timing.
import { test } from 'node:test';
import { execFileSync, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import assert from 'node:assert/strict';

test('bench.mjs --quick --json prints one well-formed record', () => {
  const script = fileURLToPath(new URL('../../bench/bench.mjs', import.meta.url));
  const out = execFileSync(process.execPath, [script, '--workload', 'w1', '--variant', 'simd', '--quick', '--json'], { encoding: 'utf8' });
  const lines = out.trim().split('\n');
  assert.equal(lines.length, 1, out);
  const r = JSON.parse(lines[0]);
  assert.equal(r.workload, 'w1');
  assert.equal(r.impl, 'fucina-wasm-st');
  assert.equal(r.threads, 1);
  for (const f of ['median_ms', 'min_ms', 'max_ms', 'gflops_median', 'load_avg_1m', 'peak_bytes'])
    assert.equal(typeof r[f], 'number', `${f} in ${lines[0]}`);
  assert.equal(typeof r.reduced_protocol, 'boolean');
  assert.ok(r.min_ms <= r.median_ms && r.median_ms <= r.max_ms);
});

test('ab-paired.mjs compares a checkout with itself in one process, and takes one-thread variants only', () => {
  const script = fileURLToPath(new URL('../../bench/ab-paired.mjs', import.meta.url));
  const root = fileURLToPath(new URL('../..', import.meta.url));
  const run = (variant) => spawnSync(process.execPath, [script, '--before', root, '--after', root, '--variant', variant,
    '--workloads', 'w4-fc', '--rounds', '2', '--steps', '1', '--warmup', '1'], { encoding: 'utf8' });
  const ok = run('simd');
  assert.equal(ok.status, 0, ok.stderr);
  assert.match(ok.stdout.trim(), /^simd +w4-fc +before +[\d.]+ ms +after +[\d.]+ ms +after\/before [\d.]+ \(rounds [\d.]+-[\d.]+\)$/);
  const threaded = run('threaded-simd');
  assert.notEqual(threaded.status, 0);
  assert.match(threaded.stderr, /--variant is simd or relaxed-simd/);
});

test('bench.mjs runs the relaxed-simd variant as fucina-wasm-rx, on one thread only', () => {
  const script = fileURLToPath(new URL('../../bench/bench.mjs', import.meta.url));
  const run = (threads) => spawnSync(process.execPath, [script, '--workload', 'w4-fc', '--variant', 'relaxed-simd', '--threads', threads,
    '--quick', '--json'], { encoding: 'utf8' });
  const ok = run('1');
  assert.equal(ok.status, 0, ok.stderr);
  const r = JSON.parse(ok.stdout.trim());
  assert.equal(r.impl, 'fucina-wasm-rx');
  assert.equal(r.isa, 'relaxed');
  const two = run('2');
  assert.notEqual(two.status, 0);
  assert.match(two.stderr, /the relaxed-simd variant runs on one thread/);
});

test('bench.mjs --warmup N replaces the warm-up count, and the record says what ran', () => {
  const script = fileURLToPath(new URL('../../bench/bench.mjs', import.meta.url));
  const run = (warmup) => spawnSync(process.execPath, [script, '--workload', 'w1', '--variant', 'simd', '--quick', '--json', '--warmup', warmup], { encoding: 'utf8' });
  const ok = run('5');
  assert.equal(ok.status, 0, ok.stderr);
  assert.equal(JSON.parse(ok.stdout.trim()).warmup, 5);
  const bad = run('-1');
  assert.notEqual(bad.status, 0);
  assert.match(bad.stderr, /--warmup must be an integer >= 0/);
  // bench/browser.mjs takes the same flag, checked before any browser starts.
  const browser = fileURLToPath(new URL('../../bench/browser.mjs', import.meta.url));
  const badBrowser = spawnSync(process.execPath, [browser, '--workload', 'w1', '--variant', 'simd', '--warmup', 'x'], { encoding: 'utf8' });
  assert.notEqual(badBrowser.status, 0);
  assert.match(badBrowser.stderr, /--warmup must be an integer >= 0/);
});

test('run.mjs --configs runs only the configurations it names, and refuses unknown ones', () => {
  const script = fileURLToPath(new URL('../../bench/run.mjs', import.meta.url));
  const out = execFileSync(process.execPath, [script, '--workloads', 'w1', '--quick', '--rounds', '1', '--json', '--configs', 'fucina-wasm-st:1'], { encoding: 'utf8' });
  const records = out.trim().split('\n').map((l) => JSON.parse(l)).filter((r) => !r.peaks);
  assert.deepEqual(records.map((r) => `${r.impl}:${r.threads}:${r.round}`), ['fucina-wasm-st:1:1', 'fucina-wasm-st:1:median']);
  const bad = spawnSync(process.execPath, [script, '--workloads', 'w1', '--configs', 'fucina-wasm-st:3'], { encoding: 'utf8' });
  assert.equal(bad.status, 2);
  assert.match(bad.stderr, /unknown configuration fucina-wasm-st:3 \(use fucina-native:1, /);
});

test('run.mjs runs the inference workloads W6 and W7, natively and in wasm, with their rates', () => {
  const script = fileURLToPath(new URL('../../bench/run.mjs', import.meta.url));
  const out = execFileSync(process.execPath, [script, '--workloads', 'w6-b1,w6-b64,w7', '--quick', '--rounds', '1', '--json',
    '--configs', 'fucina-native:1,fucina-wasm-st:1'], { encoding: 'utf8' });
  const runs = out.trim().split('\n').map((l) => JSON.parse(l)).filter((r) => r.round === 1 && !r.peaks);
  assert.deepEqual(runs.map((r) => `${r.workload}:${r.impl}`), ['w6-b1:fucina-native', 'w6-b1:fucina-wasm-st',
    'w6-b64:fucina-native', 'w6-b64:fucina-wasm-st', 'w7:fucina-native', 'w7:fucina-wasm-st']);
  for (const r of runs) {
    assert.equal(r.error, undefined, JSON.stringify(r));
    assert.equal(typeof r.median_ms, 'number');
    const [rate, perStep] = r.workload === 'w7' ? ['tokens_per_s', 128] : ['images_per_s', r.workload === 'w6-b1' ? 1 : 64];
    // 1%: fucina_bench prints median_ms to 4 decimals, and batch 1 takes well under a millisecond
    assert.ok(Math.abs(r[rate] - perStep / (r.median_ms / 1e3)) <= 1e-2 * r[rate], `${rate} in ${JSON.stringify(r)}`);
  }
});

test('run.mjs runs W2 channels last (w2-nhwc), natively and in wasm', () => {
  const script = fileURLToPath(new URL('../../bench/run.mjs', import.meta.url));
  const out = execFileSync(process.execPath, [script, '--workloads', 'w2-nhwc', '--quick', '--rounds', '1', '--json',
    '--configs', 'fucina-native:1,fucina-wasm-st:1'], { encoding: 'utf8' });
  const runs = out.trim().split('\n').map((l) => JSON.parse(l)).filter((r) => r.round === 1 && !r.peaks);
  assert.deepEqual(runs.map((r) => `${r.workload}:${r.impl}`), ['w2-nhwc:fucina-native', 'w2-nhwc:fucina-wasm-st']);
  for (const r of runs) {
    assert.equal(r.error, undefined, JSON.stringify(r));
    assert.equal(r.note, 'NHWC (channels last)');
    assert.ok(r.median_ms > 0 && r.gflops_median > 0, JSON.stringify(r));
  }
});

test('the multiply-add ceilings: fucina_bench --peak, bench/peak.mjs, and run.mjs quoting each run against its own', async () => {
  const { simd128MulAddPeakGflops, relaxedSimdSupported } = await import('../../bench/peak.mjs');
  const wasmPeak = simd128MulAddPeakGflops({ iterations: 200_000, tries: 2 });
  assert.ok(Number.isFinite(wasmPeak) && wasmPeak > 0, String(wasmPeak));
  assert.equal(typeof relaxedSimdSupported(), 'boolean');  // Node 20: false without --experimental-wasm-relaxed-simd
  if (relaxedSimdSupported()) assert.ok(simd128MulAddPeakGflops({ iterations: 200_000, tries: 2, relaxed: true }) > 0);
  const script = fileURLToPath(new URL('../../bench/run.mjs', import.meta.url));
  const out = execFileSync(process.execPath, [script, '--workloads', 'w4-fc', '--quick', '--rounds', '1', '--json',
    '--configs', 'fucina-native:2,fucina-wasm-st:1'], { encoding: 'utf8' });
  const records = out.trim().split('\n').map((l) => JSON.parse(l));
  const peaks = records.find((r) => r.peaks && r.round === 'median').peaks;
  assert.ok(peaks.simd128 > 0 && typeof peaks.isa === 'string', JSON.stringify(peaks));
  if (process.arch === 'x64') assert.ok(peaks.native > 0 && peaks.avx2 > 0, JSON.stringify(peaks));
  // The rate a step needs (W4's required FLOPs are its nominal ones) over ceiling × threads. From
  // median_ms, as run.mjs computes it (fucina_bench prints median_ms and GFLOP/s rounded, to 4 and 3 decimals).
  const { requiredGflopPerStep } = await import('../../bench/protocol.mjs');
  const expected = (s, ceiling) => requiredGflopPerStep('w4-fc') / (s.median_ms / 1e3) / (ceiling * s.threads);
  const summary = (impl) => records.find((r) => r.round === 'median' && r.impl === impl);
  const wasm = summary('fucina-wasm-st');
  assert.equal(wasm.isa, 'SIMD128');
  assert.ok(Math.abs(wasm.peak_fraction - expected(wasm, peaks.simd128)) < 1e-9 * wasm.peak_fraction, JSON.stringify(wasm));
  const native = summary('fucina-native');
  assert.equal(native.isa, peaks.isa);
  if (peaks.native) // two threads: against two cores' ceiling
    assert.ok(Math.abs(native.peak_fraction - expected(native, peaks.native)) < 1e-9 * native.peak_fraction, JSON.stringify(native));
  assert.ok(Math.abs(wasm.peak_fraction * peaks.simd128 - wasm.gflops_median) < 1e-3 * wasm.gflops_median);
});

test('Scale: w3-d<D>-l<L> runs natively and in wasm, with the FLOP count protocol.mjs gives', async () => {
  const { gflopPerStep, requiredGflopPerStep, scaleShape } = await import('../../bench/protocol.mjs');
  // the fractions of peak count what a step must do: W1 without its input layer's gradient
  assert.ok(Math.abs(requiredGflopPerStep('w1') / gflopPerStep('w1') - 0.75) < 0.01);
  assert.equal(requiredGflopPerStep('w3'), gflopPerStep('w3'));
  assert.deepEqual(scaleShape('w3-d256-l4'), { d: 256, layers: 4 });
  assert.equal(scaleShape('w3'), undefined);
  assert.equal(gflopPerStep('w3-d128-l2'), gflopPerStep('w3'));  // W3 is the grid's smallest point
  const script = fileURLToPath(new URL('../../bench/run.mjs', import.meta.url));
  const out = execFileSync(process.execPath, [script, '--workloads', 'w3-d256-l2', '--quick', '--rounds', '1', '--json',
    '--configs', 'fucina-native:1,fucina-wasm-st:1'], { encoding: 'utf8' });
  const runs = out.trim().split('\n').map((l) => JSON.parse(l)).filter((r) => r.round === 1 && !r.peaks);
  assert.deepEqual(runs.map((r) => r.impl), ['fucina-native', 'fucina-wasm-st']);
  for (const r of runs) {
    assert.equal(r.error, undefined, JSON.stringify(r));
    assert.match(r.note, /d_model 256, 2 blocks, 8 heads/);
    // bench.cpp counts the FLOPs from the model's own parameters: the same as protocol.mjs's formula
    assert.ok(Math.abs(r.gflops_median * r.median_ms / 1e3 - gflopPerStep('w3-d256-l2')) < 2e-3 * gflopPerStep('w3-d256-l2'),
      JSON.stringify(r));
  }
});

test('run.mjs --webgpu runs workloads on the device and reports per-step counters; --counters-only counts a q8_0 step', () => {
  const script = fileURLToPath(new URL('../../bench/run.mjs', import.meta.url));
  const bench = (args) => {
    const run = spawnSync(process.execPath, [script, '--webgpu', ...args, '--json'], { encoding: 'utf8', timeout: 300_000 });
    assert.equal(run.status, 0, run.stderr);
    return JSON.parse(run.stdout.trim().split('\n').at(-1));
  };
  const [gemm] = bench(['--workloads', 'w4-fc', '--steps', '1']);
  assert.equal(gemm.workload, 'w4-fc');
  assert.equal(gemm.error, undefined);
  assert.ok(gemm.ms_per_step > 0 && gemm.dispatches >= 1);
  for (const k of ['uploaded_bytes', 'downloaded_bytes', 'pipelines_made', 'buffers_made']) assert.equal(gemm[k], 0, k);
  // W3 with its projections quantized on the device (a step takes a minute on SwiftShader: counted, not run)
  const [q8] = bench(['--workloads', 'w3-frozen-q8', '--steps', '2', '--counters-only']);
  assert.equal(q8.error, undefined, JSON.stringify(q8));
  assert.match(q8.adapter, /dispatches not run/);
  assert.ok(q8.dispatches > 100);
  for (const k of ['uploaded_bytes', 'downloaded_bytes', 'pipelines_made', 'buffers_made']) assert.equal(q8[k], 0, k);
});
