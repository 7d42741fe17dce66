// What every test app runs once the engine is up: fit y = x·w by gradient descent and report the
// first and last loss, with the variant and thread count the engine picked.
export function train(fc) {
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
  return { ok: true, variant: fc.variant, threads: fc.threads, first: losses[0], last: losses.at(-1) };
}

/** A worker's message handler: trains on the engine start() gives, posts the report or the error. */
export const trainOnMessage = (start) => async () => {
  try {
    self.postMessage(train(await start()));
  } catch (e) {
    self.postMessage({ ok: false, error: String(e?.stack ?? e) });
  }
};
