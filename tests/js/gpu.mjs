// The webgpu device in Node for the suites: Dawn (the npm package webgpu) over chromium's
// SwiftShader, so kernels run on the CPU here (their times mean nothing; their values and the
// counters do). One engine per variant per test file.
import { init } from './helpers.mjs';

process.env.VK_ICD_FILENAMES ??= '/usr/lib/chromium/vk_swiftshader_icd.json';
const { create, globals } = await import('webgpu');

const engines = new Map();
/** The engine of this variant with the webgpu device as its default. */
export async function gpuEngine(variant) {
  if (!engines.has(variant)) {
    engines.set(variant, await init({ variant, device: 'webgpu', gpu: create([]), threads: variant === 'threaded-simd' ? 2 : undefined }));
  }
  return engines.get(variant);
}

export { create, globals };

/** A GPU whose device is wrap(device): a test's hold on it (to destroy it, or to fake what a
 * driver reports). */
export function gpuWith(wrap) {
  const real = create([]);
  return {
    requestAdapter: async () => {
      const adapter = await real.requestAdapter();
      return { limits: adapter.limits, info: adapter.info, requestDevice: async (d) => wrap(await adapter.requestDevice(d)) };
    },
  };
}
