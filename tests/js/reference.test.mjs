// The reference's autograd examples (backward, gradients, noGrad, checkpointing, custom VJPs,
// gradcheck), under the same names as the Catch2 tests, on both variants.
import { describe, test } from 'node:test';
import { VARIANTS, engine, throwsCode, values, assert } from './helpers.mjs';

for (const variant of VARIANTS) {
  describe(variant, () => {
    test('backward and grad read', async () => {
      const fc = await engine(variant);
      const x = fc.variable(['d'], [3], [1, 2, 3]);
      const c = fc.constant(['d'], [3], [10, 20, 30]);  // constant: no grad state
      const loss = x.mul(c).sumAll();  // scalar output: implicit seed 1
      loss.backward();
      assert.deepEqual(values(x.grad()), [10, 20, 30]);
      assert.equal(c.grad(), null);  // constants never accumulate
    });

    test('non-scalar output needs a seed', async () => {
      const fc = await engine(variant);
      const x = fc.variable(['d'], [2], [3, 4]);
      const y = x.scale(2);
      throwsCode(() => y.backward(), 'MissingOutputGradient');
      y.backward(fc.constant(['d'], [2], [1, 10]));  // the same graph runs once seeded
      assert.deepEqual(values(x.grad()), [2, 20]);
    });

    test('shared branch accumulates', async () => {
      const fc = await engine(variant);
      const x = fc.variable(['d'], [2], [3, 5]);
      const both = x.mul(x).add(x.scale(4));
      both.sumAll().backward();
      assert.deepEqual(values(x.grad()), [10, 14]);  // 2x + 4
    });

    test('micro-batch accumulation and zeroGrad', async () => {
      const fc = await engine(variant);
      const w = fc.variable(['d'], [2], [1, 2]);
      for (let i = 0; i < 2; ++i) w.scale(3).sumAll().backward();  // one fresh graph per micro-batch
      assert.deepEqual(values(w.grad()), [6, 6]);
      w.zeroGrad();
      assert.equal(w.grad(), null);
    });

    test('noGrad suppresses recording', async () => {
      const fc = await engine(variant);
      const x = fc.variable(['d'], [2], [1, 2]);
      fc.noGrad(() => {
        assert.equal(fc.isGradEnabled(), false);
        assert.equal(x.scale(2).requiresGrad, false);
      });
      assert.equal(fc.isGradEnabled(), true);
    });

    test('checkpointed layer backward', async () => {
      const fc = await engine(variant);
      const x = fc.variable(['batch', 'in'], [1, 2], [1, 2]);
      const w = fc.variable(['out', 'in'], [1, 2], [0.5, -0.25]);
      const y = fc.checkpoint((x, w) => x.dot(w, 'in').tanh(), [x, w]);
      y.sumAll().backward();  // the JS block re-runs here
      assert.deepEqual(values(w.grad()), [1, 2]);
    });

    test('checkpointWithContext carries frozen state', async () => {
      const fc = await engine(variant);
      const x = fc.variable(['batch', 'in'], [1, 2], [1, 2]);
      const w = fc.constant(['out', 'in'], [1, 2], [3, 4]);
      const y = fc.checkpoint((x, extra) => x.dot(extra.w, 'in').scale(extra.alpha), [x], { w, alpha: 0.5 });
      y.sumAll().backward();
      assert.deepEqual(values(x.grad()), [1.5, 2]);
    });

    test('customVjp validated by gradcheck', async () => {
      const fc = await engine(variant);
      const scaledSquare = {
        forward: ([x], extra) => x.mul(x).scale(extra),
        backward: ([x], _output, gy, needsGrad, extra) => [needsGrad[0] ? gy.mul(x.scale(2 * extra)) : null],
      };
      const x = fc.variable(['d'], [3], [1, -2, 3]);
      const result = fc.gradcheck((x) => fc.customVjp(scaledSquare, [x], 0.5).sumAll(), [x]);
      assert.equal(result.checked, 3);
      assert.ok(result.maxAbsError < 1e-2);
    });

    test('dropout: pinned mask values, shared by every build', async () => {
      const fc = await engine(variant);
      const m = values(fc.ones(['d'], [16]).dropout(0.5, 42));
      assert.equal(m.map((v) => (v === 0 ? '0' : '1')).join(''), '1100010001011100');  // as in Catch2
    });
  });
}
