// The benchmark driver behind `npm run bench` and `npm run bench:compare`: runs every
// configuration (implementation × threads × workload) of ../shared/BENCHMARKS.md in a FRESH
// process, the whole set `--rounds` times (default 2) interleaved, and prints per workload the
// median over rounds of each configuration's median ms/step, and the ratios between them.
//   node bench/run.mjs [--compare] [--json] [--quick] [--workloads w1,w4-1024] [--rounds N]
//                      [--configs fucina-native:1,fucina-wasm-st:1,torch:2]
//   node bench/run.mjs --webgpu [--workloads w1,w4-1024] [--steps N] [--json]
// The default workloads are W1-W4; W5 (w5-f32,w5-f16,w5-q8 and their -ckpt variants: seconds a
// step), W8 (w8-q8-ckpt, w8-qwen05-q8-ckpt: LoRA on Llama-family models) and the inference
// workloads W6 (w6-b1, w6-b64) and W7 run when --workloads names them.
// PyTorch runs W5 as full fine-tuning (f32, every parameter) beside w5-f32 and w5-f32-ckpt, W8's
// full fine-tuning of the f32 SmolLM2-shaped model beside w8-q8-ckpt (torch plain, torch-ckpt
// with checkpointed blocks; no peer for the Qwen shape), and W7 by two loops: torch (no KV cache)
// and torch-kv; TF.js runs neither W5, W7 nor W8.
// Every round also measures one core's multiply-add ceilings in fresh processes (fucina_bench
// --peak: the FMA peak of the ISA the GEMM dispatches to, AVX2's and AVX-512's; bench/peak.mjs:
// wasm SIMD128's mul+add peak), and the table quotes each configuration's speed as a share of its
// ceiling times its threads, on the FLOPs a step must do (protocol.mjs's requiredGflopPerStep).
// The ceiling: native fucina's dispatched ISA's; SIMD128's for wasm and TF.js; for PyTorch the best
// this CPU has, since its BLAS picks its own kernels. A PyTorch run on Debian's reference BLAS, or
// one whose CPU time over wall time exceeds its threads (its BLAS ran threads it was not given), is
// marked not comparable and left out of the ratios (torch_bench.py, "comparable", "cpu_per_wall").
// --browser adds the package in headless Chromium (bench/browser.mjs: threaded-simd on 1 and 2
// threads, simd), each run in a fresh browser. --compare adds the peers that are installed:
// TensorFlow.js's wasm backend (peers/tfjs_bench.mjs) and PyTorch (peers/torch_bench.py). --configs keeps only the named impl:threads pairs (W5's
// steps take seconds: a run of every configuration takes most of an hour). --json prints one JSON object per run (with its "round")
// and one per configuration with "round": "median". It builds nothing: the binaries come from
// scripts/build (build/native, or $FUCINA_BUILD_DIR) and scripts/build-wasm (dist/).
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ALL_WORKLOADS, OWN_WORKLOADS, WORKLOADS, gflopPerStep, loraWorkload, rates, requiredGflopPerStep } from './protocol.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const argv = process.argv.slice(2);
const flag = (name) => argv.includes(name);
const option = (name, fallback) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : fallback);
// --webgpu: the workloads on the webgpu device in Node instead (bench/webgpu.mjs: ms/step and the
// device's per-step counters; [--workloads ...] [--steps N] [--json]).
if (argv.includes('--webgpu')) {
  const run = spawnSync(process.execPath, [join(dirname(fileURLToPath(import.meta.url)), 'webgpu.mjs'),
    ...argv.filter((a) => a !== '--webgpu')], { stdio: 'inherit' });
  process.exit(run.status ?? 1);
}
const known = ['--compare', '--browser', '--json', '--quick', '--workloads', '--rounds', '--configs'];
for (let i = 0; i < argv.length; ++i) {
  if (!known.includes(argv[i])) {
    console.error(`bench: unknown argument ${argv[i]}\nusage: node bench/run.mjs [--compare] [--browser] [--json] [--quick] [--workloads ${ALL_WORKLOADS.join(',')}] [--rounds N] [--configs impl:threads,...]`);
    process.exit(2);
  }
  if (['--workloads', '--rounds', '--configs'].includes(argv[i])) ++i;
}
const json = flag('--json'), quick = flag('--quick'), compare = flag('--compare');
const rounds = Number(option('--rounds', '2'));
const workloads = option('--workloads', WORKLOADS.join(',')).split(',');
for (const w of workloads) {
  if (!ALL_WORKLOADS.includes(w)) {
    console.error(`bench: unknown workload ${w} (use ${ALL_WORKLOADS.join(', ')})`);
    process.exit(2);
  }
}
const say = (msg) => console.error(msg);  // progress and notes on stderr, results on stdout
const notes = [];  // peers skipped: repeated under the table
const note = (msg) => (notes.push(msg), say(`bench: ${msg}`));

// ---- what can run
const nativeBin = join(resolve(root, process.env.FUCINA_BUILD_DIR ?? 'build/native'), 'bench', 'fucina_bench');
const missing = [];
if (!existsSync(nativeBin)) missing.push(`${nativeBin} (run scripts/build)`);
for (const v of ['threaded-simd', 'simd'])
  if (!existsSync(join(root, 'dist', 'wasm', `fucina-${v}.wasm`))) missing.push(`dist/wasm/fucina-${v}.wasm (run scripts/build-wasm)`);
if (missing.length) {
  say(`bench: missing ${missing.join(', ')}.\nBuild first: scripts/build && scripts/build-wasm (bench builds nothing itself).`);
  process.exit(1);
}

const node = process.execPath, benchMjs = join(root, 'bench', 'bench.mjs');
const configs = [  // impl, threads, the command minus the workload flags, and which workloads
  { impl: 'fucina-native', threads: 1, cmd: [nativeBin, '--threads', '1'] },
  { impl: 'fucina-native', threads: 2, cmd: [nativeBin, '--threads', '2'] },
  { impl: 'fucina-wasm-mt', threads: 1, cmd: [node, benchMjs, '--variant', 'threaded-simd', '--threads', '1'] },
  { impl: 'fucina-wasm-mt', threads: 2, cmd: [node, benchMjs, '--variant', 'threaded-simd', '--threads', '2'] },
  { impl: 'fucina-wasm-st', threads: 1, cmd: [node, benchMjs, '--variant', 'simd', '--threads', '1'] },
  { impl: 'fucina-wasm-rx', threads: 1, cmd: [node, benchMjs, '--variant', 'relaxed-simd', '--threads', '1'] },
];
if (flag('--browser')) {  // the same package in headless Chromium (bench/browser.mjs), fresh browser per run
  const browserMjs = join(root, 'bench', 'browser.mjs');
  configs.push({ impl: 'chromium-wasm-mt', threads: 1, cmd: [node, browserMjs, '--variant', 'threaded-simd', '--threads', '1'] },
    { impl: 'chromium-wasm-mt', threads: 2, cmd: [node, browserMjs, '--variant', 'threaded-simd', '--threads', '2'] },
    { impl: 'chromium-wasm-st', threads: 1, cmd: [node, browserMjs, '--variant', 'simd', '--threads', '1'] },
    { impl: 'chromium-wasm-rx', threads: 1, cmd: [node, browserMjs, '--variant', 'relaxed-simd', '--threads', '1'] });
}
if (compare) {
  if (existsSync(join(root, 'node_modules', '@tensorflow', 'tfjs-backend-wasm'))) {
    const tfjs = [node, join(root, 'bench', 'peers', 'tfjs_bench.mjs'), '--threads', '1'];
    configs.push({ impl: 'tfjs-wasm', threads: 1, cmd: tfjs, only: (w) => w !== 'w3-ckpt' && !OWN_WORKLOADS.includes(w) && !loraWorkload(w) && w !== 'w7' },
      { impl: 'tfjs-wasm-xt', threads: 1, cmd: [...tfjs, '--grads', 'xt'], only: (w) => w === 'w1' },
      { impl: 'tfjs-wasm-onehot', threads: 1, cmd: [...tfjs, '--embedding', 'onehot'], only: (w) => w === 'w3' });
    if (workloads.includes('w7')) note('tfjs-wasm does not run W7: it has no KV-cached generation (bench/README.md)');
  } else {
    note('TensorFlow.js is not installed (npm install adds the devDependencies); tfjs-wasm skipped');
  }
  // Debian's python3-torch lives in /usr/bin/python3, which a pyenv or venv `python3` on PATH hides.
  const python = ['python3', '/usr/bin/python3']
    .find((py) => spawnSync(py, ['-c', 'import torch'], { stdio: 'ignore' }).status === 0);
  if (python) {
    const torch = [python, join(root, 'bench', 'peers', 'torch_bench.py')];
    // W5: torch fine-tunes every parameter of the f32 model (its w5 / w5-ckpt) beside fucina's
    // LoRA on the f32 base; the 16-bit and q8_0 bases have no torch counterpart. W8: beside
    // fucina's LoRA on the q8_0 checkpointed SmolLM2 shape, torch's full fine-tuning of the same
    // f32 model, plain (torch: what a PyTorch user runs) and checkpointed (torch-ckpt).
    const LORA_TORCH = { 'w5-f32': 'w5', 'w5-f32-ckpt': 'w5-ckpt', 'w8-q8-ckpt': 'w8' };
    const peer = (w) => !OWN_WORKLOADS.includes(w) && (!loraWorkload(w) || w in LORA_TORCH);
    const as = (w) => LORA_TORCH[w] ?? w;
    const w8ckpt = (w) => w === 'w8-q8-ckpt';
    configs.push({ impl: 'torch', threads: 1, cmd: [...torch, '--threads', '1'], only: peer, as },
      { impl: 'torch', threads: 2, cmd: [...torch, '--threads', '2'], only: peer, as },
      { impl: 'torch-ckpt', threads: 1, cmd: [...torch, '--threads', '1'], only: w8ckpt, as: () => 'w8-ckpt' },
      { impl: 'torch-ckpt', threads: 2, cmd: [...torch, '--threads', '2'], only: w8ckpt, as: () => 'w8-ckpt' },
      // W7's second loop: keys and values cached (torch's impl is then the naive loop)
      { impl: 'torch-kv', threads: 1, cmd: [...torch, '--threads', '1', '--generate', 'kv'], only: (w) => w === 'w7' },
      { impl: 'torch-kv', threads: 2, cmd: [...torch, '--threads', '2', '--generate', 'kv'], only: (w) => w === 'w7' });
  } else {
    note('PyTorch is not installed (neither python3 nor /usr/bin/python3 imports torch; Debian: apt-get install python3-torch); torch skipped');
  }
}

const wanted = option('--configs', '').split(',').filter(Boolean);
if (wanted.length) {
  const names = configs.map((c) => `${c.impl}:${c.threads}`);
  const unknown = wanted.filter((w) => !names.includes(w));
  if (unknown.length) {
    console.error(`bench: unknown configuration ${unknown.join(', ')} (use ${names.join(', ')})`);
    process.exit(2);
  }
  configs.splice(0, configs.length, ...configs.filter((c) => wanted.includes(`${c.impl}:${c.threads}`)));
}

// ---- run: rounds × workloads × configurations, each in a fresh process
function runOne(config, workload) {
  const args = [...config.cmd.slice(1), '--workload', config.as ? config.as(workload) : workload, '--json', ...(quick ? ['--quick'] : [])];
  const p = spawnSync(config.cmd[0], args, { cwd: root, encoding: 'utf8', timeout: 30 * 60 * 1000, env: { ...process.env, OMP_WAIT_POLICY: 'PASSIVE' } });
  const line = (p.stdout ?? '').split('\n').find((l) => l.startsWith('{'));
  // Under fucina's name (torch's w5 and w8 are full fine-tuning) and the configuration's impl
  // (torch-ckpt runs torch_bench.py, which calls itself torch).
  if (line) return { ...JSON.parse(line), workload, impl: config.impl };
  const why = p.error?.message ?? (p.stderr ?? '').trim().split('\n').pop() ?? `exit ${p.status}`;
  return { workload, impl: config.impl, threads: config.threads, error: why || `exit ${p.status}` };
}

// One core's ceilings, in GFLOP/s: { native (the dispatched ISA), avx2, avx512, simd128 } per round.
function measurePeaks() {
  const read = (cmd, args) => {
    const p = spawnSync(cmd, args, { cwd: root, encoding: 'utf8', timeout: 5 * 60 * 1000 });
    const line = (p.stdout ?? '').split('\n').find((l) => l.startsWith('{'));
    return line ? JSON.parse(line) : {};
  };
  const native = read(nativeBin, ['--peak', '--json']), wasm = read(node, [join(root, 'bench', 'peak.mjs'), '--json']);
  return { isa: native.isa, native: native.peak_gflops, avx2: native.avx2_fma_gflops, avx512: native.avx512_fma_gflops,
    simd128: wasm.peak_gflops, relaxed: wasm.relaxed_madd_gflops };
}
const peakRounds = [];

const runs = [];
for (let round = 1; round <= rounds; ++round) {
  say(`bench: round ${round}/${rounds}  multiply-add peaks`);
  peakRounds.push(measurePeaks());
  if (json) console.log(JSON.stringify({ peaks: peakRounds.at(-1), round }));
  for (const workload of workloads) {
    for (const config of configs) {
      if (config.only && !config.only(workload)) continue;
      say(`bench: round ${round}/${rounds}  ${workload}  ${config.impl} ${config.threads} thr`);
      const r = { ...runOne(config, workload), round };
      runs.push(r);
      if (json) console.log(JSON.stringify(r));
    }
  }
}

// ---- medians of rounds
const median = (v) => {
  const s = [...v].sort((a, b) => a - b), n = s.length;
  return n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
};
const peaks = {};
for (const k of ['native', 'avx2', 'avx512', 'simd128', 'relaxed']) {
  const v = peakRounds.map((p) => p[k]).filter((x) => x > 0);
  if (v.length) peaks[k] = median(v);
}
peaks.isa = peakRounds.find((p) => p.isa)?.isa;
// The ceiling a configuration's GFLOP/s is quoted against: one core's, times its threads.
// The relaxed-simd builds' ceiling is relaxed_madd's.
const RELAXED_IMPLS = ['fucina-wasm-rx', 'chromium-wasm-rx'];
const WASM_IMPLS = ['fucina-wasm-mt', 'fucina-wasm-st', 'chromium-wasm-mt', 'chromium-wasm-st', 'tfjs-wasm', 'tfjs-wasm-xt', 'tfjs-wasm-onehot'];
const ceilingOf = (impl) => (impl === 'fucina-native' ? peaks.native : RELAXED_IMPLS.includes(impl) ? peaks.relaxed
  : WASM_IMPLS.includes(impl) ? peaks.simd128 : Math.max(peaks.avx2 ?? 0, peaks.avx512 ?? 0) || undefined);
const key = (r) => `${r.workload}|${r.impl}|${r.threads}`;
const groups = new Map();
for (const r of runs) groups.set(key(r), [...(groups.get(key(r)) ?? []), r]);
const summary = new Map();
for (const [k, rs] of groups) {
  const ok = rs.filter((r) => !r.error);
  const [workload, impl] = k.split('|');
  const base = { workload, impl, threads: rs[0].threads, round: 'median', rounds: ok.length };
  if (!ok.length) {
    summary.set(k, { ...base, error: rs[0].error });
    continue;
  }
  const m = median(ok.map((r) => r.median_ms));
  const s = { ...base, median_ms: m, min_ms: Math.min(...ok.map((r) => r.min_ms)), max_ms: Math.max(...ok.map((r) => r.max_ms)),
    // Each run's own rate: torch's W5 and W8 do full fine-tuning's work, not LoRA's.
    gflops_median: median(ok.map((r) => r.gflops_median)), ...rates(workload, m),
    reduced_protocol: ok.some((r) => r.reduced_protocol), load_avg_1m: ok.map((r) => r.load_avg_1m),
    isa: ok[0].isa ?? (WASM_IMPLS.includes(impl) ? 'SIMD128' : undefined), comparable: ok.every((r) => r.comparable !== false),
    not_comparable_why: ok.find((r) => r.not_comparable_why)?.not_comparable_why };
  const ceiling = ceilingOf(impl);
  if (ceiling) s.peak_fraction = requiredGflopPerStep(workload) / (m / 1e3) / (ceiling * s.threads);
  for (const f of ['peak_bytes', 'step_bytes', 'allocs_per_step', 'saved_bytes', 'rss_increase_bytes', 'heap_bytes', 'setup_ms', 'cpu_per_wall'])
    if (ok[0][f] !== undefined) s[f] = median(ok.map((r) => r[f]));
  summary.set(k, s);
}
if (json) {
  console.log(JSON.stringify({ peaks, round: 'median' }));
  for (const s of summary.values()) console.log(JSON.stringify(s));
  process.exit(0);
}

// ---- the table
const get = (workload, impl, threads) => summary.get(`${workload}|${impl}|${threads}`);
const comparable = (workload, impl, threads) => {  // a summary that may enter a ratio
  const s = get(workload, impl, threads);
  return s?.comparable ? s : undefined;
};
const gf = (v) => (v ? v.toFixed(1) : '?');
console.log(`one core's multiply-add peak (GFLOP/s, CPU time, median of ${peakRounds.length}): ${peaks.isa ?? 'native'} (dispatched) ${gf(peaks.native)}` +
  `, AVX2 FMA ${gf(peaks.avx2)}, AVX-512 FMA ${gf(peaks.avx512)}, wasm SIMD128 mul+add ${gf(peaks.simd128)}, relaxed_madd ${gf(peaks.relaxed)}`);
const mib = (b) => `${(b / 1048576).toFixed(1)} MiB`;
// [numerator, denominator, what the ratio says]: ms/step ratios, < 1 means the first is faster.
const RATIOS = [
  [['fucina-native', 2], ['fucina-native', 1], 'native 2 thr / 1 thr'],
  [['fucina-wasm-mt', 2], ['fucina-wasm-mt', 1], 'wasm-mt 2 thr / 1 thr'],
  [['fucina-wasm-st', 1], ['fucina-native', 1], 'wasm-st / native (1 thr)'],
  [['fucina-wasm-mt', 1], ['fucina-wasm-st', 1], 'wasm-mt 1 thr / wasm-st'],
  [['fucina-wasm-rx', 1], ['fucina-wasm-st', 1], 'wasm-rx / wasm-st'],
  [['chromium-wasm-rx', 1], ['chromium-wasm-st', 1], 'chromium-rx / chromium-st'],
  [['chromium-wasm-mt', 2], ['chromium-wasm-mt', 1], 'chromium-mt 2 thr / 1 thr'],
  [['chromium-wasm-mt', 2], ['chromium-wasm-st', 1], 'chromium-mt 2 thr / chromium-st'],
  [['chromium-wasm-mt', 1], ['chromium-wasm-st', 1], 'chromium-mt 1 thr / chromium-st'],
  [['chromium-wasm-st', 1], ['fucina-wasm-st', 1], 'chromium-st / Node wasm-st'],
  [['fucina-native', 1], ['torch', 1], 'native / torch (1 thr)'],
  [['fucina-native', 2], ['torch', 2], 'native / torch (2 thr)'],
  [['fucina-native', 1], ['torch-ckpt', 1], 'native / torch-ckpt (1 thr)'],
  [['fucina-native', 2], ['torch-ckpt', 2], 'native / torch-ckpt (2 thr)'],
  [['fucina-native', 1], ['torch-kv', 1], 'native / torch-kv (1 thr)'],
  [['fucina-native', 2], ['torch-kv', 2], 'native / torch-kv (2 thr)'],
  [['fucina-wasm-st', 1], ['tfjs-wasm', 1], 'wasm-st / tfjs-wasm'],
  [['fucina-wasm-rx', 1], ['tfjs-wasm', 1], 'wasm-rx / tfjs-wasm'],
  [['fucina-wasm-st', 1], ['tfjs-wasm-xt', 1], 'wasm-st / tfjs-wasm explicit-transpose'],
  [['fucina-wasm-st', 1], ['tfjs-wasm-onehot', 1], 'wasm-st / tfjs-wasm one-hot embedding'],
  [['fucina-wasm-st', 1], ['torch', 1], 'wasm-st / torch native (1 thr)'],
];
const NAMES = { w1: 'W1 mlp', w2: 'W2 cnn', w3: 'W3 gpt', 'w3-ckpt': 'W3 gpt, checkpointed blocks',
  'w5-f32': 'W5 LoRA on GPT-2 small, f32 base (torch: full fine-tuning)', 'w5-f16': 'W5 LoRA, f16 base', 'w5-q8': 'W5 LoRA, q8_0 base',
  'w5-f32-ckpt': 'W5 LoRA, f32 base, checkpointed (torch: full fine-tuning, checkpointed)',
  'w5-f16-ckpt': 'W5 LoRA, f16 base, checkpointed', 'w5-q8-ckpt': 'W5 LoRA, q8_0 base, checkpointed',
  'w8-q8-ckpt': 'W8 LoRA on a SmolLM2-135M shape, q8_0 base, checkpointed (torch: full fine-tuning of the f32 model; torch-ckpt: checkpointed)',
  'w8-qwen05-q8-ckpt': 'W8 LoRA on a Qwen2.5-0.5B shape, q8_0 base, checkpointed',
  'w4-1024': 'W4 GEMM 1024x1024x1024', 'w4-fc': 'W4 GEMM 128x784x512',
  'w6-b1': 'W6 CNN inference, batch 1', 'w6-b64': 'W6 CNN inference, batch 64',
  'w7': 'W7 tiny-GPT generation, 64-token prompt + 128 greedy tokens (torch: no KV cache; torch-kv: cached)' };
for (const w of workloads) {
  console.log(`\n${NAMES[w] ?? w}  (${gflopPerStep(w).toFixed(3)} GFLOP per step; medians of ${rounds} rounds${quick ? ', --quick' : ''})`);
  console.log(`  ${'impl'.padEnd(17)} thr  ${'median ms'.padStart(10)}  ${'min-max ms'.padStart(19)}  ${'GFLOP/s'.padStart(8)}  of peak  ${'isa'.padEnd(9)}  memory                       load 1m`);
  for (const s of summary.values()) {
    if (s.workload !== w) continue;
    const head = `  ${s.impl.padEnd(17)} ${String(s.threads).padStart(3)}  `;
    if (s.error) {
      console.log(`${head}fails: ${s.error}`);
      continue;
    }
    const memory = [s.step_bytes !== undefined ? `step ${mib(s.step_bytes)}` : s.peak_bytes !== undefined ? `peak ${mib(s.peak_bytes)}` : '',
      s.saved_bytes !== undefined && (s.workload.startsWith('w3') || loraWorkload(s.workload)) ? `saved ${mib(s.saved_bytes)}` : '',
      s.heap_bytes !== undefined && loraWorkload(s.workload) ? `heap ${mib(s.heap_bytes)}` : ''].filter(Boolean).join(', ');
    const rate = s.images_per_s ? `  ${s.images_per_s.toFixed(1)} images/s` : s.tokens_per_s ? `  ${s.tokens_per_s.toFixed(1)} tokens/s` : '';
    console.log(`${head}${s.median_ms.toFixed(2).padStart(10)}  ${`${s.min_ms.toFixed(2)}-${s.max_ms.toFixed(2)}`.padStart(19)}  ` +
      `${s.gflops_median.toFixed(2).padStart(8)}  ${(s.peak_fraction ? `${(100 * s.peak_fraction).toFixed(1)}%` : '').padStart(7)}  ` +
      `${(s.isa ?? '').padEnd(9)}  ${memory.padEnd(27)}  ${s.load_avg_1m.map((l) => l.toFixed(2)).join(' ')}` +
      `${s.reduced_protocol ? '  [reduced protocol]' : ''}${s.cpu_per_wall !== undefined ? `  cpu/wall ${s.cpu_per_wall.toFixed(2)}` : ''}` +
      `${s.comparable ? '' : `  [not comparable: ${s.not_comparable_why ?? 'see its runs'}; no ratios]`}${rate}`);
  }
  const ratios = [];
  for (const [[ai, at], [bi, bt], label] of RATIOS) {
    const a = comparable(w, ai, at), b = comparable(w, bi, bt);
    if (a?.median_ms && b?.median_ms) ratios.push(`${label} = ${(a.median_ms / b.median_ms).toFixed(2)}`);
  }
  if (w === 'w3-ckpt') {  // checkpointing's cost in time and its saving in memory, per implementation
    for (const s of summary.values()) {
      const plain = get('w3', s.impl, s.threads);
      if (s.workload !== 'w3-ckpt' || !s.median_ms || !plain?.median_ms) continue;
      const saving = ['saved_bytes', 'step_bytes'].filter((b) => plain[b] && s[b])
        .map((b) => `, ${b} ${(plain[b] / s[b]).toFixed(2)}x smaller`).join('');
      ratios.push(`${s.impl} ${s.threads} thr checkpointed / plain time = ${(s.median_ms / plain.median_ms).toFixed(2)}${saving}`);
    }
  }
  if (ratios.length) console.log(`  ratios of ms/step (< 1: the first is faster):\n    ${ratios.join('\n    ')}`);
}
if (notes.length) console.log(`\n${notes.map((n) => `note: ${n}`).join('\n')}`);
