// rope and groupedAttention: forward values against hand-computed ones and a reference composed of
// existing ops, gradients against the composed graph's, gradcheck, and bad inputs, on both variants.
import { describe, test } from 'node:test';
import { VARIANTS, engine, throwsCode, values, assert } from './helpers.mjs';

const opts = { eps: 1e-3, absTol: 3e-3, relTol: 2e-2 };
const wave = (n, phase) => Array.from({ length: n }, (_, i) => Math.sin(0.7 * i + phase));
const close = (got, want, tol = 1e-5) => {
  assert.equal(got.length, want.length);
  got.forEach((g, i) => assert.ok(Math.abs(g - want[i]) <= tol, `element ${i}: ${g} vs ${want[i]}`));
};
const renamed = (t, from, to) => t.withTags(t.tags.map((x) => (x === from ? to : x)));

// Attention from existing ops, for q {b, head, t, d}: kv heads repeated by indexSelect.
function composed(fc, q, k, v, causal, scale) {
  const [H, Tq] = [q.shape[1], q.shape[2]];
  const [Hkv, Tk] = [k.shape[1], k.shape[2]];
  const ids = fc.constant(['head'], [H], Array.from({ length: H }, (_, h) => Math.floor(h / (H / Hkv))), 'i32');
  const ke = renamed(k.indexSelect('head', ids), 't', 's');
  const ve = renamed(v.indexSelect('head', ids), 't', 's');
  let scores = q.dot(ke, 'd').scale(scale);
  if (causal) {
    const mask = [];
    for (let i = 0; i < Tq; ++i) for (let j = 0; j < Tk; ++j) mask.push(j > i + Tk - Tq ? 1 : 0);
    scores = scores.maskedFill(fc.constant(['t', 's'], [Tq, Tk], mask, 'u8'), -1e30);
  }
  return scores.softmax('s').dot(ve, 's');
}

for (const variant of VARIANTS) {
  describe(variant, () => {
    test('rope: hand-computed values in both modes, and the table form agrees', async () => {
      const fc = await engine(variant);
      const x = fc.constant(['t', 'd'], [1, 4], [1, 2, 3, 4]);
      // offset 1, base 100: angles 1 (pair 0) and 0.1 (pair 1).
      const [c0, s0, c1, s1] = [Math.cos(1), Math.sin(1), Math.cos(0.1), Math.sin(0.1)];
      close(values(x.rope({ base: 100, offset: 1 })), [c0 - 3 * s0, 2 * c1 - 4 * s1, s0 + 3 * c0, 2 * s1 + 4 * c1]);
      close(values(x.rope({ base: 100, offset: 1, mode: 'interleaved' })), [c0 - 2 * s0, s0 + 2 * c0, 3 * c1 - 4 * s1, 3 * s1 + 4 * c1]);
      const cos = fc.constant(['t', 'd'], [2, 2], [1, 1, c0, c1]);
      const sin = fc.constant(['t', 'd'], [2, 2], [0, 0, s0, s1]);
      close(values(x.rope(cos, sin, { offset: 1 })), values(x.rope({ base: 100, offset: 1 })));
      // Custom axis names; a permuted view keeps its axis order.
      const y = fc.constant(['p', 'b', 'e'], [2, 2, 2], wave(8, 0.3));
      const r = y.permuteTo(['e', 'b', 'p']).rope({ position: 'p', dim: 'e' });
      assert.deepEqual(r.tags, ['e', 'b', 'p']);
      close(values(r.permuteTo(['p', 'b', 'e']).contiguous()), values(y.rope({ position: 'p', dim: 'e' })));
    });

    test('rope: gradients are the inverse rotation (gradcheck) from both sources', async () => {
      const fc = await engine(variant);
      const x = fc.variable(['h', 't', 'd'], [2, 3, 4], wave(24, 0.2));
      const w = fc.constant(['h', 't', 'd'], [2, 3, 4], wave(24, 1.4));
      const cos = fc.constant(['t', 'd'], [5, 2], wave(10, 0).map(Math.cos));
      const sin = fc.constant(['t', 'd'], [5, 2], wave(10, 0).map(Math.sin));
      fc.gradcheck((x) => x.rope({ offset: 2, mode: 'interleaved' }).mul(w).sumAll(), [x], opts);
      fc.gradcheck((x) => x.permuteTo(['d', 'h', 't']).rope(cos, sin, { offset: 1 }).mul(w).sumAll(), [x], opts);
      x.rope({ offset: 1 }).mul(w).sumAll().backward();
      const g = x.grad();
      assert.deepEqual(g.shape, [2, 3, 4]);
    });

    test('groupedAttention: values and gradients match the composed reference', async () => {
      const fc = await engine(variant);
      for (const [H, Hkv, Tq, Tk, causal, scale] of [[2, 2, 3, 3, true, undefined], [4, 2, 2, 5, true, 0.6], [2, 1, 3, 2, false, undefined]]) {
        const q = fc.variable(['b', 'head', 't', 'd'], [2, H, Tq, 3], wave(2 * H * Tq * 3, 0.1));
        const k = fc.variable(['b', 'head', 't', 'd'], [2, Hkv, Tk, 3], wave(2 * Hkv * Tk * 3, 0.9));
        const v = fc.variable(['b', 'head', 't', 'd'], [2, Hkv, Tk, 2], wave(2 * Hkv * Tk * 2, 1.7));
        const got = fc.groupedAttention(q, k, v, { causal, scale });
        const want = composed(fc, q, k, v, causal, scale ?? 1 / Math.sqrt(3));
        assert.deepEqual(got.tags, ['b', 'head', 't', 'd']);
        assert.deepEqual(got.shape, [2, H, Tq, 2]);
        close(values(got), values(want));
        const w = fc.constant(got.tags, got.shape, wave(2 * H * Tq * 2, 2.3));
        got.mul(w).sumAll().backward();
        const grads = [q, k, v].map((t) => t.grad());
        [q, k, v].forEach((t, i) => assert.deepEqual(grads[i].shape, t.shape));
        for (const t of [q, k, v]) t.zeroGrad();
        want.mul(w).sumAll().backward();
        [q, k, v].forEach((t, i) => close(values(grads[i]), values(t.grad())));
      }
    });

    test('groupedAttention: gradcheck with permuted inputs, and a hand-computed case', async () => {
      const fc = await engine(variant);
      const q = fc.variable(['t', 'd', 'head'], [2, 2, 2], wave(8, 0.4));
      const k = fc.variable(['d', 'head', 't'], [2, 1, 3], wave(6, 1.2));
      const v = fc.variable(['head', 't', 'd'], [1, 3, 2], wave(6, 2.2));
      const w = fc.constant(['head', 't', 'd'], [2, 2, 2], wave(8, 0.8));
      fc.gradcheck((q, k, v) => fc.groupedAttention(q, k, v).mul(w).sumAll(), [q, k, v], opts);
      // Scores 0 and ln 3 (scale 1): the last query weighs the values 1/4 and 3/4.
      const a = fc.groupedAttention(fc.constant(['head', 't', 'd'], [1, 2, 1], [1, 1]),
        fc.constant(['head', 't', 'd'], [1, 2, 1], [0, Math.log(3)]),
        fc.constant(['head', 't', 'd'], [1, 2, 1], [10, 20]));
      close(values(a), [10, 17.5]);
    });

    test('rope and groupedAttention: bad inputs', async () => {
      const fc = await engine(variant);
      const x = fc.ones(['t', 'd'], [2, 3]);
      assert.match(throwsCode(() => x.rope(), 'InvalidArgument').message, /'d'/);
      assert.match(throwsCode(() => x.rope({ position: 'pos' }), 'ShapeMismatch').message, /'pos'/);
      throwsCode(() => fc.ones(['t', 'd'], [2, 4]).rope({ mode: 'sideways' }), 'InvalidArgument');
      throwsCode(() => fc.ones(['t', 'd'], [2, 4]).rope({ bogus: 1 }), 'InvalidArgument');
      const table = fc.variable(['t', 'd'], [2, 2], [1, 1, 1, 1]);
      throwsCode(() => fc.ones(['t', 'd'], [2, 4]).rope(table, table), 'UnsupportedGradient');
      const q = fc.ones(['head', 't', 'd'], [3, 2, 4]);
      const k = fc.ones(['head', 't', 'd'], [2, 2, 4]);
      assert.match(throwsCode(() => fc.groupedAttention(q, k, k), 'ShapeMismatch').message, /'head'/);
      assert.match(throwsCode(() => fc.groupedAttention(q, q, q, { time: 'z' }), 'ShapeMismatch').message, /'z'/);
      throwsCode(() => fc.groupedAttention(q, q.narrow('t', 0, 1), q.narrow('t', 0, 1)), 'InvalidArgument');
      throwsCode(() => fc.groupedAttention(q, q, q, { scale: 'big' }), 'InvalidArgument');
    });
  });
}
