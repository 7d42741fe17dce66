// Softmax and the losses through the facade: the same values as the C++ tests, integer labels
// from JS, and a classifier that trains.
import { describe, test } from 'node:test';
import { VARIANTS, engine, throwsCode, values, assert } from './helpers.mjs';

for (const variant of VARIANTS) {
  describe(variant, () => {
    test('softmax, logSoftmax and crossEntropy values', async () => {
      const fc = await engine(variant);
      const x = fc.constant(['batch', 'class'], [2, 3], [1, 2, 3, 0, 0, 0]);
      const p = values(x.softmax('class'));
      const e = [Math.exp(1), Math.exp(2), Math.exp(3)];
      const z = e[0] + e[1] + e[2];
      e.forEach((v, i) => assert.ok(Math.abs(p[i] - v / z) < 1e-6));
      assert.ok(Math.abs(values(x.logSoftmax('class'))[3] - Math.log(1 / 3)) < 1e-6);
      const labels = fc.constant(['batch'], [2], [2, 0], 'i32');
      const want = (-Math.log(e[2] / z) - Math.log(1 / 3)) / 2;
      assert.ok(Math.abs(x.crossEntropy(labels, 'class').item() - want) < 1e-6);
      assert.ok(Math.abs(x.crossEntropy(labels, 'class', { reduction: 'sum' }).item() - 2 * want) < 1e-5);
      assert.deepEqual(x.crossEntropy(labels, 'class', { reduction: 'none' }).shape, [2]);
      assert.ok(Math.abs(x.logSoftmax('class').nllLoss(labels, 'class').item() - want) < 1e-6);
      const t = fc.constant(['batch', 'class'], [2, 3], [1, 1, 1, 1, 1, 1]);
      assert.ok(Math.abs(x.mseLoss(t).item() - (0 + 1 + 4 + 1 + 1 + 1) / 6) < 1e-6);
    });

    test('crossEntropy gradients pass gradcheck, with label smoothing', async () => {
      const fc = await engine(variant);
      const logits = fc.variable(['batch', 'class'], [3, 4], [0.1, -0.3, 0.7, 0.2, 1, 0, -1, 0.5, 0.3, 0.3, -0.2, 0.9]);
      const labels = fc.constant(['batch'], [3], [3, 0, 1], 'i32');
      const r = fc.gradcheck((l) => l.crossEntropy(labels, 'class', { labelSmoothing: 0.1 }), [logits]);
      assert.equal(r.checked, 12);
    });

    test('losses: bad inputs', async () => {
      const fc = await engine(variant);
      const x = fc.ones(['batch', 'class'], [2, 3]);
      throwsCode(() => x.crossEntropy(fc.constant(['batch'], [2], [0, 3], 'i32'), 'class'), 'IndexOutOfRange');
      throwsCode(() => x.crossEntropy(fc.constant(['batch'], [2], [0, 1]), 'class'), 'DTypeMismatch');
      throwsCode(() => x.crossEntropy(fc.constant(['batch'], [2], [0, 1], 'i32'), 'class', { reduction: 'avg' }), 'InvalidArgument');
      throwsCode(() => x.crossEntropy([0, 1], 'class'), 'InvalidArgument');
      throwsCode(() => x.softmax('nope'), 'ShapeMismatch');
    });

    test('a softmax classifier trains with crossEntropy', async () => {
      const fc = await engine(variant);
      const xs = [], ys = [];
      for (let i = 0; i < 30; ++i) {
        const k = i % 3;
        xs.push((k === 0) * 2 - 1 + 0.1 * Math.sin(i), (k === 1) * 2 - 1 + 0.1 * Math.cos(i));
        ys.push(k);
      }
      const x = fc.constant(['batch', 'in'], [30, 2], xs);
      const labels = fc.constant(['batch'], [30], ys, 'i32');
      let w = fc.variable(['class', 'in'], [3, 2], [0.1, -0.1, 0.05, 0.2, -0.2, 0]);
      const losses = [];
      for (let step = 0; step < 100; ++step) {
        const next = fc.scope(() => {
          const loss = x.dot(w, 'in').crossEntropy(labels, 'class');
          loss.backward();
          losses.push(loss.item());
          return fc.noGrad(() => fc.variable(['class', 'in'], [3, 2], w.detach().sub(w.grad().scale(0.5)).toArray()));
        });
        w.dispose();
        w = next;
      }
      assert.ok(losses.at(-1) < losses[0] / 5, `${losses[0]} -> ${losses.at(-1)}`);
    });
  });
}

for (const variant of VARIANTS) {
  describe(`${variant} norms`, () => {
    test('layerNorm, rmsNorm and l2Normalize: values, affine form, gradcheck, errors', async () => {
      const fc = await engine(variant);
      const x = fc.variable(['t', 'd'], [2, 3], [1, 2, 3, -1, 0, 4]);
      const ln = values(x.layerNorm('d'));
      const s = Math.sqrt(2 / 3 + 1e-5);
      assert.ok(Math.abs(ln[0] + 1 / s) < 1e-5 && Math.abs(ln[2] - 1 / s) < 1e-5);
      const n = Math.sqrt(14);
      assert.ok(Math.abs(values(x.l2Normalize('d'))[2] - 3 / n) < 1e-6);
      assert.ok(Math.abs(values(x.rmsNorm('d'))[1] - 2 / Math.sqrt(14 / 3 + 1e-6)) < 1e-5);
      const g = fc.variable(['d'], [3], [1, 0.5, 2]);
      const b = fc.variable(['d'], [3], [0, 0.1, -0.1]);
      const w = fc.constant(['t', 'd'], [2, 3], [0.3, -1, 2, 1, 0.5, -0.7]);
      fc.gradcheck((x, g, b) => x.layerNorm('d', { weight: g, bias: b }).mul(w).sumAll(), [x, g, b]);
      fc.gradcheck((x, g) => x.rmsNormMul('d', g).mul(w).sumAll(), [x, g]);
      fc.gradcheck((x) => x.l2Normalize('t').mul(w).sumAll(), [x]);
      throwsCode(() => x.layerNorm('d', { weight: g }), 'InvalidArgument');
      throwsCode(() => x.layerNorm('z'), 'ShapeMismatch');
      throwsCode(() => x.rmsNormMul('d', fc.ones(['t'], [2])), 'ShapeMismatch');
    });
  });
}

// huberLoss, bceLoss, bceWithLogitsLoss, klDivLoss: the values of the C++ tests (torch's formulas
// in double precision), options as an object or a bare reduction, gradcheck and bad inputs.
for (const variant of VARIANTS) {
  describe(`${variant} pointwise losses`, () => {
    const near = (got, want) => assert.ok(Math.abs(got - want) <= 1e-5 * (1 + Math.abs(want)), `${got} vs ${want}`);

    test('huberLoss and bceWithLogitsLoss match torch', async () => {
      const fc = await engine(variant);
      const x = fc.variable(['batch', 'out'], [2, 3], [0.2, -1.5, 3.0, 0.9, -0.3, 2.2]);
      const t = fc.variable(['batch', 'out'], [2, 3], [0.0, 0.5, 0.5, 1.0, -2.0, 2.0]);
      near(x.huberLoss(t).item(), 0.7908333333333334);
      near(x.huberLoss(t, 'sum').item(), 4.745);
      near(x.huberLoss(t, { delta: 0.5 }).item(), 0.46166666666666667);
      near(x.huberLoss(t.permuteTo(['out', 'batch']), { delta: 0.5, reduction: 'sum' }).item(), 2.77);
      assert.deepEqual(x.huberLoss(t, { reduction: 'none' }).shape, [2, 3]);
      fc.gradcheck((x, t) => x.huberLoss(t, { delta: 0.7 }), [x, t]);
      const z = fc.variable(['n'], [6], [-3, -0.5, 0, 0.7, 2.5, 40]);
      const p = fc.variable(['n'], [6], [0, 1, 0.5, 1, 0, 0.25]);
      near(z.bceWithLogitsLoss(p).item(), 5.782981216581967);
      near(z.bceWithLogitsLoss(p, { reduction: 'sum' }).item(), 34.6978872994918);
      z.bceWithLogitsLoss(p, 'sum').backward();
      near(values(z.grad())[5], 0.75);
      near(values(p.grad())[5], -40);
    });

    test('bceLoss clamps at -100; klDivLoss with and without logTarget', async () => {
      const fc = await engine(variant);
      const x = fc.variable(['n'], [6], [0.1, 0.9, 0.5, 0.0, 1.0, 0.3]);
      const t = fc.constant(['n'], [6], [0, 1, 0.3, 1, 0, 0.7]);
      near(x.bceLoss(t).item(), 33.64227527634756);
      near(x.bceLoss(t, { reduction: 'sum' }).item(), 201.85365165808537);
      x.bceLoss(t, 'sum').backward();
      const g = values(x.grad());
      near(g[0], 0.1 / 0.09);
      assert.equal(g[3], 0);  // the clamped term has gradient 0
      const lp = fc.variable(['batch', 'class'], [2, 3], [-1.2, -0.3, -2.0, -0.7, -0.1, -3.0]);
      const q = fc.variable(['batch', 'class'], [2, 3], [0.2, 0.5, 0, 0.3, 0.7, 0]);
      near(lp.klDivLoss(q).item(), -0.10155424580361438);
      near(lp.klDivLoss(q, 'sum').item(), -0.6093254748216863);
      const lq = fc.variable(['class', 'batch'], [3, 2], [-1.6, -1.2, -0.7, -0.36, -2.3, -5]);
      near(lp.klDivLoss(lq, { logTarget: true }).item(), -0.10915653776066786);
      fc.gradcheck((a, b) => a.klDivLoss(b, { logTarget: true, reduction: 'sum' }), [lp, lq]);
      const pr = fc.variable(['n'], [3], [0.2, 0.45, 0.9]);
      const pt = fc.variable(['n'], [3], [0.1, 0.5, 1]);
      fc.gradcheck((a, b) => a.bceLoss(b), [pr, pt]);
    });

    test('pointwise losses: bad inputs', async () => {
      const fc = await engine(variant);
      const x = fc.full(['batch', 'out'], [2, 3], 0.5);
      throwsCode(() => x.huberLoss(fc.ones(['batch', 'k'], [2, 3])), 'ShapeMismatch');
      throwsCode(() => x.bceLoss(fc.ones(['batch'], [2])), 'ShapeMismatch');
      throwsCode(() => x.scale(3).bceLoss(x), 'InvalidArgument');
      throwsCode(() => x.huberLoss(x, { delta: 0 }), 'InvalidArgument');
      throwsCode(() => x.huberLoss(x, { delta: '1' }), 'InvalidArgument');
      throwsCode(() => x.klDivLoss(x, { logTarget: 1 }), 'InvalidArgument');
      throwsCode(() => x.bceWithLogitsLoss(x, { reductoin: 'sum' }), 'InvalidArgument');
      throwsCode(() => x.bceWithLogitsLoss(x, 'avg'), 'InvalidArgument');
      throwsCode(() => x.klDivLoss([1, 2]), 'InvalidArgument');
    });
  });
}
