// The app's engine worker: what a web developer writes, with a bare 'fucina' import and nothing
// bundler-specific. It fits y = x·w by gradient descent and reports the first and last loss.
import { init } from 'fucina';

self.onmessage = async () => {
  try {
    const fc = await init();
    const x = fc.constant(['batch', 'in'], [3, 2], [1, 2, 3, 4, 5, 6]);
    const y = fc.constant(['batch'], [3], [5, 11, 17]);
    const w = fc.variable(['in'], [2], [0, 0]);
    const opt = fc.optim.sgd([w], { lr: 0.01 });
    const losses = [];
    for (let i = 0; i < 50; ++i) {
      losses.push(fc.scope(() => {
        opt.zeroGrad();
        const d = x.dot(w, 'in').sub(y);
        const loss = d.mul(d).meanAll();
        loss.backward();
        opt.step();
        return loss.item();
      }));
    }
    self.postMessage({ ok: true, variant: fc.variant, threads: fc.threads, first: losses[0], last: losses.at(-1) });
  } catch (e) {
    self.postMessage({ ok: false, error: String(e?.stack ?? e) });
  }
};
