// `npm run bench:webgpu`: serves bench/webgpu.html (web/server.mjs: cross-origin isolated, so the
// page's wasm build is the threaded one) and prints its address, to open in a browser that has a
// GPU. The page prints, per workload, the ms per step and GFLOP/s of the wasm build and of the
// webgpu device, and the device's counters per step (bench/webgpu-worker.mjs).
//   npm run bench:webgpu [-- --port 8090] [--workloads w4-1024,w1,w2,w3] [--steps 5]
//   npm run bench:webgpu -- --headless [--workloads ...] [--steps N]
// --headless opens the page in headless Chromium with WebGPU over SwiftShader instead (the flags of
// tests/browser/helpers.mjs), prints its lines and exits, 1 on an error: a smoke run (the test's),
// whose webgpu times mean nothing.
import { startServer } from '../web/server.mjs';
import { ROOT, launchBrowser, openPage } from '../tests/browser/helpers.mjs';

const argv = process.argv.slice(2);
const flag = (name, fallback) => { const i = argv.indexOf(`--${name}`); return i >= 0 ? argv[i + 1] : fallback; };
const query = `workloads=${flag('workloads', 'w4-1024,w1,w2,w3')}&steps=${flag('steps', '5')}`;
const TIMEOUT_MS = 30 * 60 * 1000;  // W4 1024³ on SwiftShader: seconds a step

if (!argv.includes('--headless')) {
  const port = Number(flag('port', 8090));
  const { url } = await startServer({ root: ROOT, port }).catch((e) => {
    if (e?.code !== 'EADDRINUSE') throw e;
    console.error(`npm run bench:webgpu: port ${port} is taken; pick another: npm run bench:webgpu -- --port 8091`);
    process.exit(1);
  });
  console.log(`fucina webgpu bench (Ctrl-C to stop): open ${url}bench/webgpu.html?${query} in a browser with a GPU`);
} else {
  const server = await startServer({ root: ROOT, port: 0 });
  const browser = await launchBrowser({ webgpu: true });
  let failed = true;
  try {
    const { page, problems } = await openPage(browser);
    await page.goto(`${server.url}bench/webgpu.html?${query}`, { waitUntil: 'load' });
    await page.waitForFunction(() => window.__done || window.__error !== undefined, null, { timeout: TIMEOUT_MS, polling: 200 });
    const { lines, error } = await page.evaluate(() => ({ lines: window.__lines, error: window.__error }));
    console.log(lines.join('\n'));  // the last: 'done', or the error
    for (const p of problems) console.error(p);
    failed = error !== undefined || problems.length > 0;
  } finally {
    await browser.close();
    await server.close();
  }
  process.exit(failed ? 1 : 0);
}
