// gather, takeAlongAxis, scatterAdd and the gated units (swiglu, geglu) through the facade: the
// values of the C++ tests, gradients, gradcheck and bad inputs, on both wasm variants.
import { describe, test } from 'node:test';
import { VARIANTS, engine, throwsCode, values, assert } from './helpers.mjs';

const close = (got, want, tol = 1e-5) =>
  want.forEach((w, i) => assert.ok(Math.abs(got[i] - w) <= tol * (1 + Math.abs(w)), `[${i}] ${got[i]} vs ${w}`));

for (const variant of VARIANTS) {
  describe(variant, () => {
    test('gather and takeAlongAxis pick along an axis; repeated indices accumulate', async () => {
      const fc = await engine(variant);
      const x = fc.variable(['a', 'b'], [2, 3], [0, 1, 2, 3, 4, 5]);
      const y = x.gather('b', fc.constant(['a', 'b'], [2, 2], [2, 0, 1, 1], 'i32'));
      assert.deepEqual(y.tags, ['a', 'b']);
      assert.deepEqual(values(y), [2, 0, 4, 4]);
      y.sumAll().backward();
      assert.deepEqual(values(x.grad()), [1, 0, 1, 0, 2, 0]);
      const z = x.gather('a', fc.constant(['b', 'a'], [3, 1], [1, 0, 1], 'i64'));
      assert.deepEqual(z.shape, [1, 3]);
      assert.deepEqual(values(z), [3, 1, 5]);
      const p = fc.constant(['batch', 'class'], [2, 3], [0.1, 0.7, 0.2, 0.5, 0.3, 0.2]);
      close(values(p.takeAlongAxis('class', fc.constant(['batch', 'class'], [2, 1], [1, 0], 'i32'))), [0.7, 0.5]);
      close(values(p.takeAlongAxis('class', fc.constant(['class'], [2], [2, 2], 'i32'))), [0.2, 0.2, 0.2, 0.2]);
      const w = fc.variable(['a', 'b', 'c'], [2, 3, 2], [0.3, -0.2, 0.5, 0.1, -0.7, 0.9, 0.4, -0.1, 0.2, 0.8, -0.5, 0.6]);
      const ix = fc.constant(['b', 'a', 'c'], [4, 2, 1], [2, 0, 1, 1, 0, 2, 2, 1], 'i32');
      fc.gradcheck((t) => t.gather('b', ix).tanh().sumAll(), [w]);
      fc.gradcheck((t) => t.takeAlongAxis('b', fc.constant(['b'], [3], [1, 1, 0], 'i64')).tanh().sumAll(), [w]);
    });

    test('scatterAdd adds src at the indices; gradients to both operands', async () => {
      const fc = await engine(variant);
      const base = fc.variable(['a', 'b'], [2, 3], [0, 1, 2, 3, 4, 5]);
      const ix = fc.constant(['b', 'a'], [2, 2], [2, 0, 2, 1], 'i32');
      const src = fc.variable(['a', 'b'], [2, 2], [10, 20, 30, 40]);
      const y = base.scatterAdd('b', ix, src);
      assert.deepEqual(values(y), [0, 1, 32, 33, 44, 5]);
      y.mul(fc.constant(['a', 'b'], [2, 3], [1, 2, 3, 4, 5, 6])).sumAll().backward();
      assert.deepEqual(values(base.grad()), [1, 2, 3, 4, 5, 6]);
      assert.deepEqual(values(src.grad()), [3, 3, 4, 5]);
      const b2 = fc.variable(['a', 'b'], [2, 3], [0.1, -0.2, 0.3, 0.4, -0.5, 0.6]);
      const s2 = fc.variable(['a', 'b'], [2, 2], [0.2, -0.1, 0.3, 0.05]);
      fc.gradcheck((b, s) => b.scatterAdd('b', ix, s).tanh().sumAll(), [b2, s2]);
    });

    test('indexing: bad inputs', async () => {
      const fc = await engine(variant);
      const x = fc.ones(['a', 'b'], [2, 3]);
      const e = throwsCode(() => x.gather('b', fc.constant(['a', 'b'], [1, 2], [0, 3], 'i32')), 'IndexOutOfRange');
      assert.match(e.message, /'b'.*index 3.*\[0, 3\)/);
      throwsCode(() => x.gather('b', fc.constant(['a', 'b'], [1, 1], [-1], 'i32')), 'IndexOutOfRange');
      throwsCode(() => x.gather('b', fc.ones(['a', 'b'], [1, 1])), 'DTypeMismatch');
      throwsCode(() => x.gather('b', fc.constant(['b'], [1], [0], 'i32')), 'ShapeMismatch');
      throwsCode(() => x.takeAlongAxis('b', fc.constant(['a'], [2], [0, 0], 'i32')), 'ShapeMismatch');
      throwsCode(() => x.scatterAdd('b', fc.constant(['a', 'b'], [1, 2], [0, 1], 'i32'), fc.ones(['a', 'b'], [1, 3])), 'ShapeMismatch');
      throwsCode(() => x.gather('b', [0]), 'InvalidArgument');
      throwsCode(() => x.gather(1, fc.constant(['a', 'b'], [1, 1], [0], 'i32')), 'InvalidArgument');
    });

    test('swiglu and geglu: values, gradcheck, odd extents', async () => {
      const fc = await engine(variant);
      const v = [-1.5, 0.5, 2.0, -3.0, 0.25, 1.75, -0.5, 4.0];
      const x = fc.variable(['t', 'f'], [2, 4], v);
      const silu = (a) => a / (1 + Math.exp(-a));
      const erf = (a) => {  // Abramowitz-Stegun 7.1.26 is too coarse; integrate instead
        let s = 0;
        const n = 2000;
        for (let i = 0; i < n; ++i) { const u = (a * (i + 0.5)) / n; s += Math.exp(-u * u); }
        return (2 / Math.sqrt(Math.PI)) * s * (a / n);
      };
      const gelu = (a) => 0.5 * a * (1 + erf(a / Math.SQRT2));
      const want = (act) => [0, 1, 2, 3].map((i) => { const r = i >> 1, k = i & 1; return act(v[r * 4 + k]) * v[r * 4 + 2 + k]; });
      const s = x.swiglu('f');
      assert.deepEqual(s.shape, [2, 2]);
      close(values(s), want(silu));
      close(values(x.geglu('f')), want(gelu), 1e-5);
      fc.gradcheck((t) => t.swiglu('f').tanh().sumAll(), [x]);
      fc.gradcheck((t) => t.geglu('t').tanh().sumAll(), [x]);
      throwsCode(() => fc.ones(['t', 'f'], [2, 3]).swiglu('f'), 'InvalidArgument');
      throwsCode(() => x.geglu('zz'), 'ShapeMismatch');
    });
  });
}
