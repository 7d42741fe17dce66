// The workloads' set-up on the npm package's facade, shared by bench/bench.mjs (Node) and
// bench/browser-worker.mjs (a page): for a workload, the step the protocol times and its note, and
// timeWorkload, which times it and makes its record; timeOnDevice and deviceLine, the same step
// on a device, for bench/webgpu.mjs (Node) and bench/webgpu-worker.mjs (a page). The
// models are fc.nn's (web/nn.mjs), the same definitions tests/js/models.test.mjs trains; every
// workload does what bench/bench.cpp does natively.
import { GEMM_SHAPES, W5_BATCH, W5_CONFIG, W5_T, W6_BATCH, W7_NEW, W7_PROMPT, W8_MODELS, W8_TARGETS, gflopPerStep, labelPattern,
  loraWorkload, record, runProtocol, scaleShape } from './protocol.mjs';

/** A training step as the protocol defines it: zero, forward + loss, backward, update, loss.item(). */
const trainingStep = (fc, opt, lossOf) => () => fc.scope(() => {
  opt.zeroGrad();
  const loss = lossOf();
  loss.backward();
  opt.step();
  return void loss.item();
});

/** { step, note?, long? } of a workload on an initialised facade fc. */
export function setUp(fc, workload) {
  if (workload === 'w1') {
    const model = new fc.nn.Mlp({}, 1);
    const opt = fc.optim.sgd(model.parameters(), { lr: 0.01 });
    const x = fc.normal(['batch', 'in'], [128, 784], 0, 1, 2);
    const y = fc.constant(['batch'], [128], labelPattern(128, 10), 'i32');
    return { step: trainingStep(fc, opt, () => model.forward(x).crossEntropy(y, 'class')) };
  }
  if (workload === 'w2' || workload === 'w2-nhwc') {
    const channelsLast = workload === 'w2-nhwc';
    const model = new fc.nn.Cnn({ channelsLast }, 1);
    const opt = fc.optim.sgd(model.parameters(), { lr: 0.01 });
    const x = fc.normal(['batch', 'h', 'w'], [64, 28, 28], 0, 1, 2);
    const y = fc.constant(['batch'], [64], labelPattern(64, 10), 'i32');
    return { step: trainingStep(fc, opt, () => model.forward(x).crossEntropy(y, 'class')),
      note: channelsLast ? 'NHWC (channels last)' : 'NCHW' };
  }
  const frozen = { 'w3-frozen-f32': 'f32', 'w3-frozen-f16': 'f16', 'w3-frozen-q8': 'q8_0' }[workload];
  const scale = scaleShape(workload);
  if (workload === 'w3' || workload === 'w3-ckpt' || frozen || scale) {
    const shape = scale ? { dModel: scale.d, layers: scale.layers, heads: scale.d / 32, mlp: 4 * scale.d } : {};
    const model = new fc.nn.Gpt({ checkpointBlocks: workload === 'w3-ckpt', ...shape }, 1);
    if (frozen) model.freezeProjections(frozen);
    const opt = fc.optim.adamw(model.parameters(), { lr: 1e-3, betas: [0.9, 0.999], eps: 1e-8, weightDecay: 0.01 });
    // 129 tokens per sequence: loss predicts the last 128 from the first 128 (2,048 tokens a step).
    const tokens = fc.constant(['batch', 't'], [16, 129], labelPattern(16 * 129, 256), 'i32');
    const note = frozen ? `projections frozen as ${frozen}, embeddings and LayerNorms trained` : '129 tokens per sequence, 128 predicted';
    if (scale) return { step: trainingStep(fc, opt, () => model.loss(tokens)), long: true,
      note: `d_model ${scale.d}, ${scale.layers} blocks, ${scale.d / 32} heads, 129 tokens per sequence` };
    return { step: trainingStep(fc, opt, () => model.loss(tokens)), note };
  }
  const lora = loraWorkload(workload);
  if (lora) {  // W5 and W8: LoRA r8 (alpha 16), AdamW on the adapters, batch 4 x 129 tokens (128 predicted)
    const { dtype, ckpt } = lora, gpt2 = lora.model === 'gpt2';
    const config = gpt2 ? W5_CONFIG : W8_MODELS[lora.model];
    // Made on the host and moved, as a loaded model is: quantizing is the host's (docs/webgpu-ops.md).
    const device = fc.defaultDevice;
    fc.defaultDevice = 'cpu';
    const made = gpt2 ? new fc.nn.Gpt2(config, 1, { dtype, checkpointBlocks: ckpt })
      : new fc.nn.Llama(config, 1, { dtype, checkpointBlocks: ckpt });
    fc.defaultDevice = device;
    const model = device === 'cpu' ? made : made.to(device);
    const targets = gpt2 ? ['c_attn', 'c_proj', 'c_fc'] : W8_TARGETS;
    const adapters = fc.nn.lora(model, { rank: 8, alpha: 16, targets });
    const opt = fc.optim.adamw(adapters, { lr: 1e-4, betas: [0.9, 0.999], eps: 1e-8, weightDecay: 0.01 });
    const tokens = fc.constant(['batch', 't'], [W5_BATCH, W5_T + 1], labelPattern(W5_BATCH * (W5_T + 1), config.vocab_size), 'i32');
    const what = gpt2 ? 'GPT-2 small, LoRA r8 on c_attn/c_proj/c_fc'
      : `${lora.model === 'qwen05' ? 'Qwen2.5-0.5B' : 'SmolLM2-135M'} shape, LoRA r8 on q/k/v/o/gate/up/down_proj`;
    return { step: trainingStep(fc, opt, () => model.loss(tokens)), long: true,
      note: `${what}, base ${dtype}${ckpt ? ', checkpointed' : ''}` };
  }
  if (workload in W6_BATCH) {
    const model = new fc.nn.Cnn({}, 1);
    // Prepared and packed under noGrad: the parameters are variables, their copies constants.
    // fc.packRhs + dotPacked directly, as bench.cpp: nn.Linear.pack()'s forward adds its input
    // checks (~0.1 ms a call in Node 20, as much as batch 1's product).
    const [p1, p2, f1, f2] = fc.noGrad(() => [
      ...[model.conv1, model.conv2].map((c) => fc.prepareConv2dWeights(c.weight, { ...c.options, bias: c.bias })),
      ...[model.fc1, model.fc2].map((l) => fc.packRhs(l.weight, l.in))]);
    const x = fc.normal(['batch', 'c', 'h', 'w'], [W6_BATCH[workload], 1, 28, 28], 0, 1, 2);
    const step = () => fc.noGrad(() => fc.scope(() => {
      let h = x.conv2dPreparedRelu(p1).maxPool2d(2);
      h = h.conv2dPreparedRelu(p2).maxPool2d(2).merge(['c2', 'h', 'w'], 'feature');
      return void h.dotPacked(f1, model.fc1.bias).relu().dotPacked(f2, model.fc2.bias).toArray();
    }));
    return { step, note: `NCHW, convolutions prepared (${p2.winograd ? 'conv2 Winograd' : 'im2col GEMM'}), Linears packed` };
  }
  if (workload === 'w7') {
    const model = new fc.nn.Gpt({}, 1), prompt = labelPattern(W7_PROMPT, 256);
    const step = () => {  // greedy: every implementation does the same work
      if (model.generate(prompt, { maxTokens: W7_NEW, temperature: 0 }).length !== W7_NEW) throw new Error('generate stopped early');
    };
    return { step, note: '64-token prompt, 128 new tokens, greedy, KV cache' };
  }
  const [m, k, n] = GEMM_SHAPES[workload];
  const a = fc.normal(['m', 'k'], [m, k], 0, 1, 1), b = fc.normal(['k', 'n'], [k, n], 0, 1, 2);
  return { step: () => fc.scope(() => void a.dot(b, 'k')), note: 'a{m,k}.dot(b{k,n}, k)' };
}


/** Times workload on fc with the protocol (options: runProtocol's quick and warmupSteps) and returns
 * its record (protocol.mjs) under impl, with the memory fields and any `extra`. */
export function timeWorkload(fc, workload, impl, { quick = false, warmupSteps, load, extra = {} } = {}) {
  const t0 = performance.now();
  const { step, note, long } = setUp(fc, workload);
  const setup_ms = performance.now() - t0;  // building the model, data and optimizer
  let before;
  const timing = runProtocol(step, { quick, long, warmupSteps, afterWarmup: () => { fc.resetPeak(); before = fc.memory(); } });
  const after = fc.memory();
  // peak_bytes: the most tensor storage alive during the timed steps (parameters, optimizer state
  // and data included); step_bytes: what a step added on top of what lived before it.
  return record(workload, impl, fc.threads, timing, load,
    { peak_bytes: after.peakBytes, step_bytes: after.peakBytes - before.liveBytes, live_bytes: after.liveBytes,
      heap_bytes: after.heapBytes,  // the wasm memory at the end (it never shrinks: its high-water mark)
      cached_bytes: after.cachedBytes,  // freed buffers the engine keeps for reuse, inside heap_bytes
      // system allocations per timed step (native's allocs_per_step): above 0 when the engine's
      // cache does not keep a step's buffers (its limit, or a full heap: it trims the cache to make room)
      allocs_per_step: (after.systemAllocations - before.systemAllocations) / timing.steps,
      setup_ms,
      live_bytes_by_dtype: Object.fromEntries(Object.entries(after.bytesByDtype ?? {}).filter(([, v]) => v > 0)),
      isa: fc.variant === 'relaxed-simd' ? 'relaxed' : 'SIMD128', ...extra, ...(note ? { note } : {}) });
}

/**
 * Times workload's step with its tensors on `device` ('cpu' or 'webgpu', made fc's default device
 * meanwhile): two warm steps (pipelines made, buffers pooled), then `steps` timed ones, each ended
 * by awaiting the device (fc.sync(); the protocol's closing loss.item() cannot wait for a device).
 * Resolves to { workload, device, ms_per_step, gflops, note? } plus, on a device, what a step costs
 * it in steady state (dispatches, uploaded_bytes, downloaded_bytes, pipelines_made, buffers_made)
 * and live_bytes; or to { workload, device, error }: UnsupportedOnDevice names a kernel it lacks.
 */
export async function timeOnDevice(fc, workload, device, steps) {
  const r = { workload, device };
  const before = fc.defaultDevice;
  fc.defaultDevice = device;
  try {
    const { step, note } = setUp(fc, workload);
    const run = async () => {
      try {
        step();
      } catch (e) {
        if (e.code !== 'DeviceReadIsAsync') throw e;  // the step's closing loss.item()
      }
      await fc.sync();
    };
    await run();
    await run();
    const counters = () => (device === 'cpu' ? undefined : fc.memory().devices[device]);
    const from = counters();
    const t0 = performance.now();
    for (let i = 0; i < steps; ++i) await run();
    const ms = (performance.now() - t0) / steps;
    const to = counters();
    const per = (k) => (to[k] - from[k]) / steps;
    Object.assign(r, { ms_per_step: +ms.toFixed(2), gflops: +(gflopPerStep(workload) / (ms / 1e3)).toFixed(2),
      ...(to && { dispatches: per('dispatches'), submits: per('submits'), uploaded_bytes: per('uploadedBytes'), downloaded_bytes: per('downloadedBytes'),
        pipelines_made: per('pipelinesMade'), buffers_made: per('buffersMade'), live_bytes: to.liveBytes }),
      ...(note ? { note } : {}) });
  } catch (e) {
    r.error = String(e.message ?? e).split('\n')[0];
  } finally {
    fc.defaultDevice = before;
  }
  return r;
}

/** timeOnDevice's record as a line: what ran it (r.adapter or r.engine, when given), then the
 * time, the rate and a device's counters, or the error. */
export function deviceLine(r) {
  const what = `${r.workload} ${r.device}${r.adapter || r.engine ? ` (${r.adapter ?? r.engine})` : ''}`;
  if (r.error) return `${what}: ${r.error}`;
  const counters = r.dispatches === undefined ? '' : `; per step: ${r.dispatches} dispatches in ${r.submits} submits, ${r.uploaded_bytes} B up, ` +
    `${r.downloaded_bytes} B down, ${r.pipelines_made} pipelines, ${r.buffers_made} buffers made; ${r.live_bytes} B live`;
  return `${what}: ${r.ms_per_step} ms/step, ${r.gflops} GFLOP/s${counters}`;
}
