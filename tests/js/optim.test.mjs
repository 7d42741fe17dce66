// fc.optim on both variants: the same hand-computed steps as tests/cpp/optim_tests.cpp, clipping,
// schedules, errors, and a tiny model trained with each optimizer.
import { describe, test } from 'node:test';
import { VARIANTS, engine, throwsCode, values, assert } from './helpers.mjs';

// p0 = [1, -2]; gradients g1 = [0.5, -1], g2 = [0.25, 0.5], g3 = [-1, 2], each delivered as the
// gradient of sum(p * g) (so the engine computes exactly g).
const P0 = [1, -2];
const GRADS = [[0.5, -1], [0.25, 0.5], [-1, 2]];

function threeSteps(fc, make) {
  const p = fc.variable(['d'], [2], P0);
  const opt = make([p]);
  const out = [];
  for (const g of GRADS) {
    fc.scope(() => {
      opt.zeroGrad();
      p.mul(fc.constant(['d'], [2], g)).sumAll().backward();
      opt.step();
    });
    out.push(values(p));
  }
  opt.dispose();
  return out;
}

function close(got, want, rel = 1e-5) {
  assert.equal(got.length, want.length);
  got.forEach((row, s) => row.forEach((x, i) => {
    const w = want[s][i];
    assert.ok(Math.abs(x - w) <= rel * Math.max(1, Math.abs(w)), `step ${s + 1} [${i}]: ${x} vs ${w}`);
  }));
}

// Least squares, y = x . w + b with w* = [2, -3], b* = 0.5; returns [first loss, last loss].
function train(fc, make, steps = 200, perStep) {
  const x = fc.constant(['batch', 'in'], [4, 2], [1, 0, 0, 1, 1, 1, -1, 2]);
  const y = fc.constant(['batch'], [4], [2.5, -2.5, -0.5, -7.5]);
  const w = fc.variable(['in'], [2], [0, 0]);
  const b = fc.variable([], [], [0]);
  const opt = make([w, b]);
  let first = 0, last = 0;
  for (let s = 0; s < steps; ++s) {
    const loss = fc.scope(() => {
      const err = x.dot(w, 'in').add(b).sub(y);
      const l = err.mul(err).meanAll();
      opt.zeroGrad();
      l.backward();
      perStep?.(opt, s, [w, b]);
      opt.step();
      return l.item();
    });
    if (s === 0) first = loss;
    last = loss;
  }
  opt.dispose();
  [x, y, w, b].forEach((t) => t.dispose());
  return [first, last];
}

for (const variant of VARIANTS) {
  describe(`${variant}: optim`, () => {
    test('SGD: plain, momentum, Nesterov, weight decay', async () => {
      const fc = await engine(variant);
      close(threeSteps(fc, (ps) => fc.optim.sgd(ps, { lr: 0.1 })),
        [[1 - 0.05, -2 + 0.1], [0.95 - 0.025, -1.9 - 0.05], [0.925 + 0.1, -1.95 - 0.2]]);
      // buf1 = g1; buf2 = 0.9 buf1 + g2 = [0.7, -0.4]; buf3 = 0.9 buf2 + g3 = [-0.37, 1.64]
      close(threeSteps(fc, (ps) => fc.optim.sgd(ps, { lr: 0.1, momentum: 0.9 })),
        [[1 - 0.05, -2 + 0.1], [0.95 - 0.07, -1.9 + 0.04], [0.88 + 0.037, -1.86 - 0.164]]);
      // d = g + 0.9 buf: [0.95, -1.9], [0.88, 0.14], [-1.333, 3.476]
      close(threeSteps(fc, (ps) => fc.optim.sgd(ps, { lr: 0.1, momentum: 0.9, nesterov: true })),
        [[1 - 0.095, -2 + 0.19], [0.905 - 0.088, -1.81 - 0.014], [0.817 + 0.1333, -1.824 - 0.3476]]);
      // d = g + 0.1 p: [0.6, -1.2], [0.344, 0.312], [-0.90944, 1.80888]
      close(threeSteps(fc, (ps) => fc.optim.sgd(ps, { lr: 0.1, weightDecay: 0.1 })),
        [[0.94, -1.88], [0.9056, -1.9112], [0.996544, -2.092088]]);
    });

    test('Adam and AdamW: three steps, L2 versus decoupled decay', async () => {
      const fc = await engine(variant);
      // Step 1 moves by lr * sign(g); then m = b1 m + (1-b1) g, v = b2 v + (1-b2) g^2,
      // p -= lr/(1-b1^t) * m / (sqrt(v)/sqrt(1-b2^t) + eps)
      close(threeSteps(fc, (ps) => fc.optim.adam(ps, { lr: 0.1 })),
        [[0.900000002, -1.9], [0.80678204, -1.8733663], [0.827417743, -1.91909948]]);
      close(threeSteps(fc, (ps) => fc.optim.adam(ps, { lr: 0.1, betas: [0.9, 0.999], eps: 1e-8, weightDecay: 0.1 })),
        [[0.900000002, -1.9], [0.805009766, -1.85374726], [0.812098261, -1.88636312]]);
      // AdamW: p *= 1 - 0.1 * 0.1 before each Adam step.
      close(threeSteps(fc, (ps) => fc.optim.adamw(ps, { lr: 0.1, weightDecay: 0.1 })),
        [[0.99 - 0.1, -1.98 + 0.1], [0.78788204, -1.8345663], [0.800638922, -1.86195381]]);
    });

    test('skips parameters without a gradient; lr getter and setter; zeroGrad', async () => {
      const fc = await engine(variant);
      const a = fc.variable(['d'], [2], P0);
      const b = fc.variable(['d'], [2], P0);
      const opt = fc.optim.sgd([a, b], { lr: 0.1 });
      assert.equal(opt.lr, 0.1);
      opt.lr = 0.5;
      assert.equal(opt.lr, 0.5);
      assert.equal(opt.params.length, 2);
      a.mul(fc.constant(['d'], [2], [1, 1])).sumAll().backward();
      opt.step();
      assert.deepEqual(values(a), [0.5, -2.5]);
      assert.deepEqual(values(b), P0);  // no gradient: untouched
      assert.equal(a.requiresGrad, true);
      opt.zeroGrad();
      assert.equal(a.grad(), null);
      opt.dispose();
      assert.equal(opt.isDisposed, true);
      throwsCode(() => opt.step(), 'InvalidArgument');
      a.dispose();
      b.dispose();
    });

    test('clipGradNorm: returns the norm, clips only above maxNorm', async () => {
      const fc = await engine(variant);
      const a = fc.variable(['d'], [2], [0, 0]);
      const b = fc.variable(['e'], [1], [0]);
      const seed = () => {
        a.zeroGrad();
        b.zeroGrad();
        a.mul(fc.constant(['d'], [2], [3, 4])).sumAll().add(b.mul(fc.constant(['e'], [1], [12])).sumAll()).backward();
      };
      seed();
      assert.equal(fc.optim.clipGradNorm([a, b], 13), 13);  // sqrt(9 + 16 + 144), not above
      assert.deepEqual(values(a.grad()), [3, 4]);
      assert.equal(fc.optim.clipGradNorm([a, b], 6.5), 13);
      const k = 6.5 / (13 + 1e-6);
      close([values(a.grad()), values(b.grad())], [[3 * k, 4 * k], [12 * k]], 1e-6);
      throwsCode(() => fc.optim.clipGradNorm([a, b], -1), 'InvalidArgument');
      throwsCode(() => fc.optim.clipGradNorm([a, 3], 1), 'InvalidArgument');
      a.dispose();
      b.dispose();
    });

    test('clipGradNormTensor: the norm as a tensor, the same clipping', async () => {
      const fc = await engine(variant);
      const a = fc.variable(['d'], [2], [0, 0]);
      a.mul(fc.constant(['d'], [2], [3, 4])).sumAll().backward();
      const high = fc.optim.clipGradNormTensor([a], 10);  // not above: the gradient is kept
      assert.deepEqual([high.tags, values(high)], [[], [5]]);
      assert.deepEqual(values(a.grad()), [3, 4]);
      assert.deepEqual(values(fc.optim.clipGradNormTensor([a], 2.5)), [5]);
      const k = Math.fround(2.5 / (5 + 1e-6));
      close([values(a.grad())], [[Math.fround(3 * k), Math.fround(4 * k)]], 1e-7);
      assert.deepEqual(values(fc.optim.clipGradNormTensor([], 1)), [0]);
      throwsCode(() => fc.optim.clipGradNormTensor([a], NaN), 'InvalidArgument');
      a.dispose();
    });

    test('schedules at their boundaries', async () => {
      const fc = await engine(variant);
      const { linearWarmup, cosineDecay, warmupCosine } = fc.optim;
      assert.equal(linearWarmup(0, 10, 0.5), 0);
      assert.equal(linearWarmup(5, 10, 0.5), 0.25);
      assert.equal(linearWarmup(10, 10, 0.5), 0.5);
      assert.equal(linearWarmup(0, 0, 0.5), 0.5);
      assert.equal(cosineDecay(0, 100, 1, 0.1), 1);
      assert.ok(Math.abs(cosineDecay(50, 100, 1, 0.1) - 0.55) < 1e-12);
      assert.ok(Math.abs(cosineDecay(100, 100, 1, 0.1) - 0.1) < 1e-12);
      assert.ok(Math.abs(cosineDecay(150, 100, 1, 0.1) - 0.1) < 1e-12);
      const sched = warmupCosine(1, 10, 110);
      assert.equal(sched(0), 0);
      assert.equal(sched(10), 1);
      assert.ok(Math.abs(sched(60) - 0.5) < 1e-12);
      assert.ok(Math.abs(sched(110)) < 1e-12);
      throwsCode(() => linearWarmup(-1, 10, 0.5), 'InvalidArgument');
      throwsCode(() => cosineDecay(0, 0, 1), 'InvalidArgument');
      throwsCode(() => warmupCosine(1, 10, 10), 'InvalidArgument');
    });

    test('bad options are FucinaErrors naming the option', async () => {
      const fc = await engine(variant);
      const p = fc.variable(['d'], [2], P0);
      const named = (fn, option) => assert.match(throwsCode(fn, 'InvalidArgument').message, new RegExp(option));
      named(() => fc.optim.sgd([p], { lr: -1 }), 'lr');
      named(() => fc.optim.sgd([p], { momentum: -0.1 }), 'momentum');
      named(() => fc.optim.sgd([p], { nesterov: true }), 'nesterov');
      named(() => fc.optim.sgd([p], { weight_decay: 0.1 }), 'weight_decay');  // unknown key
      named(() => fc.optim.adam([p], { betas: [1, 0.999] }), 'betas\\[0\\]');
      named(() => fc.optim.adamw([p], { betas: [0.9, -1] }), 'betas\\[1\\]');
      named(() => fc.optim.adam([p], { betas: 0.9 }), 'betas');
      named(() => fc.optim.adam([p], { eps: -1 }), 'eps');
      named(() => fc.optim.adam([p], { lr: '0.1' }), 'lr');
      throwsCode(() => fc.optim.sgd([fc.constant(['d'], [2], [1, 2])]), 'InvalidArgument');  // not a variable
      throwsCode(() => fc.optim.sgd([p.scale(2)]), 'InvalidArgument');                     // not a leaf
      throwsCode(() => fc.optim.sgd([p, p]), 'InvalidArgument');                           // twice
      throwsCode(() => fc.optim.sgd(p), 'InvalidArgument');
      const opt = fc.optim.sgd([p], { lr: 0.1 });
      throwsCode(() => { opt.lr = -1; }, 'InvalidArgument');
      opt.dispose();
      p.dispose();
    });

    test('a tiny model trains with each optimizer; updates leave no graph behind', async () => {
      const fc = await engine(variant);
      for (const make of [
        (ps) => fc.optim.sgd(ps, { lr: 0.05 }),
        (ps) => fc.optim.sgd(ps, { lr: 0.02, momentum: 0.9, nesterov: true }),
        (ps) => fc.optim.adam(ps, { lr: 0.1 }),
      ]) {
        const [first, last] = train(fc, make);
        assert.ok(last < 0.01 * first, `loss ${first} -> ${last}`);
      }
      const sched = fc.optim.warmupCosine(0.1, 10, 200, 0.001);
      const mem = [];
      const [first, last] = train(fc, (ps) => fc.optim.adamw(ps, { lr: 0.1, weightDecay: 1e-3 }), 200, (opt, s, ps) => {
        fc.optim.clipGradNorm(ps, 5);
        opt.lr = sched(s);
        if (s === 2 || s === 150) mem.push(fc.memory());
      });
      assert.ok(last < 0.2 * first, `loss ${first} -> ${last}`);
      assert.equal(mem[1].liveBytes, mem[0].liveBytes);  // no growth per step
      assert.equal(mem[1].liveTensors, mem[0].liveTensors);
    });
  });
}
