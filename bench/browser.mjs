// Times ONE configuration in headless Chromium (Debian's /usr/bin/chromium, driven by
// playwright-core as tests/browser/ does): serves the repository with web/server.mjs (cross-origin
// isolated, so the threaded build can start its workers), opens bench/browser.html in a fresh
// browser, whose module Worker runs the workload with protocol.mjs's protocol on dist/'s package,
// and prints its record as bench/bench.mjs does (impl "chromium-wasm-st", "chromium-wasm-rx" or "chromium-wasm-mt").
//   node bench/browser.mjs --workload w1 --variant simd|relaxed-simd|threaded-simd [--threads N] [--json] [--quick]
//                          [--warmup N]   (N warm-up steps instead of the protocol's: to study tier-up)
// bench/run.mjs --browser runs it for every workload, each in a fresh browser.
import { join } from 'node:path';
import { startServer } from '../web/server.mjs';
import { ROOT, launchBrowser, openPage } from '../tests/browser/helpers.mjs';
import { loadAverage1m, parseArgs, report, wasmImpl } from './protocol.mjs';

const args = parseArgs(process.argv.slice(2), ['variant', 'warmup']);
const variant = args.variant ?? 'threaded-simd';
const impl = wasmImpl('chromium-wasm', variant, args.threads);
const load = loadAverage1m();
const TIMEOUT_MS = 30 * 60 * 1000;  // W5's steps take seconds

let result;
const server = await startServer({ root: ROOT, port: 0 });
const browser = await launchBrowser();
try {
  const { context, page, problems } = await openPage(browser);
  const query = new URLSearchParams({ workload: args.workload, variant, threads: String(args.threads), quick: args.quick ? '1' : '0',
    ...(args.warmup !== undefined ? { warmup: String(args.warmup) } : {}) });
  await page.goto(`${server.url}bench/browser.html?${query}`, { waitUntil: 'load' });
  await page.waitForFunction(() => window.__result !== undefined || window.__error !== undefined, null,
    { timeout: TIMEOUT_MS, polling: 200 });
  const { r, error } = await page.evaluate(() => ({ r: window.__result, error: window.__error }));
  result = error ? { workload: args.workload, impl, threads: args.threads, error: `${error}${problems.length ? `; ${problems.join('; ')}` : ''}` }
    : { ...r, load_avg_1m: load, browser: browser.version() };
  await context.close();
} catch (e) {
  result = { workload: args.workload, impl, threads: args.threads, error: String(e.message ?? e).split('\n')[0], load_avg_1m: load };
} finally {
  await browser.close();
  await server.close();
}
report(result, args.json);
process.exit(result.error ? 1 : 0);
