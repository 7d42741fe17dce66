// The device selector of the pages that can train on the GPU (fashion/, gpt/): <select id="device">
// offers cpu (the default) and webgpu, which stays disabled, its reason beside it, where the
// browser has no WebGPU adapter. ?device=webgpu picks it from the URL (the browser tests). The
// engine attaches its device when it starts, so a worker runs on the device its URL names
// (worker-loop.mjs) and another choice starts a new worker. A device that cannot run the model
// (UnsupportedOnDevice: a kernel it lacks yet) makes the worker post 'fallback': #notice shows the
// message, the selector goes back to cpu, and the page configures again, on the cpu.
//
//   const engine = new Engine(onChosenDevice(workerUrl));
//   onDeviceChange(() => { engine.restart(onChosenDevice(workerUrl)); configure(); });
//   engine.on('fallback', (m) => { showFallback(m.message); configure(); });
import { params, demo } from './page.mjs';

const select = document.getElementById('device');
const webgpu = select.querySelector('option[value="webgpu"]');
const notice = document.getElementById('notice');
if (params.get('device') === 'webgpu') select.value = 'webgpu';
demo.fallbacks = [];  // the messages of 'fallback', for the test

/** Why this browser cannot run the webgpu device, or '' where it can. */
async function webgpuMissing() {
  if (!navigator.gpu) return 'this browser has no WebGPU (navigator.gpu)';
  try {
    return (await navigator.gpu.requestAdapter()) ? '' : 'no WebGPU adapter (requestAdapter gave none)';
  } catch (e) {
    return `no WebGPU adapter (${e.message})`;
  }
}
webgpuMissing().then((why) => {
  demo.webgpuMissing = why;
  webgpu.disabled = Boolean(why);
  webgpu.textContent = why ? `webgpu: ${why}` : 'webgpu';
});

/** url (a demo's worker.mjs) with the device the selector names: the worker's device. */
export function onChosenDevice(url) {
  const withDevice = new URL(url);
  withDevice.searchParams.set('device', select.value);
  return withDevice;
}

/** Calls restart() when the user picks another device. */
export function onDeviceChange(restart) {
  select.onchange = () => {
    notice.hidden = true;
    restart();
  };
}

/** On the worker's 'fallback': the message in #notice and __demo.fallbacks, the selector on cpu. */
export function showFallback(message) {
  demo.fallbacks.push(message);
  notice.hidden = false;
  notice.textContent = `${message}: training on the cpu instead.`;
  select.value = 'cpu';
}
