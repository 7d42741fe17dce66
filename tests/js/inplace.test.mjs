// The in-place and storage-consuming helpers through the facade, on both variants: the values of
// the out-of-place ops, the receiver given back (in place) or disposed (take*), and the refusals
// (inplace_tests.cpp has the layouts and thread counts).
import { describe, test } from 'node:test';
import { VARIANTS, engine, throwsCode, values, assert } from './helpers.mjs';

for (const variant of VARIANTS) {
  describe(variant, () => {
    test('addAxisVectorInPlace, addAxisVectorUnaryInPlace and addScaledInPlace write into the receiver', async () => {
      const fc = await engine(variant);
      fc.scope(() => {
        const xs = [1, -2, 3, -4, 5, -6];
        const v = fc.constant(['c'], [3], [0.5, 1, -10]);
        const x = fc.constant(['r', 'c'], [2, 3], xs);
        assert.equal(x.addAxisVectorInPlace('c', v), x);
        assert.deepEqual(values(x), values(fc.constant(['r', 'c'], [2, 3], xs).add(v)));
        const y = fc.constant(['r', 'c'], [2, 3], xs);
        assert.equal(y.addAxisVectorUnaryInPlace('c', v, 'gelu'), y);
        assert.deepEqual(values(y), values(fc.constant(['r', 'c'], [2, 3], xs).add(v).gelu()));
        const z = fc.constant(['r', 'c'], [2, 3], xs);
        z.addScaledInPlace(fc.constant(['c', 'r'], [3, 2], [1, 2, 3, 4, 5, 6]), -0.5);
        assert.deepEqual(values(z), [0.5, -3.5, 0.5, -5, 3, -9]);
        const w = fc.variable(['c'], [3], [1, 2, 3]);
        throwsCode(() => x.addAxisVectorInPlace('c', w), 'UnsupportedGradient');
        throwsCode(() => w.addScaledInPlace(v), 'UnsupportedGradient');
        const view = x.narrow('c', 0, 2);
        throwsCode(() => x.addScaledInPlace(x), 'InvalidArgument');  // the view shares its buffer
        view.dispose();
        assert.deepEqual(values(x.addScaledInPlace(x)), values(fc.constant(['r', 'c'], [2, 3], xs).add(v).scale(2)));
      });
    });

    test('takeAddNoGrad and takeScaleNoGrad dispose their receiver; routerTopK routes', async () => {
      const fc = await engine(variant);
      fc.scope(() => {
        const before = fc.memory().liveTensors;
        const x = fc.constant(['r', 'c'], [2, 3], [1, 2, 3, 4, 5, 6]);
        const s = x.takeAddNoGrad(fc.constant(['c'], [3], [10, 20, 30]));
        assert.equal(x.isDisposed, true);
        assert.deepEqual(values(s), [11, 22, 33, 14, 25, 36]);
        const t = s.takeScaleNoGrad(0.5);
        assert.equal(s.isDisposed, true);
        throwsCode(() => s.toArray(), 'TensorReleased');
        assert.deepEqual(values(t), [5.5, 11, 16.5, 7, 12.5, 18]);
        assert.equal(fc.memory().liveTensors, before + 2);  // t and the [10, 20, 30] constant
        const w = fc.variable(['c'], [3], [1, 2, 3]);
        throwsCode(() => w.takeScaleNoGrad(2), 'UnsupportedGradient');
        assert.equal(w.isDisposed, false);  // a refused call consumes nothing

        const logits = fc.constant(['t', 'e'], [2, 4], [0.5, 2, -1, 2, 3, 0, 1, -2]);
        const [weights, indices] = logits.routerTopK('e', 2);
        assert.equal(indices.dtype, 'i64');
        assert.deepEqual(values(indices), [1, 3, 0, 2]);
        const wv = values(weights);
        assert.ok(Math.abs(wv[0] - 0.5) < 1e-6 && Math.abs(wv[2] + wv[3] - 1) < 1e-6, `${wv}`);
        assert.ok(Math.abs(wv[2] - Math.exp(3) / (Math.exp(3) + Math.exp(1))) < 1e-6, `${wv}`);
        throwsCode(() => logits.routerTopK('e', 5), 'InvalidArgument');
        throwsCode(() => logits.routerTopK('e', 0), 'InvalidArgument');
      });
    });
  });
}
