// The workloads on the webgpu device in Node (Dawn from the npm package webgpu): per workload,
// ms per step and what a step costs the device in steady state: dispatches, bytes uploaded and
// downloaded, pipelines and buffers made. On SwiftShader (the CPU; what machines here have) the
// times mean nothing and only the counters do; on a real GPU (a Vulkan driver) both do.
//   node bench/run.mjs --webgpu [--workloads w1,w4-1024] [--steps N] [--json]
//   (or node bench/webgpu.mjs with the same flags)
// A workload that needs a kernel the device lacks reports the UnsupportedOnDevice message.
import { init } from 'fucina';
import { setUp } from './workloads.mjs';

const argv = process.argv.slice(2);
const flag = (name) => { const i = argv.indexOf(`--${name}`); return i >= 0 ? argv[i + 1] : undefined; };
const workloads = (flag('workloads') ?? 'w1,w2,w3,w4-1024').split(',');
const steps = Number(flag('steps') ?? 5);
const json = argv.includes('--json');

process.env.VK_ICD_FILENAMES ??= '/usr/lib/chromium/vk_swiftshader_icd.json';  // SwiftShader unless another driver is named
const { create } = await import('webgpu');
const fc = await init({ variant: 'simd', device: 'webgpu', gpu: create([]) });

const results = [];
for (const workload of workloads) {
  const r = { workload, device: 'webgpu', adapter: process.env.VK_ICD_FILENAMES.includes('swiftshader') ? 'SwiftShader (CPU)' : 'Vulkan' };
  try {
    // The protocol's step reads the loss with item(), which a device cannot do synchronously: the
    // step here ends with the device's work awaited instead.
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
    await run();  // warm: pipelines made, buffers pooled
    const before = fc.memory().devices.webgpu;
    const t0 = performance.now();
    for (let i = 0; i < steps; ++i) await run();
    const ms = (performance.now() - t0) / steps;
    const after = fc.memory().devices.webgpu;
    const per = (k) => (after[k] - before[k]) / steps;
    Object.assign(r, { ms_per_step: +ms.toFixed(2), dispatches: per('dispatches'), uploaded_bytes: per('uploadedBytes'),
      downloaded_bytes: per('downloadedBytes'), pipelines_made: per('pipelinesMade'), buffers_made: per('buffersMade'),
      live_bytes: after.liveBytes, ...(note ? { note } : {}) });
  } catch (e) {
    r.error = String(e.message ?? e).split('\n')[0];
  }
  results.push(r);
  if (!json) {
    console.log(r.error ? `${workload}: ${r.error}` : `${workload}: ${r.ms_per_step} ms/step (${r.adapter}), per step: ` +
      `${r.dispatches} dispatches, ${r.uploaded_bytes} B up, ${r.downloaded_bytes} B down, ${r.pipelines_made} pipelines, ` +
      `${r.buffers_made} buffers made; ${r.live_bytes} B live`);
  }
}
if (json) console.log(JSON.stringify(results));
