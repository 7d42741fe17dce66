// Trains a tiny 2-layer MLP with plain SGD and posts { result } or { error } to the page.
// The facade is imported by a relative URL (../../dist/index.browser.mjs): served under /plain/, it is
// /plain/dist/index.browser.mjs, which checks that the package loads its wasm from any base URL.

const post = (msg) => self.postMessage(msg);
const errorText = (e) => (e && (e.stack || e.message)) || String(e);
self.addEventListener('unhandledrejection', (e) => post({ error: `unhandled rejection in worker: ${errorText(e.reason)}` }));

async function main() {
  const { init } = await import('../../dist/index.browser.mjs');
  const t0 = performance.now();
  const fc = await init();  // auto: threaded-simd when crossOriginIsolated, else simd

  // A deterministic regression problem: y = sin(x0 + x1 / 2) from 4 inputs.
  let seed = 12345;
  const rnd = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 4294967296) * 2 - 1;
  const B = 32, IN = 4, H = 16, lr = 0.1, steps = 20;
  const xs = Array.from({ length: B * IN }, rnd);
  const ys = Array.from({ length: B }, (_, b) => Math.sin(xs[b * IN] + 0.5 * xs[b * IN + 1]));
  const x = fc.constant(['batch', 'in'], [B, IN], xs);
  const y = fc.constant(['batch'], [B], ys);
  let w1 = fc.variable(['hidden', 'in'], [H, IN], Array.from({ length: H * IN }, () => rnd() * 0.5));
  let b1 = fc.variable(['hidden'], [H], new Array(H).fill(0));
  let w2 = fc.variable(['hidden'], [H], Array.from({ length: H }, () => rnd() * 0.5));

  const losses = [];
  for (let step = 0; step < steps; step++) {
    const params = [w1, b1, w2];
    const next = fc.scope(() => {
      const h = x.dot(w1, 'in').add(b1).tanh();  // {batch, hidden}
      const out = h.dot(w2, 'hidden');           // {batch}
      const err = out.sub(y);
      const loss = err.mul(err).meanAll();
      loss.backward();
      losses.push(loss.item());
      // SGD: new leaf variables from the updated values; the scope keeps only what is returned.
      return fc.noGrad(() => params.map((p) =>
        fc.variable(p.tags, p.shape, p.detach().sub(p.grad().scale(lr)).toArray())));
    });
    params.forEach((p) => p.dispose());
    [w1, b1, w2] = next;
  }
  const memory = fc.memory();
  for (const t of [x, y, w1, b1, w2]) t.dispose();
  return {
    variant: fc.variant,
    threads: fc.threads,
    crossOriginIsolated: self.crossOriginIsolated === true,
    hardwareConcurrency: self.navigator?.hardwareConcurrency ?? null,
    losses,
    liveTensorsBeforeDispose: memory.liveTensors,
    liveTensorsAfter: fc.memory().liveTensors,
    ms: performance.now() - t0,
  };
}

main().then((result) => post({ result }), (e) => post({ error: errorText(e) }));
