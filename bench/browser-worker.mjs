// Times ONE configuration inside a page's module Worker, as bench/bench.mjs does in Node: the query
// of this worker's URL names it (?workload=w1&variant=simd&threads=1[&quick=1][&warmup=N]); it posts
// { result } (a protocol.mjs record, impl "chromium-wasm-st" or "chromium-wasm-mt") or { error }.
// The package is imported by a relative URL from dist/, as a page that ships it would.
const post = (msg) => self.postMessage(msg);
const errorText = (e) => (e && (e.stack || e.message)) || String(e);

async function main() {
  const q = new URL(self.location.href).searchParams;
  const workload = q.get('workload'), variant = q.get('variant'), threads = Number(q.get('threads') ?? 1);
  const quick = q.get('quick') === '1', warmupSteps = q.get('warmup') ? Number(q.get('warmup')) : undefined;
  const { init } = await import('../dist/index.browser.mjs');
  const { record, runProtocol } = await import('./protocol.mjs');
  const { setUp } = await import('./workloads.mjs');
  const fc = await init({ variant, threads: variant === 'simd' ? undefined : threads });
  const impl = variant === 'simd' ? 'chromium-wasm-st' : 'chromium-wasm-mt';
  const { step, note, long } = setUp(fc, workload);
  let before;
  const timing = runProtocol(step, { quick, long, warmupSteps, afterWarmup: () => { fc.resetPeak(); before = fc.memory(); } });
  const after = fc.memory();
  post({ result: record(workload, impl, fc.threads, timing, undefined,
    { peak_bytes: after.peakBytes, step_bytes: after.peakBytes - before.liveBytes, isa: 'SIMD128',
      crossOriginIsolated: self.crossOriginIsolated, user_agent: navigator.userAgent, ...(note ? { note } : {}) }) });
}

main().catch((e) => post({ error: errorText(e) }));
