// Times ONE configuration of ../shared/BENCHMARKS.md's workloads on the built npm package (wasm),
// with the protocol of protocol.mjs, and prints a table line or (--json) one JSON object:
//   node bench/bench.mjs --workload w1|w2|w3|w3-ckpt|w3-frozen-f32|w3-frozen-f16|w3-frozen-q8|w4-1024|w4-fc
//                        --variant threaded-simd|simd|relaxed-simd [--threads N] [--json] [--quick]
//                        [--warmup N]   (N warm-up steps instead of the protocol's: to study V8's tier-up)
//                        (or w5-f32|w5-f16|w5-q8 and their -ckpt variants, or w8-q8-ckpt|w8-qwen05-q8-ckpt,
//                        or w6-b1|w6-b64|w7,
//                        or Scale's w3-d<D>-l<L>: W3 at d_model D with L blocks, as bench/bench.cpp)
// w3-frozen-<dtype>: W3 with the projections frozen as that dtype (nn.Gpt.freezeProjections),
// training the embeddings and LayerNorms, as bench/bench.cpp. w5-<dtype>[-ckpt]: LoRA on a
// GPT-2-small-shaped fc.nn.Gpt2 with its base stored as that dtype, as bench/bench.cpp. w8-*: LoRA
// on all seven projections of a SmolLM2-135M- or (w8-qwen05-*) Qwen2.5-0.5B-shaped fc.nn.Llama, q8_0
// base, checkpointed, as bench/bench.cpp; heap_bytes is the wasm memory's high-water mark (a
// failed run reports it too: how far the heap got).
// w6-b<batch>: W2's CNN for inference, convolutions prepared (fc.prepareConv2dWeights,
// conv2dPreparedRelu) and Linears packed (fc.packRhs, dotPacked) once before
// timing; a step is one forward under fc.noGrad to the logits read back (toArray). w7: greedy
// generation of 128 tokens after a 64-token prompt by fc.nn.Gpt (generate, KV cache); a step is
// the generate call. As bench/bench.cpp.
// impl is "fucina-wasm-mt" (threaded-simd, N threads), "fucina-wasm-st" (simd, one thread) or
// "fucina-wasm-rx" (relaxed-simd, one thread).
// The models are fc.nn's (web/nn.mjs), the same definitions tests/js/models.test.mjs trains.
import { init, relaxedSimdSupported } from 'fucina';
import { enableRelaxedSimd, loadAverage1m, parseArgs, report, wasmImpl } from './protocol.mjs';
import { timeWorkload } from './workloads.mjs';

const args = parseArgs(process.argv.slice(2), ['variant', 'warmup']);
const variant = args.variant ?? 'threaded-simd';
const impl = wasmImpl('fucina-wasm', variant, args.threads);
if (variant === 'relaxed-simd') await enableRelaxedSimd(relaxedSimdSupported);
const load = loadAverage1m();
const fc = await init({ variant, threads: variant === 'threaded-simd' ? args.threads : undefined });

let result;
try {
  result = timeWorkload(fc, args.workload, impl, { quick: args.quick, warmupSteps: args.warmup, load });
} catch (e) {
  result = { workload: args.workload, impl, threads: fc.threads, error: String(e.message ?? e).split('\n')[0], load_avg_1m: load };
  try {
    result.heap_bytes = fc.memory().heapBytes;  // how far the wasm memory grew before the failure
  } catch {
    // the module may be unusable after an abort
  }
}
report(result, args.json);
process.exit(result.error ? 1 : 0);  // the threaded variant's workers would keep Node alive
