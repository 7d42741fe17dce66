// conv2d, maxPool2d, avgPool2d and upsample2xNearest through the facade: values against a naive JS
// convolution, fc.gradcheck, argument errors, and a tiny CNN that learns, on both variants.
import { describe, test } from 'node:test';
import { VARIANTS, engine, throwsCode, values, assert } from './helpers.mjs';

const close = (got, want, tol = 1e-4) => {
  assert.equal(got.length, want.length);
  got.forEach((g, i) => assert.ok(Math.abs(g - want[i]) <= tol * (1 + Math.abs(want[i])), `[${i}] ${g} vs ${want[i]}`));
};
const wave = (n, s = 1, p = 0, f = 0.7) => Array.from({ length: n }, (_, i) => s * Math.sin(f * i + p));

// x [n, c, h, w], w [oc, c/groups, kh, kw] -> [n, oc, oh, ow].
function naiveConv(x, [n, c, h, wd], w, [oc, cg, kh, kw], { stride = 1, padding = 0, dilation = 1, groups = 1 } = {}) {
  const oh = Math.floor((h + 2 * padding - dilation * (kh - 1) - 1) / stride) + 1;
  const ow = Math.floor((wd + 2 * padding - dilation * (kw - 1) - 1) / stride) + 1;
  const ocg = oc / groups, y = [];
  for (let b = 0; b < n; ++b) for (let o = 0; o < oc; ++o) for (let oy = 0; oy < oh; ++oy) for (let ox = 0; ox < ow; ++ox) {
    let s = 0;
    const g = Math.floor(o / ocg);
    for (let ci = 0; ci < cg; ++ci) for (let i = 0; i < kh; ++i) for (let j = 0; j < kw; ++j) {
      const yy = oy * stride - padding + i * dilation, xx = ox * stride - padding + j * dilation;
      if (yy < 0 || yy >= h || xx < 0 || xx >= wd) continue;
      s += x[((b * c + g * cg + ci) * h + yy) * wd + xx] * w[((o * cg + ci) * kh + i) * kw + j];
    }
    y.push(s);
  }
  return { y, shape: [n, oc, oh, ow] };
}

for (const variant of VARIANTS) {
  describe(variant, () => {
    test('conv2d matches a naive JS convolution (stride, padding, dilation, groups, layouts)', async () => {
      const fc = await engine(variant);
      for (const opts of [{}, { stride: 2, padding: 1 }, { dilation: 2, padding: 2 }, { groups: 2, stride: 1, padding: 1 }]) {
        const xs = [2, 4, 7, 6], ws = [4, 4 / (opts.groups ?? 1), 3, 3];
        const xv = wave(xs.reduce((a, b) => a * b), 1, 0.3), wv = wave(ws.reduce((a, b) => a * b), 0.5, 1.1, 0.37);
        const want = naiveConv(xv, xs, wv, ws, opts);
        const x = fc.constant(['n', 'c', 'h', 'w'], xs, xv);
        const w = fc.constant(['out', 'c', 'kh', 'kw'], ws, wv);
        const y = x.conv2d(w, opts);
        assert.deepEqual(y.tags, ['n', 'out', 'h', 'w']);
        assert.deepEqual(y.shape, want.shape);
        close(values(y), want.y);
        // Physical order does not matter; the output keeps the input's order.
        const yp = x.permuteTo(['w', 'c', 'n', 'h']).conv2d(w.permuteTo(['kw', 'out', 'kh', 'c']), opts);
        assert.deepEqual(yp.tags, ['w', 'out', 'n', 'h']);
        close(values(yp.permuteTo(['n', 'out', 'h', 'w'])), want.y);
        // Channels last (the channels after both spatial axes) computes in that layout.
        const yl = x.permuteTo(['n', 'h', 'w', 'c']).contiguous().conv2d(w.permuteTo(['out', 'kh', 'kw', 'c']), opts);
        assert.deepEqual(yl.tags, ['n', 'h', 'w', 'out']);
        close(values(yl.permuteTo(['n', 'out', 'h', 'w'])), want.y);
      }
      // Bias, [h, w] pairs and renamed axes.
      const x = fc.constant(['ch', 'y', 'x'], [1, 3, 4], wave(12));
      const w = fc.constant(['f', 'ch', 'ky', 'kx'], [2, 1, 2, 2], [1, 0, 0, 1, 0, 1, 1, 0]);
      const b = fc.constant(['f'], [2], [10, 20]);
      const y = x.conv2d(w, { bias: b, stride: [1, 2], axes: { channels: 'ch', height: 'y', width: 'x', outChannels: 'f', kernelH: 'ky', kernelW: 'kx' } });
      assert.deepEqual(y.tags, ['f', 'y', 'x']);
      const want = naiveConv(wave(12), [1, 1, 3, 4], [1, 0, 0, 1, 0, 1, 1, 0], [2, 1, 2, 2]).y;  // stride 1
      const got = values(y);  // [f=2, y=2, x=2]: every other column of the stride-1 result (x=3)
      close(got, [0, 2, 3, 5, 6, 8, 9, 11].map((i) => want[i] + (i < 6 ? 10 : 20)));
    });

    test('pooling and upsampling values and gradients', async () => {
      const fc = await engine(variant);
      const x = fc.variable(['h', 'w'], [2, 4], [1, 5, 2, 0, 3, 4, 8, 7]);
      const m = x.maxPool2d(2);
      assert.deepEqual(values(m), [5, 8]);
      m.sumAll().backward();
      assert.deepEqual(values(x.grad()), [0, 1, 0, 0, 0, 0, 1, 0]);
      close(values(x.avgPool2d([2, 2], { stride: 2 })), [13 / 4, 17 / 4]);
      close(values(fc.ones(['h', 'w'], [2, 2]).avgPool2d(3, { stride: 1, padding: 1 })), [4 / 9, 4 / 9, 4 / 9, 4 / 9]);
      // Channels last: c after both pooled axes, the same maxima and gradients per channel.
      const xl = fc.variable(['h', 'w', 'c'], [2, 4, 2], [1, -1, 5, -5, 2, -2, 0, 0, 3, -3, 4, -4, 8, -8, 7, -7]);
      const ml = xl.maxPool2d(2);
      assert.deepEqual(ml.tags, ['h', 'w', 'c']);
      assert.deepEqual(values(ml), [5, -1, 8, 0]);
      ml.sumAll().backward();
      assert.deepEqual(values(xl.grad()), [0, 1, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0]);
      const u = fc.variable(['c', 'h', 'w'], [1, 1, 2], [1, 2]);
      assert.deepEqual(values(u.upsample2xNearest()), [1, 1, 2, 2, 1, 1, 2, 2]);
      u.upsample2xNearest().mul(fc.constant(['h', 'w'], [2, 4], [1, 2, 3, 4, 5, 6, 7, 8])).sumAll().backward();
      assert.deepEqual(values(u.grad()), [14, 22]);
    });

    test("conv2dRelu with maxPool: conv2dRelu then maxPool2d's values and gradients, in one op", async () => {
      const fc = await engine(variant);
      for (const [xs, ws, opts, shift] of [[[3, 4, 8, 7], [6, 2, 3, 2], { groups: 2, padding: [0, 1], maxPool: 2 }, 0],
        [[2, 3, 9, 9], [4, 3, 3, 3], { maxPool: 3 }, -0.5], [[2, 2, 5, 5], [3, 2, 2, 2], { maxPool: 2 }, 0]]) {
        const grads = [];
        for (const pooled of [true, false]) {
          const x = fc.variable(['n', 'c', 'h', 'w'], xs, wave(xs.reduce((a, b) => a * b), 1, 0.3, 1.1));
          const w = fc.variable(['out', 'c', 'kh', 'kw'], ws, wave(ws.reduce((a, b) => a * b), 0.5, 0.2, 0.77));
          const b = fc.variable(['out'], [ws[0]], wave(ws[0], 0.3, 0.9).map((v) => v + shift));
          const y = pooled ? x.conv2dRelu(w, { ...opts, bias: b })
            : x.conv2dRelu(w, { ...opts, maxPool: 1, bias: b }).maxPool2d(opts.maxPool);
          y.mul(fc.constant(y.tags, y.shape, wave(y.shape.reduce((a, b) => a * b), 1, 0.1, 0.61))).sumAll().backward();
          grads.push([values(y), values(x.grad()), values(w.grad()), values(b.grad())]);
        }
        assert.deepEqual(grads[0], grads[1]);  // the composed ops' bits
      }
    });

    test('gradcheck through conv2d and pooling', async () => {
      const fc = await engine(variant);
      const x = fc.variable(['n', 'c', 'h', 'w'], [2, 2, 5, 5], wave(100, 1, 0.2, 1.3));
      const w = fc.variable(['out', 'c', 'kh', 'kw'], [4, 1, 3, 3], wave(36, 0.5, 0.4, 0.9));
      const b = fc.variable(['out'], [4], [0.1, -0.2, 0.3, 0]);
      const opts = { eps: 1e-2, absTol: 3e-3, relTol: 3e-2 };
      fc.gradcheck((x, w, b) => x.conv2d(w, { bias: b, padding: 1, groups: 2 }).tanh().avgPool2d(2, { stride: 1 })
        .upsample2xNearest().sin().sumAll(), [x, w, b], opts);
      // Max pooling on distinct values (no ties within eps), one window row overlapping the next.
      const p = fc.variable(['c', 'h', 'w'], [2, 4, 4], Array.from({ length: 32 }, (_, i) => 0.1 * ((i * 13) % 32) - 1.6));
      const r = fc.constant(['c', 'h', 'w'], [2, 5, 4], wave(40, 1, 0.5));
      fc.gradcheck((p) => p.maxPool2d([2, 3], { stride: 1, padding: 1 }).mul(r).sumAll(), [p], { eps: 1e-3, absTol: 3e-3, relTol: 3e-2 });
    });

    test('bad arguments are FucinaErrors', async () => {
      const fc = await engine(variant);
      const x = fc.ones(['n', 'c', 'h', 'w'], [1, 4, 5, 5]);
      const w = fc.ones(['out', 'c', 'kh', 'kw'], [2, 4, 7, 3]);
      const e = throwsCode(() => x.conv2d(w), 'ShapeMismatch');
      assert.match(e.message, /'kh'=7/);
      throwsCode(() => x.conv2d(fc.ones(['out', 'c', 'kh', 'kw'], [2, 2, 3, 3]), { groups: 3 }), 'InvalidArgument');
      throwsCode(() => x.conv2d(w, { stride: 'two' }), 'InvalidArgument');
      throwsCode(() => x.conv2d(w, { padding: 1.5 }), 'InvalidArgument');
      throwsCode(() => x.conv2d(w, { strides: 1 }), 'InvalidArgument');
      throwsCode(() => x.conv2d([1, 2]), 'InvalidArgument');
      throwsCode(() => x.conv2dRelu(w.narrow('kh', 0, 3), { maxPool: 0 }), 'InvalidArgument');
      throwsCode(() => x.conv2dRelu(w.narrow('kh', 0, 3), { maxPool: 1.5 }), 'InvalidArgument');
      throwsCode(() => x.conv2dRelu(w.narrow('kh', 0, 3), { maxPool: 4 }), 'ShapeMismatch');  // a 3x3 output
      throwsCode(() => x.conv2d(w.narrow('kh', 0, 3), { maxPool: 2 }), 'InvalidArgument');
      throwsCode(() => fc.prepareConv2dWeights(w.narrow('kh', 0, 3), { maxPool: 2 }), 'InvalidArgument');
      throwsCode(() => x.maxPool2d(2, { padding: 2 }), 'InvalidArgument');
      throwsCode(() => x.maxPool2d([2]), 'InvalidArgument');
      throwsCode(() => x.avgPool2d(2, { height: 'y' }), 'ShapeMismatch');
      throwsCode(() => x.upsample2xNearest('h', 3), 'InvalidArgument');
    });

    test('a tiny CNN learns: conv -> relu -> maxpool -> dot -> crossEntropy', async () => {
      const fc = await engine(variant);
      // 8 images 6x6: class 0 has a bright vertical bar, class 1 a horizontal one, plus a texture.
      const n = 8, xv = [], labels = [];
      for (let b = 0; b < n; ++b) {
        const cls = b % 2, at = 1 + (b % 4);
        labels.push(cls);
        for (let i = 0; i < 6; ++i) for (let j = 0; j < 6; ++j)
          xv.push(((cls === 0 ? j : i) === at ? 1 : 0) + 0.1 * Math.sin(1.7 * b + i + 2 * j));
      }
      const x = fc.constant(['n', 'c', 'h', 'w'], [n, 1, 6, 6], xv);
      const y = fc.constant(['n'], [n], labels, 'i32');
      const k = fc.variable(['out', 'c', 'kh', 'kw'], [4, 1, 3, 3], wave(36, 0.4, 0.5, 1.9));
      const kb = fc.variable(['out'], [4], [0, 0, 0, 0]);
      const fcw = fc.variable(['cls', 'out', 'h', 'w'], [2, 4, 2, 2], wave(32, 0.2, 0.1, 2.3));
      const opt = fc.optim.sgd([k, kb, fcw], { lr: 0.5 });
      const losses = [];
      for (let step = 0; step < 30; ++step) {
        fc.scope(() => {
          const feat = x.conv2d(k, { bias: kb, padding: 1 }).relu().maxPool2d(3);  // {n, out, h=2, w=2}
          const logits = feat.dot(fcw, 'out').sum('h').sum('w');  // h, w are batch axes of the dot
          const loss = logits.crossEntropy(y, 'cls');
          loss.backward();
          losses.push(loss.item());
          opt.step();
          opt.zeroGrad();
        });
      }
      assert.ok(losses.every(Number.isFinite));
      assert.ok(losses[29] < 0.5 * losses[0], `loss ${losses[0]} -> ${losses[29]}`);
    });
  });
}
