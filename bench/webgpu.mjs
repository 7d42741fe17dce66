// The workloads on the webgpu device in Node (Dawn from the npm package webgpu): per workload,
// ms per step, GFLOP/s and what a step costs the device in steady state: dispatches, bytes uploaded
// and downloaded, pipelines and buffers made (workloads.mjs's timeOnDevice, which the page
// bench/webgpu.html shares). On SwiftShader (the CPU; what machines here have) the
// times mean nothing and only the counters do; on a real GPU (a Vulkan driver) both do.
//   node bench/run.mjs --webgpu [--workloads w1,w4-1024] [--steps N] [--json]
//   (or node bench/webgpu.mjs with the same flags)
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
const fc = await init({ variant: 'simd', device: 'webgpu', gpu: create([]) });
const adapter = process.env.VK_ICD_FILENAMES.includes('swiftshader') ? 'SwiftShader (CPU)' : 'Vulkan';

const results = [];
for (const workload of workloads) {
  const r = { ...(await timeOnDevice(fc, workload, 'webgpu', steps)), adapter };
  results.push(r);
  if (!json) console.log(deviceLine(r));
}
if (json) console.log(JSON.stringify(results));
