// The timing protocol of ../shared/BENCHMARKS.md, shared by every JavaScript benchmark (fucina's
// bench.mjs and the peers in peers/): 10 warm-up steps, then 50 steps timed one by one; 5 + 20
// when the second warm-up step takes more than 400 ms (reduced_protocol: true), 2 + 5 for the
// multi-second steps of W5, W8 and Scale; --quick is a smoke test of 2 + 3. Inference steps (W6, W7) follow the same
// protocol. Plus the workloads' FLOP counts and the command line they all share.
// Browser-safe (bench/browser-worker.mjs imports it): Node's os module only where Node runs it.
const os = globalThis.process?.versions?.node ? await import('node:os') : undefined;

export const WORKLOADS = ['w1', 'w2', 'w3', 'w3-ckpt', 'w3-frozen-f32', 'w3-frozen-f16', 'w3-frozen-q8', 'w4-1024', 'w4-fc'];
/** Scale (bench/README.md, "Scale"): W3's step at d_model 128/256/512 × 2/4/8 blocks, named
 * w3-d<D>-l<L> (head dim 32, MLP 4·D, batch 16 × 128 predicted tokens), timed by the 2 + 5 protocol
 * of long steps; bench/scale.mjs runs the grid. */
export const SCALE_D = [128, 256, 512], SCALE_LAYERS = [2, 4, 8];
export const SCALE_WORKLOADS = SCALE_D.flatMap((d) => SCALE_LAYERS.map((l) => `w3-d${d}-l${l}`));
/** W2 channels last (Note [Channels last]): nn.Cnn's channelsLast, images {batch, h, w, c}; run
 * on request (--workloads). */
export const LAYOUT_WORKLOADS = ['w2-nhwc'];
/** fucina's own variants (the frozen-base W3, W2 channels last, and Scale's above), which the
 * peers do not run. */
export const OWN_WORKLOADS = ['w3-frozen-f32', 'w3-frozen-f16', 'w3-frozen-q8', ...LAYOUT_WORKLOADS, ...SCALE_WORKLOADS];
/** W5 (bench/README.md): LoRA fine-tuning of a GPT-2-small-shaped model, base f32/f16/q8_0, with
 * and without checkpointed blocks. Seconds a step: run on request (--workloads), not by default. */
export const W5_WORKLOADS = ['w5-f32', 'w5-f16', 'w5-q8', 'w5-f32-ckpt', 'w5-f16-ckpt', 'w5-q8-ckpt'];
/** W8 (bench/README.md): LoRA fine-tuning of Llama-family models (fc.nn.Llama, random weights),
 * q8_0 base, checkpointed blocks: w8-q8-ckpt a SmolLM2-135M-shaped model, w8-qwen05-q8-ckpt a
 * Qwen2.5-0.5B-shaped one. Seconds a step: run on request (--workloads), not by default.
 * (loraWorkload also reads W5's grammar for them, w8[-qwen05]-f32|f16|q8[-ckpt].) */
export const W8_WORKLOADS = ['w8-q8-ckpt', 'w8-qwen05-q8-ckpt'];
/** Inference (bench/README.md): W6 the W2 CNN's forward on batch 1 and 64 (images/s), W7 greedy
 * generation of 128 tokens after a 64-token prompt by W3's model (tokens/s). Not in
 * BENCHMARKS.md; run on request (--workloads). */
export const INFERENCE_WORKLOADS = ['w6-b1', 'w6-b64', 'w7'];
export const ALL_WORKLOADS = [...WORKLOADS, ...LAYOUT_WORKLOADS, ...W5_WORKLOADS, ...W8_WORKLOADS, ...INFERENCE_WORKLOADS,
  ...SCALE_WORKLOADS];
/** { d, layers } of a w3-d<D>-l<L> workload, else undefined. */
export function scaleShape(workload) {
  const m = /^w3-d(\d+)-l(\d+)$/.exec(workload);
  return m ? { d: Number(m[1]), layers: Number(m[2]) } : undefined;
}
export const W6_BATCH = { 'w6-b1': 1, 'w6-b64': 64 };
export const W7_PROMPT = 64, W7_NEW = 128;
/** W5's model: GPT-2 small's config.json fields, and its batch. */
export const W5_CONFIG = { n_embd: 768, n_layer: 12, n_head: 12, n_positions: 1024, vocab_size: 50257 };
export const W5_BATCH = 4, W5_T = 128;
/** W8's models: the config.json fields of SmolLM2-135M and Qwen2.5-0.5B (their published
 * config.json, less what fc.nn.Llama does not read), the twins of bench.cpp's kSmolLm2Config and
 * kQwen05Config. Batch and T are W5's. */
export const W8_MODELS = {
  smollm2: { model_type: 'llama', vocab_size: 49152, hidden_size: 576, num_hidden_layers: 30, num_attention_heads: 9,
    num_key_value_heads: 3, intermediate_size: 1536, max_position_embeddings: 8192, rms_norm_eps: 1e-5, rope_theta: 100000,
    tie_word_embeddings: true },
  qwen05: { model_type: 'qwen2', vocab_size: 151936, hidden_size: 896, num_hidden_layers: 24, num_attention_heads: 14,
    num_key_value_heads: 2, intermediate_size: 4864, max_position_embeddings: 32768, rms_norm_eps: 1e-6, rope_theta: 1000000,
    tie_word_embeddings: true },
};
/** W8's adapters: every linear layer of a block, as W5's c_attn/c_proj/c_fc are GPT-2's. */
export const W8_TARGETS = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'];

/** W5 and W8: { model ('gpt2', 'smollm2', 'qwen05'), dtype (f32, f16, q8_0), ckpt } of
 * w5-<dtype>[-ckpt], w8-<dtype>[-ckpt] or w8-qwen05-<dtype>[-ckpt] (dtype f32, f16 or q8), else
 * undefined (bench.cpp's loraWorkload). */
export function loraWorkload(workload) {
  const m = /^w(5|8)-(?:(qwen05)-)?(f32|f16|q8)(-ckpt)?$/.exec(workload);
  if (!m || (m[1] === '5' && m[2])) return undefined;
  return { model: m[1] === '5' ? 'gpt2' : m[2] ?? 'smollm2', dtype: m[3] === 'q8' ? 'q8_0' : m[3], ckpt: Boolean(m[4]) };
}

/** GEMM shapes of W4: [M, K, N]. */
export const GEMM_SHAPES = { 'w4-1024': [1024, 1024, 1024], 'w4-fc': [128, 784, 512] };

const W3_T = 128, W3_D = 128, W3_LAYERS = 2, W3_BATCH = 16;
/** W3's parameters at width d with `layers` blocks: embeddings, 12d² + 13d a block, the final LayerNorm. */
const w3Params = (d, layers) => 256 * d + W3_T * d + layers * (12 * d * d + 13 * d) + 2 * d;
/** One W3 step's GFLOP at width d: 6 per parameter and token (the position table excepted: a
 * lookup), plus QKᵀ and AV, ×3 with backward. */
const w3Gflop = (d, layers) =>
  (6 * W3_BATCH * W3_T * (w3Params(d, layers) - W3_T * d) + 3 * layers * W3_BATCH * 2 * (2 * W3_T * W3_T * d)) / 1e9;
/** FLOPs of one image through W2's CNN (forward). */
const CNN_FORWARD = 2 * (26 * 26 * 32 * 9 + 11 * 11 * 64 * 288 + 1600 * 128 + 128 * 10);

/** W6's images/s and W7's tokens/s at a median step time (the other workloads: none). */
export function rates(workload, medianMs) {
  if (workload in W6_BATCH) return { images_per_s: W6_BATCH[workload] / (medianMs / 1e3) };
  return workload === 'w7' ? { tokens_per_s: W7_NEW / (medianMs / 1e3) } : {};
}

/** FLOPs of one step, in GFLOP (as BENCHMARKS.md counts them). */
export function gflopPerStep(workload) {
  if (workload === 'w1') return (6 * 128 * (784 * 512 + 512 * 256 + 256 * 10)) / 1e9;
  if (workload === 'w2' || workload === 'w2-nhwc') return (3 * 64 * CNN_FORWARD) / 1e9;
  if (workload in W6_BATCH) return (W6_BATCH[workload] * CNN_FORWARD) / 1e9;
  if (workload === 'w7') {  // nominal: one position per token through the projections and the tied
    // head (attention and the reruns past the context left out): compare it only as a time
    const weights = W3_LAYERS * (W3_D * 3 * W3_D + W3_D * W3_D + 2 * W3_D * 4 * W3_D) + 256 * W3_D;
    return (2 * weights * (W7_PROMPT + W7_NEW - 1)) / 1e9;
  }
  const scale = scaleShape(workload);
  if (scale) return w3Gflop(scale.d, scale.layers);
  if (workload.startsWith('w3')) return w3Gflop(W3_D, W3_LAYERS);  // the frozen variants: the same nominal work (bench.cpp)
  const lora = loraWorkload(workload);
  if (lora) {  // forward, and the input gradients again (bench.cpp's loraGflop)
    const tokens = W5_BATCH * W5_T;
    const gflop = (blockMatrices, head, layers, attentionWidth) =>
      (2 * (2 * tokens * (blockMatrices + head) + layers * W5_BATCH * 2 * (2 * W5_T * W5_T * attentionWidth))) / 1e9;
    if (lora.model === 'gpt2') {
      const d = W5_CONFIG.n_embd, layers = W5_CONFIG.n_layer, inner = 4 * d;
      return gflop(layers * (d * 3 * d + d * d + 2 * d * inner), d * W5_CONFIG.vocab_size, layers, d);
    }
    const c = W8_MODELS[lora.model], d = c.hidden_size, hd = d / c.num_attention_heads;
    const q = c.num_attention_heads * hd, kv = c.num_key_value_heads * hd;
    return gflop(c.num_hidden_layers * (d * (q + 2 * kv) + q * d + 3 * d * c.intermediate_size), d * c.vocab_size,
      c.num_hidden_layers, q);
  }
  const [m, k, n] = GEMM_SHAPES[workload];
  return (2 * m * n * k) / 1e9;
}

/** The FLOPs of one step that any implementation must do, in GFLOP: gflopPerStep's nominal count
 * (BENCHMARKS.md: 6 per weight and sample) less the gradient of the first layer's input, which
 * nobody computes because the input is data (W1: 25% of the nominal count; W2: conv1's, 2.4%). The
 * fractions of peak are quoted on it: the nominal count makes W1 run above the FMA peak. */
export function requiredGflopPerStep(workload) {
  if (workload === 'w1') return gflopPerStep(workload) - (2 * 128 * 784 * 512) / 1e9;
  if (workload === 'w2' || workload === 'w2-nhwc') return gflopPerStep(workload) - (64 * 2 * 26 * 26 * 32 * 9) / 1e9;
  return gflopPerStep(workload);
}

/** Node 20 compiles relaxed SIMD behind a V8 flag (on by default from Node 22): turns it on, in Node
 * only, where `supported()` (a WebAssembly.validate of a relaxed opcode) says the engine lacks it.
 * Call it before the module that needs it compiles. */
export async function enableRelaxedSimd(supported) {
  if (!supported() && globalThis.process?.versions?.node) (await import('node:v8')).setFlagsFromString('--experimental-wasm-relaxed-simd');
}

/** The wasm variants a bench program runs, and its impl name for one: `<host>-st` (simd), `-rx`
 * (relaxed-simd) or `-mt` (threaded-simd); host is "fucina-wasm" (Node) or "chromium-wasm". Only
 * threaded-simd runs more than one thread. */
export const BENCH_VARIANTS = ['threaded-simd', 'simd', 'relaxed-simd'];
export function wasmImpl(host, variant, threads) {
  if (!BENCH_VARIANTS.includes(variant)) throw new Error(`--variant is one of ${BENCH_VARIANTS.join(', ')}`);
  if (variant !== 'threaded-simd' && threads !== 1) throw new Error(`the ${variant} variant runs on one thread`);
  return `${host}-${{ simd: 'st', 'relaxed-simd': 'rx' }[variant] ?? 'mt'}`;
}

/** Parses `--workload W --threads N [--json] [--quick]` plus any extra `--name value` flags. */
export function parseArgs(argv, extraFlags = []) {
  const args = { threads: 1, json: false, quick: false };
  for (let i = 0; i < argv.length; ++i) {
    const a = argv[i];
    if (a === '--json') args.json = true;
    else if (a === '--quick') args.quick = true;
    else if (a === '--workload') args.workload = argv[++i];
    else if (a === '--threads') args.threads = Number(argv[++i]);
    else if (extraFlags.includes(a.slice(2))) args[a.slice(2)] = argv[++i];
    else throw new Error(`unknown argument ${a}`);
  }
  if (!ALL_WORKLOADS.includes(args.workload)) throw new Error(`--workload is one of ${ALL_WORKLOADS.join(', ')}`);
  if (!Number.isInteger(args.threads) || args.threads < 1) throw new Error('--threads must be an integer >= 1');
  if (args.warmup !== undefined) {  // a warm-up count, for the programs that take one
    args.warmup = Number(args.warmup);
    if (!Number.isInteger(args.warmup) || args.warmup < 0) throw new Error('--warmup must be an integer >= 0');
  }
  return args;
}

const median = (sorted) => {
  const n = sorted.length;
  return n % 2 ? sorted[(n - 1) / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
};

function timeOne(step) {
  const t0 = performance.now();
  step();
  return performance.now() - t0;
}

/** Runs the protocol on a synchronous step(); afterWarmup() runs between warm-up and timing.
 * warmupSteps replaces the warm-up count (bench/browser.mjs --warmup: a study of the engine's
 * tier-up, not the protocol; the record's warmup field says what ran). */
export function runProtocol(step, { quick = false, afterWarmup = () => {}, long = false, warmupSteps } = {}) {
  let warmup = quick ? 2 : 10, steps = quick ? 3 : 50, reduced = false;
  timeOne(step);
  if (timeOne(step) > 400 && !quick) [warmup, steps, reduced] = [5, 20, true];
  if (long && !quick) [warmup, steps, reduced] = [2, 5, true];  // W5, W8: seconds a step
  if (warmupSteps !== undefined) warmup = Math.max(2, warmupSteps);
  for (let i = 2; i < warmup; ++i) step();
  afterWarmup();
  const ms = [];
  for (let i = 0; i < steps; ++i) ms.push(timeOne(step));
  ms.sort((a, b) => a - b);
  return { median_ms: median(ms), min_ms: ms[0], max_ms: ms[ms.length - 1], reduced_protocol: reduced, warmup, steps };
}

/** The JSON record of one configuration (extra fields after the documented ones). */
export function record(workload, impl, threads, timing, load, extra = {}) {
  const { median_ms, min_ms, max_ms, reduced_protocol, warmup, steps } = timing;
  return { workload, impl, threads, median_ms, min_ms, max_ms,
    gflops_median: gflopPerStep(workload) / (median_ms / 1e3), reduced_protocol, load_avg_1m: load,
    warmup, steps, ...rates(workload, median_ms), ...extra };
}

/** The 1-minute load average where the host has one (Node), else undefined (a page). */
export const loadAverage1m = () => os?.loadavg()[0];

/** Prints r as a JSON line or a table line. */
export function report(r, json) {
  if (json) {
    console.log(JSON.stringify(r));
    return;
  }
  const mib = (b) => (b / 1048576).toFixed(1);
  const heap = r.heap_bytes !== undefined ? `  wasm heap ${mib(r.heap_bytes)} MiB` : '';
  if (r.error) {
    console.log(`${r.workload.padEnd(8)} ${r.impl} ${r.threads} thr  fails: ${r.error}${heap}`);
    return;
  }
  const memory = (r.peak_bytes !== undefined ? `  peak ${mib(r.peak_bytes)} MiB` : '') + heap +
    (r.setup_ms !== undefined ? `  setup ${(r.setup_ms / 1e3).toFixed(1)} s` : '');
  const rate = r.images_per_s ? `  ${r.images_per_s.toFixed(1)} images/s` : r.tokens_per_s ? `  ${r.tokens_per_s.toFixed(1)} tokens/s` : '';
  console.log(`${r.workload.padEnd(8)} ${r.impl} ${r.threads} thr  median ${r.median_ms.toFixed(3).padStart(9)} ms` +
    `  (min ${r.min_ms.toFixed(3)}, max ${r.max_ms.toFixed(3)})  ${r.gflops_median.toFixed(2).padStart(7)} GFLOP/s${rate}${memory}` +
    `  load ${r.load_avg_1m.toFixed(2)}${r.reduced_protocol ? '  [reduced protocol]' : ''}${r.note ? `  ${r.note}` : ''}`);
}

/** A fixed pseudo-random pattern of n integers in [0, classes) (xorshift, as bench.cpp). */
export function labelPattern(n, classes) {
  const out = new Array(n);
  let s = 0x9e3779b97f4a7c15n;
  const mask = (1n << 64n) - 1n;
  for (let i = 0; i < n; ++i) {
    s ^= (s << 13n) & mask;
    s ^= s >> 7n;
    s ^= (s << 17n) & mask;
    out[i] = Number(s % BigInt(classes));
  }
  return out;
}
