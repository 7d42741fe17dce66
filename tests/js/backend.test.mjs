// The backend option and the device of tensors (Note [Backends], docs/design-notes.md): on both
// wasm variants, an engine on the reference backend computes on one thread, reports its backend,
// and trains an MLP to the cpu backend's losses; a bad backend is InvalidArgument.
import { describe, test } from 'node:test';
import { VARIANTS, engine, init, assert, FucinaError } from './helpers.mjs';

// x·W1 + b1 -> relu -> ·W2 against a target, mean squared error, SGD: the losses of 30 steps.
function trainLosses(fc) {
  const rand = (n, seed) => Float32Array.from({ length: n }, (_, i) => Math.sin(seed * 97.1 + i * 12.9898) * 0.5);
  return fc.scope(() => {
    const x = fc.constant(['b', 'in'], [16, 5], rand(80, 1));
    const target = fc.constant(['b', 'out'], [16, 2], rand(32, 2));
    const w1 = fc.variable(['in', 'h'], [5, 8], rand(40, 3));
    const b1 = fc.variable(['h'], [8], rand(8, 4));
    const w2 = fc.variable(['h', 'out'], [8, 2], rand(16, 5));
    const opt = fc.optim.sgd([w1, b1, w2], { lr: 0.1 });
    const losses = [];
    for (let step = 0; step < 30; ++step) {
      losses.push(fc.scope(() => {
        opt.zeroGrad();
        const err = x.dot(w1, 'in').add(b1).relu().dot(w2, 'h').sub(target);
        const loss = err.mul(err).meanAll();
        loss.backward();
        opt.step();
        return loss.item();
      }));
    }
    return losses;
  });
}

for (const variant of VARIANTS) {
  describe(variant, () => {
    test('the reference backend computes on one thread and says so', async () => {
      const fc = await engine(variant, 'reference');
      assert.equal(fc.backend, 'reference');
      assert.equal(fc.threads, 1);
      const t = fc.variable(['d'], [3], [1, 2, 3]);
      assert.equal(t.device, 'cpu');
      assert.equal(t.exp().sumAll().device, 'cpu');
      const cpu = await engine(variant);
      assert.equal(cpu.backend, 'cpu');
    });

    test('an engine on the reference backend trains to the cpu backend\'s losses', async () => {
      const ref = trainLosses(await engine(variant, 'reference'));
      const cpu = trainLosses(await engine(variant));
      assert.ok(ref.at(-1) < 0.7 * ref[0], `it learns: ${ref[0]} -> ${ref.at(-1)}`);
      ref.forEach((l, i) => assert.ok(Math.abs(l - cpu[i]) <= 1e-4 * (1 + Math.abs(cpu[i])), `step ${i}: ${l} vs ${cpu[i]}`));
    });
  });
}

test('a bad backend is InvalidArgument', async () => {
  for (const backend of ['gpu', 1, null]) {
    await assert.rejects(init({ variant: 'simd', backend }),
      (e) => e instanceof FucinaError && e.code === 'InvalidArgument' && /backend must be 'cpu' or 'reference'/.test(e.message));
  }
});
