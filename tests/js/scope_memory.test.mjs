// fc.scope, dispose and fc.memory(): what a web developer uses to keep a training loop leak-free.
import { describe, test } from 'node:test';
import { VARIANTS, engine, throwsCode, values, assert } from './helpers.mjs';

for (const variant of VARIANTS) {
  describe(variant, () => {
    test('scope disposes what it made, keeps what it returns, nests, and frees on exceptions', async () => {
      const fc = await engine(variant);
      const before = fc.memory().liveTensors;
      const x = fc.variable(['d'], [3], [1, 2, 3]);
      let inner;
      const kept = fc.scope(() => {
        const a = x.scale(2);
        inner = fc.scope(() => {
          const t = a.add(x);
          return { t, other: [a.exp()] };
        });
        assert.equal(inner.t.isDisposed, false);
        return a.mul(inner.t);
      });
      assert.deepEqual(values(kept), [6, 24, 54]);
      assert.equal(inner.t.isDisposed, true);  // the outer scope did not return it
      assert.equal(fc.memory().liveTensors, before + 2);  // x and kept
      let made;
      assert.throws(() => fc.scope(() => {
        made = x.scale(3);
        throw new Error('inside');
      }), { message: 'inside' });
      assert.equal(made.isDisposed, true);
      kept.dispose();
      x.dispose();
      assert.equal(fc.memory().liveTensors, before);
    });

    test('memory() reports live tensors and bytes; a recorded graph keeps what backward needs', async () => {
      const fc = await engine(variant);
      const m0 = fc.memory();
      const x = fc.variable(['d'], [1000], new Float32Array(1000).fill(0.5));
      const m1 = fc.memory();
      assert.equal(m1.liveTensors, m0.liveTensors + 1);
      assert.equal(m1.liveBytes - m0.liveBytes, 4000);
      assert.ok(m1.peakBytes >= m1.liveBytes);
      const loss = fc.scope(() => x.tanh().mul(x).sumAll());
      // Intermediates' handles are gone, but the graph holds their values until backward.
      assert.equal(fc.memory().liveTensors, m0.liveTensors + 2);
      assert.ok(fc.memory().liveBytes > m1.liveBytes);
      loss.backward();
      loss.dispose();
      x.grad().dispose();
      x.zeroGrad();
      assert.equal(fc.memory().liveBytes, m1.liveBytes);
      x.dispose();
      assert.equal(fc.memory().liveTensors, m0.liveTensors);
      assert.equal(fc.memory().liveBytes, m0.liveBytes);
    });

    test('1,000 training steps inside fc.scope leave no tensor behind', async () => {
      const fc = await engine(variant);
      const before = fc.memory().liveTensors;
      const xs = fc.constant(['batch', 'in'], [4, 3], [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2]);
      const ys = fc.constant(['batch'], [4], [1, 0, 1, 0]);
      let w = fc.variable(['in'], [3], [0.1, -0.1, 0.05]);
      let first, last;
      for (let step = 0; step < 1000; ++step) {
        const next = fc.scope(() => {
          const d = xs.dot(w, 'in').sigmoid().sub(ys);
          const loss = d.mul(d).meanAll();
          loss.backward();
          last = loss.item();
          if (step === 0) first = last;
          return fc.noGrad(() => fc.variable(['in'], [3], w.detach().sub(w.grad().scale(0.5)).toArray()));
        });
        w.dispose();
        w = next;
      }
      assert.ok(last < first, `loss ${first} -> ${last}`);
      w.dispose();
      xs.dispose();
      ys.dispose();
      assert.equal(fc.memory().liveTensors, before);
    });

    test('disposed tensors inside a scope are skipped, and grads are scope-owned too', async () => {
      const fc = await engine(variant);
      const before = fc.memory().liveTensors;
      const x = fc.variable(['d'], [2], [1, 2]);
      fc.scope(() => {
        const y = x.exp();
        y.dispose();
        x.sumAll().backward();
        x.grad();  // a new tensor made inside: disposed with the scope
      });
      x.dispose();
      assert.equal(fc.memory().liveTensors, before);
      throwsCode(() => x.toArray(), 'TensorReleased');
    });
  });
}
