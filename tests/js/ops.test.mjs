// The activations and axis reductions added for training: a few values of each against JS Math,
// the C++ edge-point conventions, and fc.gradcheck on losses that use every one, on both variants.
import { describe, test } from 'node:test';
import { VARIANTS, engine, throwsCode, values, assert } from './helpers.mjs';

const close = (got, want, tol = 1e-5) => {
  assert.equal(got.length, want.length);
  got.forEach((g, i) => assert.ok(Math.abs(g - want[i]) <= tol * (1 + Math.abs(want[i])), `[${i}] ${g} vs ${want[i]}`));
};
const sigmoid = (x) => 1 / (1 + Math.exp(-x));
const erf = (x) => {  // Abramowitz–Stegun 7.1.26 (|error| < 1.5e-7)
  const s = Math.sign(x), a = Math.abs(x), t = 1 / (1 + 0.3275911 * a);
  const y = 1 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * Math.exp(-a * a);
  return s * y;
};

for (const variant of VARIANTS) {
  describe(variant, () => {
    test('activations match JS Math', async () => {
      const fc = await engine(variant);
      const xs = [-2.5, -1, -0.3, 0.4, 1, 2.2];
      const x = fc.constant(['d'], [xs.length], xs);
      const check = (t, f, tol) => close(values(t), xs.map(f), tol);
      check(x.leakyRelu(), (v) => (v > 0 ? v : 0.01 * v));
      check(x.leakyRelu(0.2), (v) => (v > 0 ? v : 0.2 * v));
      check(x.gelu(), (v) => 0.5 * v * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (v + 0.044715 * v ** 3))));
      check(x.geluErf(), (v) => 0.5 * v * (1 + erf(v / Math.SQRT2)), 1e-5);
      check(x.quickGelu(), (v) => v * sigmoid(1.702 * v));
      check(x.silu(), (v) => v * sigmoid(v));
      check(x.elu(), (v) => (v > 0 ? v : Math.expm1(v)));
      check(x.elu(0.5), (v) => (v > 0 ? v : 0.5 * Math.expm1(v)));
      check(x.sin(), Math.sin);
      check(x.cos(), Math.cos);
      check(x.reciprocal(), (v) => 1 / v);
      check(x.clamp(-1, 0.5), (v) => Math.min(Math.max(v, -1), 0.5));
      const p = fc.constant(['d'], [3], [0.25, 1, 4]);
      close(values(p.log1p()), [0.25, 1, 4].map(Math.log1p));
      close(values(p.rsqrt()), [2, 1, 0.5]);
    });

    test('axis reductions match JS and drop the axis', async () => {
      const fc = await engine(variant);
      const x = fc.constant(['r', 'c'], [2, 3], [1, 5, 2, -1, -3, 4]);
      assert.deepEqual(x.max('c').tags, ['r']);
      close(values(x.max('c')), [5, 4]);
      close(values(x.min('r')), [-1, -3, 2]);
      close(values(x.variance('c')), [13 / 3, 13]);
      close(values(x.variance('c', 0)), [26 / 9, 26 / 3]);
      close(values(x.logsumexp('c')), [Math.log(Math.exp(1) + Math.exp(5) + Math.exp(2)), Math.log(Math.exp(-1) + Math.exp(-3) + Math.exp(4))]);
      const cs = x.cumsum('c');
      assert.deepEqual(cs.tags, ['r', 'c']);
      close(values(cs), [1, 6, 8, -1, -4, 0]);
      close(values(x.prod('r')), [-1, -15, 8]);
      close(values(x.norm('c')), [Math.hypot(1, 5, 2), Math.hypot(-1, -3, 4)]);
      // Axes are named: a permuted view reduces the same way.
      close(values(x.permuteTo(['c', 'r']).max('c')), [5, 4]);
    });

    test('edge points: first extremum, zeros in prod, clamp boundaries', async () => {
      const fc = await engine(variant);
      const x = fc.variable(['d'], [4], [3, 1, 3, 0]);
      x.max('d').backward();
      assert.deepEqual(values(x.grad()), [1, 0, 0, 0]);
      x.zeroGrad();
      x.prod('d').backward();
      assert.deepEqual(values(x.grad()), [0, 0, 0, 9]);
      const c = fc.variable(['d'], [3], [-1, 0, 1]);
      c.clamp(-1, 0.5).sumAll().backward();
      assert.deepEqual(values(c.grad()), [1, 1, 0]);
    });

    test('gradcheck through every new op', async () => {
      const fc = await engine(variant);
      const x = fc.variable(['r', 'c'], [3, 4], [0.3, -1.2, 0.7, 1.5, -0.4, 0.9, -1.7, 0.2, 1.1, -0.6, 0.45, -0.85]);
      const opts = { eps: 1e-3, absTol: 3e-3, relTol: 2e-2 };
      fc.gradcheck((x) => x.leakyRelu(0.1).add(x.gelu()).add(x.geluErf()).add(x.quickGelu())
        .add(x.silu()).add(x.elu()).add(x.sin()).add(x.cos()).add(x.clamp(-1, 1)).sumAll(), [x], opts);
      fc.gradcheck((x) => x.abs().addScalar(0.5).log1p().add(x.abs().addScalar(0.5).rsqrt())
        .add(x.abs().addScalar(0.5).reciprocal()).sumAll(), [x], opts);
      fc.gradcheck((x) => x.variance('c').add(x.max('c')).add(x.min('c')).add(x.logsumexp('c'))
        .add(x.prod('c')).add(x.norm('c')).sumAll()
        .add(x.cumsum('r').mul(x).sumAll()), [x], opts);
      fc.gradcheck((x) => x.permuteTo(['c', 'r']).narrow('c', 1, 3).variance('c', 0).sumAll(), [x], opts);
    });

    test('bad inputs are FucinaErrors naming the problem', async () => {
      const fc = await engine(variant);
      const x = fc.ones(['r', 'c'], [2, 3]);
      const e = throwsCode(() => x.max('missing'), 'ShapeMismatch');
      assert.match(e.message, /'missing'/);
      assert.match(e.message, /r=2/);
      throwsCode(() => fc.ones(['r', 'c'], [0, 3]).max('r'), 'InvalidArgument');
      throwsCode(() => fc.ones(['r'], [1]).variance('r'), 'InvalidArgument');
      throwsCode(() => x.variance('c', 0.5), 'InvalidArgument');
      throwsCode(() => x.clamp(1, -1), 'InvalidArgument');
      throwsCode(() => x.clamp('a', 1), 'InvalidArgument');
      throwsCode(() => x.leakyRelu('a'), 'InvalidArgument');
      throwsCode(() => x.sum(3), 'InvalidArgument');
      throwsCode(() => x.to('i32').norm('r'), 'DTypeMismatch');  // 16-bit constants compute (Note [Dtype rules])
    });
  });
}
