// Typed branches on both variants (tests/cpp/typed_tests.cpp is the C++ side): 16-bit leaves
// with f32 gradients, the differentiable casts, dot with a 16-bit right operand, and optimizers
// updating 16-bit parameters (with and without master weights).
import { describe, test } from 'node:test';
import { VARIANTS, engine, throwsCode, values, assert } from './helpers.mjs';

// x rounded to f16 / bf16 (round to nearest even), via typed arrays.
const f32 = (x) => Math.fround(x);
function toBf16(x) {
  const u = new Uint32Array(new Float32Array([x]).buffer)[0];
  const r = (u + 0x7fff + ((u >> 16) & 1)) >>> 16;
  return new Float32Array(new Uint32Array([r << 16]).buffer)[0];
}
const wave = (n, s, p, f) => Array.from({ length: n }, (_, i) => f32(s * Math.sin(f * i + p)));

for (const variant of VARIANTS) {
  describe(variant, () => {
    test('an f16 or bf16 leaf: dtype kept, values rounded, gradient f32', async () => {
      const fc = await engine(variant);
      for (const dtype of ['f16', 'bf16']) {
        fc.scope(() => {
          const x = fc.variable(['d'], [3], [1, 2.5, 3.14159], dtype);
          assert.equal(x.dtype, dtype);
          assert.equal(x.requiresGrad, true);
          if (dtype === 'bf16') assert.deepEqual(values(x), [1, 2.5, toBf16(3.14159)]);
          else assert.deepEqual(values(x), [1, 2.5, 3.140625]);
          x.to('f32').mul(fc.constant(['d'], [3], [10, 20, 30])).sumAll().backward();
          const g = x.grad();
          assert.equal(g.dtype, 'f32');
          assert.deepEqual(values(g), [10, 20, 30]);
          assert.equal(fc.variable(x.detach()).dtype, dtype);
        });
      }
    });

    test('variables of other dtypes and 16-bit operands of other ops are refused', async () => {
      const fc = await engine(variant);
      fc.scope(() => {
        throwsCode(() => fc.variable(['d'], [1], [1], 'f64'), 'UnsupportedGradient');
        throwsCode(() => fc.variable(['d'], [1], [1], 'i32'), 'UnsupportedGradient');
        const h = fc.variable(['d'], [2], [1, 2], 'bf16');
        throwsCode(() => h.to('f64'), 'GradientCastUnsupported');
        throwsCode(() => h.exp(), 'UnsupportedGradient');
        assert.equal(h.detach().exp().dtype, 'bf16');  // a 16-bit constant computes in f32
      });
    });

    test('dot with an f16 weight: y, dx and an f32 dW equal the f32 computation on the rounded weight', async () => {
      const fc = await engine(variant);
      fc.scope(() => {
        const xv = wave(5 * 37, 1, 0.1, 0.37), wv = wave(45 * 37, 0.5, 0.4, 0.23);
        const x = fc.variable(['b', 'in'], [5, 37], xv);
        const w16 = fc.variable(['out', 'in'], [45, 37], wv, 'f16');
        const w32 = fc.variable(['out', 'in'], [45, 37], values(w16));
        const run = (w) => {
          x.zeroGrad();
          const y = x.dot(w, 'in');
          y.mul(y).sumAll().backward();
          return [values(y), values(x.grad()), values(w.grad())];
        };
        const [y16, dx16, dw16] = run(w16);
        const [y32, dx32, dw32] = run(w32);
        assert.deepEqual(y16, y32);
        assert.deepEqual(dx16, dx32);
        assert.deepEqual(dw16, dw32);
        assert.equal(w16.grad().dtype, 'f32');
      });
    });

    test('optimizers round updates into 16-bit parameters; masterWeights keeps the small ones', async () => {
      const fc = await engine(variant);
      const run = (masterWeights) => fc.scope(() => {
        const p = fc.variable(['d'], [1], [1], 'bf16');
        const opt = fc.optim.sgd([p], { lr: 1e-4, masterWeights });
        for (let i = 0; i < 100; ++i) {
          opt.zeroGrad();
          p.to('f32').sumAll().backward();
          opt.step();
        }
        opt.dispose();
        return p.item();
      });
      assert.equal(run(false), 1);  // 1e-4 is below half a bf16 step at 1
      assert.equal(run(true), toBf16(f32(1 - 100 * 1e-4)));
      fc.scope(() => {
        const q = fc.variable(['d'], [2], [1, -2], 'f16');
        const adam = fc.optim.adam([q], { lr: 0.01, masterWeights: true });
        q.to('f32').mul(fc.constant(['d'], [2], [0.5, -1])).sumAll().backward();
        adam.step();
        assert.equal(q.dtype, 'f16');
        assert.deepEqual(values(q), [0.990234375, -1.990234375]);  // the f16 values nearest to 0.99 and -1.99
        adam.dispose();
        throwsCode(() => fc.optim.adam([q], { masterWeights: 1 }), 'InvalidArgument');
      });
    });
  });
}
