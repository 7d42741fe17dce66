// Contractions (addDot, matmul, fc.einsum, transpose): forward values and gradients against hand
// values, fc.gradcheck on permuted inputs, and bad inputs with their codes, on both variants.
import { describe, test } from 'node:test';
import { VARIANTS, engine, throwsCode, values, assert } from './helpers.mjs';

const opts = { eps: 1e-3, absTol: 3e-3, relTol: 2e-2 };
const close = (got, want) => {
  assert.equal(got.length, want.length);
  got.forEach((g, i) => assert.ok(Math.abs(g - want[i]) < 1e-5, `element ${i}: ${g} vs ${want[i]}`));
};

for (const variant of VARIANTS) {
  describe(variant, () => {
    test('addDot: x·w + bias, gradients to all three', async () => {
      const fc = await engine(variant);
      const x = fc.variable(['b', 'in'], [2, 2], [1, 2, 3, 4]);
      const w = fc.variable(['in', 'out'], [2, 3], [1, 2, 3, 4, 5, 6]);
      const bias = fc.variable(['out'], [3], [10, 20, 30]);
      const y = x.addDot(w, 'in', bias);
      assert.deepEqual(y.tags, ['b', 'out']);
      assert.deepEqual(values(y), [19, 32, 45, 29, 46, 63]);
      y.sumAll().backward();
      assert.deepEqual(values(x.grad()), [6, 15, 6, 15]);
      assert.deepEqual(values(w.grad()), [4, 4, 4, 6, 6, 6]);
      assert.deepEqual(values(bias.grad()), [2, 2, 2]);
      fc.gradcheck((x, w, bias) => x.permuteTo(['in', 'b']).addDot(w, 'in', bias).tanh().sumAll(), [x, w, bias], opts);
      const e = throwsCode(() => x.addDot(w, 'in', fc.ones(['zz'], [3])), 'ShapeMismatch');
      assert.match(e.message, /'zz'/);
      throwsCode(() => x.addDot(w, 'in', fc.ones(['out'], [4])), 'ShapeMismatch');
      throwsCode(() => x.addDot(w, 3, bias), 'InvalidArgument');
    });

    test('matmul: positional, transposeY, gradients', async () => {
      const fc = await engine(variant);
      const x = fc.variable(['m', 'k'], [2, 2], [1, 2, 3, 4]);
      const y = fc.variable(['p', 'n'], [2, 2], [5, 6, 7, 8]);
      const z = x.matmul(y);
      assert.deepEqual(z.tags, ['m', 'n']);
      assert.deepEqual(values(z), [19, 22, 43, 50]);
      assert.deepEqual(values(x.matmul(fc.constant(['n', 'p'], [2, 2], [5, 6, 7, 8]), true)), [17, 23, 39, 53]);
      z.sumAll().backward();
      assert.deepEqual(values(x.grad()), [11, 15, 11, 15]);
      assert.deepEqual(values(y.grad()), [4, 4, 6, 6]);
      const q = fc.variable(['b', 't', 'd'], [2, 3, 2], [0.1, -0.5, 0.3, 0.9, -0.2, 0.4, 0.7, -0.8, 0.25, 0.6, -0.35, 0.15]);
      const kk = fc.variable(['s', 'b', 'd'], [1, 2, 2], [0.5, -0.3, 0.2, 0.8]);
      assert.deepEqual(q.matmul(kk.permuteTo(['b', 's', 'd']), true).tags, ['b', 't', 's']);
      fc.gradcheck((q, kk) => q.matmul(kk.permuteTo(['b', 's', 'd']), true).tanh().sumAll(), [q, kk], opts);
      const e = throwsCode(() => x.matmul(fc.ones(['k', 'm'], [2, 3])), 'ShapeMismatch');
      assert.match(e.message, /withTags/);
      throwsCode(() => x.matmul(fc.ones(['k', 'n'], [3, 2])), 'ShapeMismatch');
      throwsCode(() => x.matmul(fc.ones(['n'], [2])), 'ShapeMismatch');
    });

    test('einsum: named structures and their gradients', async () => {
      const fc = await engine(variant);
      const a = fc.constant(['i', 'j'], [2, 3], [1, 2, 3, 4, 5, 6]);
      assert.deepEqual(values(fc.einsum(a, fc.constant(['j'], [3], [1, 1, 2]), ['i'])), [9, 21]);
      const outer = fc.einsum(fc.constant(['i'], [2], [1, 2]), fc.constant(['j'], [2], [3, 4]), ['j', 'i']);
      assert.deepEqual(outer.tags, ['j', 'i']);
      assert.deepEqual(values(outer), [3, 6, 4, 8]);
      // Trace-like: both axes contracted.
      const p = fc.variable(['i', 'j'], [2, 2], [1, 2, 3, 4]);
      const r = fc.variable(['j', 'i'], [2, 2], [1, 0, 0, 1]);
      const t = fc.einsum(p, r, []);
      assert.equal(t.item(), 5);
      t.backward();
      assert.deepEqual(values(p.grad()), [1, 0, 0, 1]);
      assert.deepEqual(values(r.grad()), [1, 3, 2, 4]);
      // An axis only one operand has, not kept: summed away; its gradient broadcasts back.
      const s = fc.variable(['i', 's'], [2, 2], [1, 2, 3, 4]);
      const u = fc.einsum(s, fc.constant(['j'], [1], [2]), ['i', 'j']);
      assert.deepEqual(values(u), [6, 14]);
      u.sumAll().backward();
      assert.deepEqual(values(s.grad()), [2, 2, 2, 2]);
      fc.gradcheck((p, r) => fc.einsum(p.permuteTo(['j', 'i']), r, ['j']).tanh().sumAll(), [p, r], opts);
      assert.match(throwsCode(() => fc.einsum(p, r, ['i', 'z']), 'ShapeMismatch').message, /'z'/);
      throwsCode(() => fc.einsum(p, fc.ones(['j'], [3]), ['i']), 'ShapeMismatch');
      throwsCode(() => fc.einsum(p, r, 'i'), 'InvalidArgument');
    });

    test('transpose: swaps two names, gradient swaps back', async () => {
      const fc = await engine(variant);
      const x = fc.variable(['a', 'b'], [2, 3], [1, 2, 3, 4, 5, 6]);
      const t = x.transpose('a', 'b');
      assert.deepEqual(t.tags, ['b', 'a']);
      assert.deepEqual(t.shape, [2, 3]);
      const r = t.permuteTo(['a', 'b']);
      assert.deepEqual(r.shape, [3, 2]);
      assert.deepEqual(values(r), [1, 4, 2, 5, 3, 6]);
      r.mul(fc.constant(['a', 'b'], [3, 2], [1, 2, 3, 4, 5, 6])).sumAll().backward();
      assert.deepEqual(values(x.grad()), [1, 3, 5, 2, 4, 6]);
      close(values(x.transpose('b', 'a').permuteTo(['a', 'b'])), [1, 4, 2, 5, 3, 6]);
      assert.match(throwsCode(() => x.transpose('a', 'a'), 'InvalidArgument').message, /'a'/);
      assert.match(throwsCode(() => x.transpose('a', 'zz'), 'ShapeMismatch').message, /'zz'/);
    });
  });
}
