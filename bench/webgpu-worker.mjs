// The workloads of bench/webgpu.html in its module Worker: per workload, the step on the cpu (the
// wasm build this page loads) and on the webgpu device (workloads.mjs's timeOnDevice, as
// bench/webgpu.mjs in Node). The query of this worker's URL names them:
// ?workloads=w4-1024,w1,w2,w3&steps=5. Posts { line, record } per run, { line } for the adapter and
// the engine, then { done: true }, or { error }. Where the browser has no adapter, the cpu alone.
const post = (msg) => self.postMessage(msg);
const errorText = (e) => (e && (e.stack || e.message)) || String(e);

/** The adapter as GPUAdapterInfo names it ('' without one); SwiftShader is WebGPU on the CPU. */
async function adapterName() {
  const info = (await navigator.gpu?.requestAdapter())?.info;
  return info ? [info.vendor, info.architecture, info.description].filter(Boolean).join(' ') || 'unnamed adapter' : '';
}

async function main() {
  const q = new URL(self.location.href).searchParams;
  const workloads = (q.get('workloads') ?? 'w4-1024,w1,w2,w3').split(',');
  const steps = Number(q.get('steps') ?? 5);
  const { init } = await import('../dist/index.browser.mjs');
  const { deviceLine, timeOnDevice } = await import('./workloads.mjs');
  let fc, adapter = await adapterName();
  try {
    fc = await init({ device: 'webgpu' });
  } catch (e) {
    if (e.code !== 'DeviceUnavailable') throw e;
    post({ line: `${e.message}: the cpu alone` });
    [fc, adapter] = [await init(), ''];
  }
  const engine = `wasm ${fc.variant}, ${fc.threads} thread${fc.threads > 1 ? 's' : ''}`;
  post({ line: `adapter: ${adapter || 'none'}${/swiftshader/i.test(adapter) ? ' (the CPU: its times mean nothing)' : ''}; engine: ${engine}` });
  for (const workload of workloads) {
    for (const device of adapter ? ['cpu', 'webgpu'] : ['cpu']) {
      const record = { ...(await timeOnDevice(fc, workload, device, steps)), ...(device === 'cpu' ? { engine } : { adapter }) };
      post({ line: deviceLine(record), record });
    }
  }
  post({ done: true });
}

main().catch((e) => post({ error: errorText(e) }));
