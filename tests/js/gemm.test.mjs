// The GEMM behind dot, addDot and dotPacked in wasm against a plain JavaScript product (double
// precision), on both variants: few rows (the 1- and 2-row short tiles, Note [Short tiles] in
// src/fucina/backend/cpu/gemm_simd.cpp), full tiles with a ragged rest, rows past a block (MC),
// columns past several panel groups (from four panels wasm packs even an untransposed left operand,
// Note [A read in place]), depths of one and of two slices, a transposed left operand and a bias. Natively the
// same is tests/cpp/gemm_tests.cpp against kernels::gemmRef.
import { describe, test } from 'node:test';
import { VARIANTS, engine, values, assert } from './helpers.mjs';

const wave = (n, phase) => Array.from({ length: n }, (_, i) => Math.sin(0.37 * i + phase));

// y[i][j] = sum_p x[i][p] · w[j][p] (+ bias[j]), x [m, k] and w [n, k] row-major.
function reference(x, w, bias, m, n, k) {
  const y = new Float64Array(m * n);
  for (let i = 0; i < m; ++i)
    for (let j = 0; j < n; ++j) {
      let s = bias ? bias[j] : 0;
      for (let p = 0; p < k; ++p) s += x[i * k + p] * w[j * k + p];
      y[i * n + j] = s;
    }
  return y;
}

function assertClose(got, want, k, what) {
  assert.equal(got.length, want.length, what);
  const tol = 2e-6 * (k + 2);  // |values| ≤ 1: k products of size ≤ 1 in f32
  for (let i = 0; i < got.length; ++i)
    if (!(Math.abs(got[i] - want[i]) <= tol)) assert.fail(`${what}: element ${i} is ${got[i]}, want ${want[i]}`);
}

for (const variant of VARIANTS) {
  describe(variant, () => {
    test('dot, addDot and dotPacked equal a plain product on few rows, ragged tiles and transposed operands', async () => {
      const fc = await engine(variant);
      for (const m of [1, 2, 3, 4, 5, 9, 67])
        for (const n of [1, 7, 10, 33, 66, 70])
          for (const k of [1, 9, 600]) {
            const what = `m=${m} n=${n} k=${k}`;
            fc.scope(() => fc.noGrad(() => {
              const xv = wave(m * k, 0.1), wv = wave(n * k, 0.7), bv = wave(n, 2.3);
              const x = fc.constant(['t', 'e'], [m, k], xv);
              const xt = fc.constant(['e', 't'], [k, m], Array.from({ length: m * k }, (_, i) => xv[(i % m) * k + Math.floor(i / m)]));
              const w = fc.constant(['o', 'e'], [n, k], wv), bias = fc.constant(['o'], [n], bv);
              const want = reference(xv, wv, null, m, n, k), wantBias = reference(xv, wv, bv, m, n, k);
              assertClose(values(x.dot(w, 'e')), want, k, `${what} dot`);
              assertClose(values(xt.dot(w, 'e')), want, k, `${what} dot, x transposed`);
              assertClose(values(x.addDot(w, 'e', bias)), wantBias, k, `${what} addDot`);
              const packed = fc.packRhs(w, 'e');
              assertClose(values(x.dotPacked(packed, bias)), wantBias, k, `${what} dotPacked`);
              packed.dispose();
            }));
          }
    });

    test('a last panel of one or two columns gives the bits of the same columns in a wider product', async () => {
      // Note [Edge columns] in src/fucina/backend/cpu/gemm_simd.cpp: with A packed (wide enough,
      // transposed or a prepared convolution's weights) those columns run with A's rows in the vector.
      const fc = await engine(variant);
      for (const m of [1, 5, 32, 37, 130])
        for (const k of [1, 9, 600])
          for (const n of [33, 34, 65, 66]) {
            fc.scope(() => fc.noGrad(() => {
              const xv = wave(m * k, 0.1), wide = 72;
              const x = fc.constant(['t', 'e'], [m, k], xv);
              const xt = fc.constant(['e', 't'], [k, m], Array.from({ length: m * k }, (_, i) => xv[(i % m) * k + Math.floor(i / m)]));
              const w = fc.constant(['o', 'e'], [wide, k], wave(wide * k, 0.7)), bias = fc.constant(['o'], [wide], wave(wide, 2.3));
              const first = (t) => t.narrow('o', 0, n);
              for (const [name, a] of [['x', x], ['x transposed', xt]]) {
                const full = values(first(a.addDot(w, 'e', bias))), edge = values(a.addDot(first(w), 'e', first(bias)));
                assert.deepEqual(edge, full, `m=${m} n=${n} k=${k} ${name}`);
              }
            }));
          }
    });
  });
}
