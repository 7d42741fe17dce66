// Times ONE configuration inside a page's module Worker, as bench/bench.mjs does in Node: the query
// of this worker's URL names it (?workload=w1&variant=simd&threads=1[&quick=1][&warmup=N]); it posts
// { result } (workloads.mjs's timeWorkload record, impl "chromium-wasm-st", "chromium-wasm-rx" or
// "chromium-wasm-mt") or { error }.
// The package is imported by a relative URL from dist/, as a page that ships it would.
const post = (msg) => self.postMessage(msg);
const errorText = (e) => (e && (e.stack || e.message)) || String(e);

async function main() {
  const q = new URL(self.location.href).searchParams;
  const workload = q.get('workload'), variant = q.get('variant'), threads = Number(q.get('threads') ?? 1);
  const quick = q.get('quick') === '1', warmupSteps = q.get('warmup') ? Number(q.get('warmup')) : undefined;
  const { init } = await import('../dist/index.browser.mjs');
  const { timeWorkload } = await import('./workloads.mjs');
  const { wasmImpl } = await import('./protocol.mjs');
  const impl = wasmImpl('chromium-wasm', variant, threads);
  const fc = await init({ variant, threads: variant === 'threaded-simd' ? threads : undefined });
  post({ result: timeWorkload(fc, workload, impl, { quick, warmupSteps,
    extra: { crossOriginIsolated: self.crossOriginIsolated, user_agent: navigator.userAgent } }) });
}

main().catch((e) => post({ error: errorText(e) }));
