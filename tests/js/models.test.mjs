// The benchmark models (fc.nn.Mlp / Cnn / Gpt, BENCHMARKS.md W1–W3 at test sizes) train for a few
// hundred steps on data with a learnable signal, and the loss falls well below its start — the
// same data, models and thresholds as tests/cpp/models_tests.cpp.
import { describe, test } from 'node:test';
import { VARIANTS, engine, values, assert, throwsCode } from './helpers.mjs';

function train(fc, opt, steps, lossOf) {
  const losses = [];
  for (let step = 0; step < steps; ++step) {
    fc.scope(() => {
      opt.zeroGrad();
      const loss = lossOf(step);
      loss.backward();
      opt.step();
      losses.push(loss.item());
    });
  }
  return losses;
}

const mean = (v) => v.reduce((a, b) => a + b, 0) / v.length;

function assertLearned(losses, ratio) {
  assert.ok(losses.every(Number.isFinite), 'a loss is not finite');
  const first = mean(losses.slice(0, 5)), last = mean(losses.slice(-20));
  assert.ok(last < ratio * first, `first 5 steps ${first}, last 20 steps ${last}`);
}

for (const variant of VARIANTS) {
  describe(variant, () => {
    test('uniform and normal match the C++ generators and check their arguments', async () => {
      const fc = await engine(variant);
      const u = values(fc.uniform(['i'], [20000], -2, 3, 7));
      assert.ok(Math.min(...u) >= -2 && Math.max(...u) < 3);
      assert.ok(Math.abs(mean(u) - 0.5) < 0.05);
      const n = values(fc.normal(['i'], [20000], 1, 2, 7));
      assert.ok(Math.abs(mean(n) - 1) < 0.05);
      assert.deepEqual(values(fc.normal(['i'], [16], 1, 2, 7)), n.slice(0, 16));
      throwsCode(() => fc.uniform(['i'], [2], 1, 0, 0), 'InvalidArgument');
      throwsCode(() => fc.normal(['i'], [2], 0, 1, -3), 'InvalidArgument');
      assert.equal(fc.nn.subSeed(12345, 3), 12345 * 1000003 + 3 * 7919 + 1);
    });

    test('W1 mlp learns a teacher\'s classes', async () => {
      const fc = await engine(variant);
      const [samples, inF, classes, batch] = [512, 32, 10, 64];
      const x = fc.normal(['sample', 'in'], [samples, inF], 0, 1, 1);
      const teacher = fc.scope(() => values(x.dot(fc.normal(['in', 'class'], [inF, classes], 0, 1, 2), 'in')));
      const labels = [];
      for (let s = 0; s < samples; ++s) {
        const row = teacher.slice(s * classes, (s + 1) * classes);
        labels.push(row.indexOf(Math.max(...row)));
      }
      const y = fc.constant(['sample'], [samples], labels, 'i32');
      const model = new fc.nn.Mlp({ sizes: [inF, 64, 32, classes] }, 3);
      const opt = fc.optim.sgd(model.parameters(), { lr: 0.1 });
      const losses = train(fc, opt, 300, (step) => {
        const start = (step * batch) % samples;
        return model.forward(x.narrow('sample', start, batch)).crossEntropy(y.narrow('sample', start, batch), 'class');
      });
      assertLearned(losses, 0.35);
    });

    for (const channelsLast of [false, true]) test(`W2 cnn learns bar orientations${channelsLast ? ', channels last' : ''}`, async () => {
      const fc = await engine(variant);
      const [samples, image, batch] = [256, 14, 16];
      const bars = [], labels = [];
      for (let s = 0; s < samples; ++s) {
        const c = s % 4, at = (s * 7 + 3) % image;
        labels.push(c);
        for (let r = 0; r < image; ++r)
          for (let q = 0; q < image; ++q)
            bars.push(+((c === 0 && r === at) || (c === 1 && q === at) || (c === 2 && r === q) || (c === 3 && r + q === image - 1)));
      }
      const x = fc.scope(() => fc.constant(['sample', 'h', 'w'], [samples, image, image], bars)
        .add(fc.normal(['sample', 'h', 'w'], [samples, image, image], 0, 0.3, 5)));
      const y = fc.constant(['sample'], [samples], labels, 'i32');
      const model = new fc.nn.Cnn({ image, conv1: 4, conv2: 8, hidden: 16, classes: 4, channelsLast }, 4);
      assert.equal(model.flatFeatures, 8 * 2 * 2);
      assert.equal(model.config.channelsLast, channelsLast);
      const opt = fc.optim.sgd(model.parameters(), { lr: 0.05, momentum: 0.9 });
      const losses = train(fc, opt, 200, (step) => {
        const start = (step * batch) % samples;
        return model.forward(x.narrow('sample', start, batch)).crossEntropy(y.narrow('sample', start, batch), 'class');
      });
      assertLearned(losses, 0.35);
      throwsCode(() => new fc.nn.Cnn({ channelsLast: 1 }), 'InvalidArgument');
    });

    test('W3 gpt: the benchmark\'s parameter count, learning a repeating text, checkpointed blocks agree', async () => {
      const fc = await engine(variant);
      const full = new fc.nn.Gpt({}, 0);
      assert.equal(full.parameters().reduce((n, p) => n + p.shape.reduce((a, b) => a * b, 1), 0), 445952);
      full.parameters().forEach((p) => p.dispose());

      const text = 'the quick brown fox jumps over the lazy dog. ';
      const textBatch = (batch, length, step) => {
        const bytes = [];
        for (let b = 0; b < batch; ++b)
          for (let i = 0; i < length; ++i) bytes.push(text.charCodeAt((step * 5 + b * 11 + i) % text.length));
        return fc.constant(['batch', 't'], [batch, length], bytes, 'i32');
      };
      const small = { vocab: 256, context: 16, dModel: 32, heads: 4, layers: 2, mlp: 64 };
      const model = new fc.nn.Gpt(small, 9);
      const opt = fc.optim.adamw(model.parameters(), { lr: 3e-3, weightDecay: 0.01 });
      const losses = train(fc, opt, 200, (step) => model.loss(textBatch(8, 17, step)));
      assert.ok(Math.abs(losses[0] - Math.log(256)) < 0.3, `first loss ${losses[0]}`);
      assertLearned(losses, 0.4);

      const plain = new fc.nn.Gpt(small, 9), recomputed = new fc.nn.Gpt({ ...small, checkpointBlocks: true }, 9);
      fc.scope(() => {
        const tokens = textBatch(4, 17, 0);
        const [a, b] = [plain.loss(tokens), recomputed.loss(tokens)];
        a.backward();
        b.backward();
        assert.equal(a.item(), b.item());
        const [pa, pb] = [plain.parameters(), recomputed.parameters()];
        pa.forEach((p, i) => assert.deepEqual(values(pb[i].grad()), values(p.grad()), `parameter ${i}`));
      });
      throwsCode(() => new fc.nn.Gpt({ ...small, heads: 5 }), 'InvalidArgument');
      throwsCode(() => plain.forward(textBatch(1, 17, 0)), 'InvalidArgument');
    });

    test('nn.Conv2d.forwardRelu is relu(forward) in one op: the same values and gradients', async () => {
      const fc = await engine(variant);
      const conv = new fc.nn.Conv2d('c', 'o', 2, 3, 3, 4, { padding: 1, stride: [2, 1] });
      fc.scope(() => {
        const x = fc.variable(fc.normal(['h', 'n', 'w', 'c'], [7, 2, 5, 2], 0, 1, 5));
        const r = fc.normal(['n', 'o', 'h', 'w'], [2, 3, 4, 5], 0, 1, 6);
        const gradsOf = (y) => {
          [x, ...conv.parameters()].forEach((p) => p.zeroGrad());
          y.mul(r).sumAll().backward();
          return [x, ...conv.parameters()].map((p) => values(p.grad()));
        };
        const fused = conv.forwardRelu(x), composed = conv.forward(x).relu();
        assert.deepEqual(values(fused), values(composed));
        assert.ok(values(fused).includes(0));
        assert.deepEqual(gradsOf(fused), gradsOf(composed));
      });
    });
  });
}
