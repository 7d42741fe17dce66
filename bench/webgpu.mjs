// The workloads on the webgpu device in Node (Dawn from the npm package webgpu): per workload,
// ms per step, GFLOP/s and what a step costs the device in steady state: dispatches, bytes uploaded
// and downloaded, pipelines and buffers made (workloads.mjs's timeOnDevice, which the page
// bench/webgpu.html shares). On SwiftShader (the CPU; what machines here have) the
// times mean nothing and only the counters do; on a real GPU (a Vulkan driver) both do.
//   node bench/run.mjs --webgpu [--workloads w1,w4-1024] [--steps N] [--json] [--counters-only]
//   (or node bench/webgpu.mjs with the same flags)
// --counters-only records every dispatch but runs none (the device's compute passes skip their
// dispatchWorkgroups): the counters are a real step's, since nothing the engine dispatches depends
// on values; the times and results mean nothing. SwiftShader needs hours for a W5 step.
// A workload that needs a kernel the device lacks reports the UnsupportedOnDevice message.
import { init } from 'fucina';
import { deviceLine, timeOnDevice } from './workloads.mjs';

const argv = process.argv.slice(2);
const flag = (name) => { const i = argv.indexOf(`--${name}`); return i >= 0 ? argv[i + 1] : undefined; };
const workloads = (flag('workloads') ?? 'w1,w2,w3,w4-1024').split(',');
const steps = Number(flag('steps') ?? 5);
const json = argv.includes('--json');

process.env.VK_ICD_FILENAMES ??= '/usr/lib/chromium/vk_swiftshader_icd.json';  // SwiftShader unless another driver is named
const { create } = await import('webgpu');
const countersOnly = argv.includes('--counters-only');
const fc = await init({ variant: 'simd', device: 'webgpu', gpu: countersOnly ? withoutDispatches(create([])) : create([]) });
const adapter = `${process.env.VK_ICD_FILENAMES.includes('swiftshader') ? 'SwiftShader (CPU)' : 'Vulkan'}${countersOnly ? ', dispatches not run' : ''}`;

// A GPU whose devices' compute passes record dispatches without running them.
function withoutDispatches(gpu) {
  const wrap = (target, override) => new Proxy(target, {
    get: (t, k) => (k in override ? override[k] : typeof t[k] === 'function' ? t[k].bind(t) : t[k]),
  });
  const pass = (p) => wrap(p, { dispatchWorkgroups: () => {} });
  const encoder = (e) => wrap(e, { beginComputePass: (d) => pass(e.beginComputePass(d)) });
  const device = (d) => wrap(d, { createCommandEncoder: (d2) => encoder(d.createCommandEncoder(d2)) });
  const adapter = (a) => wrap(a, { requestDevice: async (d) => device(await a.requestDevice(d)) });
  return wrap(gpu, { requestAdapter: async (o) => { const a = await gpu.requestAdapter(o); return a && adapter(a); } });
}

const results = [];
for (const workload of workloads) {
  const r = { ...(await timeOnDevice(fc, workload, 'webgpu', steps)), adapter };
  results.push(r);
  if (!json) console.log(deviceLine(r));
}
if (json) console.log(JSON.stringify(results));
