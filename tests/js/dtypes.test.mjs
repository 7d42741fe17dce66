// Dtype rules (docs/design-notes.md, "Dtype rules"): compare, f64 pointwise and reductions in
// double, integer add, 16-bit constants computing in f32, and UnsupportedGradient for 16-bit
// operands that require gradients, on both variants.
import { describe, test } from 'node:test';
import { VARIANTS, engine, throwsCode, values, assert } from './helpers.mjs';

for (const variant of VARIANTS) {
  describe(variant, () => {
    test('compare: every op, broadcasting, NaN, u8 result without gradient', async () => {
      const fc = await engine(variant);
      const x = fc.constant(['d'], [4], [1, 2, 3, NaN]);
      const y = fc.constant(['d'], [4], [2, 2, 2, NaN]);
      const want = { eq: [0, 1, 0, 0], ne: [1, 0, 1, 1], lt: [1, 0, 0, 0], le: [1, 1, 0, 0], gt: [0, 0, 1, 0], ge: [0, 1, 1, 0] };
      for (const [op, expected] of Object.entries(want)) {
        const r = x.compare(y, op);
        assert.equal(r.dtype, 'u8');
        assert.deepEqual(values(r), expected, op);
      }
      const b = fc.constant(['r'], [2], [1.5, 2.5]).compare(fc.constant(['d'], [3], [1, 2, 3]), 'gt');
      assert.deepEqual(b.tags, ['r', 'd']);
      assert.deepEqual(values(b), [1, 0, 0, 1, 1, 0]);
      const v = fc.variable(['d'], [3], [1, 5, 3]);
      const c = v.compare(fc.constant(['d'], [3], [1, 2, 3], 'i32'), 'ge');
      assert.equal(c.requiresGrad, false);
      assert.deepEqual(values(c), [1, 1, 1]);
      throwsCode(() => x.compare(y, 'equal'), 'InvalidArgument');
      throwsCode(() => x.compare(y), 'InvalidArgument');
      throwsCode(() => x.compare(5, 'eq'), 'InvalidArgument');
      throwsCode(() => x.compare(fc.ones(['d'], [3]), 'eq'), 'ShapeMismatch');
    });

    test('f64 pointwise and reductions compute in double', async () => {
      const fc = await engine(variant);
      const x = fc.constant(['d'], [2], [1, 2], 'f64');
      // (1 + 1e-10) − 1 is 0 in f32.
      const tiny = x.addScalar(1e-10).subScalar(1);
      assert.equal(tiny.dtype, 'f64');
      assert.ok(Math.abs(values(tiny)[0] - 1e-10) < 1e-15, `${values(tiny)[0]}`);
      const s = x.addScalar(1e-10).sumAll().subScalar(3);
      assert.equal(s.dtype, 'f64');
      assert.ok(Math.abs(values(s)[0] - 2e-10) < 1e-15, `${values(s)[0]}`);
      assert.equal(x.add(fc.constant(['d'], [2], [0.5, 0.25])).dtype, 'f64');
      assert.deepEqual(values(x.exp().log()), [1, 2]);
      assert.equal(x.sum('d').dtype, 'f64');
      throwsCode(() => x.softmax('d'), 'DTypeMismatch');
    });

    test('f64, i64 and i32 constants keep the numbers they are given, past f32 precision', async () => {
      const fc = await engine(variant);
      // read back through f32 (data() and toArray() are f32): differences in the dtype show them
      const x = fc.constant(['n'], [3], [1 + 2 ** -40, 1e-300, 1e300], 'f64');
      const scaled = x.mul(fc.constant(['n'], [3], Float64Array.from([1, 1e300, 1e-300]), 'f64'));
      assert.deepEqual(values(scaled.sub(fc.constant(['n'], [3], [1, 1, 1], 'f64'))), [2 ** -40, 0, 0]);
      const ints = fc.constant(['n'], [3], [2 ** 24 + 1, 2 ** 31 - 1, -(2 ** 31)], 'i32');
      assert.deepEqual(values(ints.sub(fc.constant(['n'], [3], [2 ** 24, 2 ** 31 - 2, -(2 ** 31) + 1], 'i32'))), [1, 1, -1]);
      const longs = fc.constant(['n'], [2], [2 ** 53 - 1, -(2 ** 40) - 3], 'i64');
      assert.deepEqual(values(longs.sub(fc.constant(['n'], [2], [2 ** 53 - 2, -(2 ** 40)], 'i64'))), [1, -3]);
      assert.deepEqual(values(fc.constant(['n'], [2], [2 ** 24 + 1, 0.1])), [2 ** 24, Math.fround(0.1)], 'f32 rounds');
    });

    test('integer add, sub, mul, neg compute in the integer dtype and wrap', async () => {
      const fc = await engine(variant);
      const a = fc.constant(['d'], [3], [2147483647, -5, 7], 'i32');
      const b = fc.constant(['d'], [3], [1, 3, 6], 'i32');
      const s = a.add(b);
      assert.equal(s.dtype, 'i32');
      assert.deepEqual(values(s), [-2147483648, -2, 13]);
      // toArray reads f32, exact below 2^24: 65536 · 65536 wraps to 0.
      const p = fc.constant(['d'], [3], [-5, 7, 65536], 'i32');
      const q = fc.constant(['d'], [3], [3, 6, 65536], 'i32');
      assert.deepEqual(values(p.sub(q)), [-8, 1, 0]);
      assert.deepEqual(values(p.mul(q)), [-15, 42, 0]);
      assert.deepEqual(values(p.neg()), [5, -7, -65536]);
      const u = fc.constant(['d'], [2], [250, 3], 'u8');
      assert.deepEqual(values(u.add(fc.constant(['d'], [2], [10, 5], 'u8'))), [4, 8]);
      throwsCode(() => a.add(fc.constant(['d'], [3], [1, 2, 3])), 'DTypeMismatch');
      throwsCode(() => a.add(fc.constant(['d'], [3], [1, 2, 3], 'i64')), 'DTypeMismatch');
      throwsCode(() => a.exp(), 'DTypeMismatch');
    });

    test('16-bit constants compute in f32 and keep their common dtype', async () => {
      const fc = await engine(variant);
      const h = fc.constant(['d'], [3], [1, 2, 3], 'f16');
      const bh = fc.constant(['d'], [3], [1, 2, 3], 'bf16');
      assert.equal(h.add(h).dtype, 'f16');
      assert.equal(bh.exp().dtype, 'bf16');
      assert.equal(h.add(bh).dtype, 'f32');
      assert.equal(h.mul(fc.constant(['d'], [3], [1, 1, 1])).dtype, 'f32');
      assert.deepEqual(values(h.softmax('d')), values(h.to('f32').softmax('d').to('f16')));
      const x = fc.variable(['d'], [3], [1, -1, 2]);
      const loss = x.mul(h).sumAll();
      loss.backward();
      assert.deepEqual(values(x.grad()), [1, 2, 3]);
    });

    test('16-bit operands that require gradients are UnsupportedGradient', async () => {
      const fc = await engine(variant);
      const v = fc.variable(['d'], [3], [1, 2, 3]).to('f16');
      assert.equal(v.requiresGrad, true);
      throwsCode(() => v.exp(), 'UnsupportedGradient');
      throwsCode(() => v.add(fc.ones(['d'], [3])), 'UnsupportedGradient');
      throwsCode(() => v.sumAll(), 'UnsupportedGradient');
      throwsCode(() => fc.variable(['d'], [3], [1, 2, 3]).add(fc.constant(['d'], [3], [1, 2, 3], 'f64')), 'UnsupportedGradient');
      assert.equal(fc.noGrad(() => v.exp()).dtype, 'f16');
    });
  });
}
