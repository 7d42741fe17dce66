// Training in Node: the same losses as the native build (the committed fixture), threads > 1 in
// the threaded variant, and checkpoint/dropout semantics that must match native exactly.
import { describe, test } from 'node:test';
import { readFileSync } from 'node:fs';
import { VARIANTS, engine, init, values, assert } from './helpers.mjs';

const committed = JSON.parse(readFileSync(new URL('../fixtures/mlp_losses.json', import.meta.url))).losses;

// The reference MLP of tests/cpp/parity_tests.cpp, built the same closed-form way.
function table(rows, cols, f) {
  const v = [];
  for (let r = 0; r < rows; ++r) for (let c = 0; c < cols; ++c) v.push(f(r, c));
  return v;
}

function trainReferenceMlp(fc) {
  const x = fc.constant(['batch', 'in'], [8, 4], table(8, 4, (b, i) => Math.sin(0.37 * b + 1.3 * i)));
  const y = fc.constant(['batch', 'out'], [8, 2], table(8, 2, (b, o) => Math.cos(0.5 * b - 0.8 * o)));
  let params = {
    w1: fc.variable(['hidden', 'in'], [6, 4], table(6, 4, (h, i) => 0.3 * Math.sin(1.1 * h + 0.7 * i + 0.2))),
    b1: fc.variable(['hidden'], [6], table(1, 6, (_, h) => 0.05 * h - 0.1)),
    w2: fc.variable(['out', 'hidden'], [2, 6], table(2, 6, (o, h) => 0.4 * Math.cos(0.9 * o + 0.5 * h))),
  };
  const losses = [];
  for (let step = 0; step < 10; ++step) {
    const next = fc.scope(() => {
      const { w1, b1, w2 } = params;
      const d = x.dot(w1, 'in').add(b1).tanh().dot(w2, 'hidden').sub(y);
      const loss = d.mul(d).meanAll();
      loss.backward();
      losses.push(loss.item());
      return fc.noGrad(() => Object.fromEntries(Object.entries(params).map(([k, p]) =>
        [k, fc.variable(p.tags, p.shape, p.detach().sub(p.grad().scale(0.2)).toArray())])));
    });
    Object.values(params).forEach((p) => p.dispose());
    params = next;
  }
  return losses;
}

for (const variant of VARIANTS) {
  describe(variant, () => {
    test('reference MLP reproduces the committed losses (native/wasm parity)', async () => {
      const fc = await engine(variant);
      const losses = trainReferenceMlp(fc);
      assert.equal(losses.length, committed.length);
      losses.forEach((l, i) => assert.ok(Math.abs(l - committed[i]) <= 1e-5 * Math.abs(committed[i]),
        `step ${i}: ${l} vs native ${committed[i]}`));
    });

    test('checkpointed training matches plain training to the bit', async () => {
      const fc = await engine(variant);
      const x = fc.variable(['batch', 'in'], [3, 4], table(3, 4, (b, i) => Math.sin(b + 2 * i)));
      const w = fc.variable(['out', 'in'], [4, 4], table(4, 4, (o, i) => 0.3 * Math.cos(o - i)));
      const block = (x, w) => x.dot(w, 'in').tanh().dropout(0.25, 7).withTags(['batch', 'in']).dot(w, 'in').sigmoid();
      const grads = (useCheckpoint) => fc.scope(() => {
        x.zeroGrad();
        w.zeroGrad();
        (useCheckpoint ? fc.checkpoint(block, [x, w]) : block(x, w)).sumAll().backward();
        return [values(x.grad()), values(w.grad())];
      });
      assert.deepEqual(grads(true), grads(false));
    });

    test('checkpointTail: a checkpointed residual block gives the plain graph\'s gradients to the bit', async () => {
      // Note [Checkpoint tail]: the recompute leaves the tail's product and sum uncomputed (the
      // native test counts them); everything the gradients read keeps its bits.
      const fc = await engine(variant);
      const x = fc.variable(['batch', 'in'], [3, 5], table(3, 5, (b, i) => Math.sin(b + 2 * i)));
      const w1 = fc.variable(['out', 'in'], [5, 5], table(5, 5, (o, i) => 0.3 * Math.cos(o - i)));
      const w2 = fc.variable(['in', 'out'], [5, 5], table(5, 5, (i, o) => 0.2 * Math.sin(o + 3 * i)));
      const b2 = fc.variable(['in'], [5], table(1, 5, (_, i) => 0.1 * i - 0.2));
      const block = (useTail) => (x, w1, w2, b2) => {
        const g = x.dot(w1, 'in').tanh();
        const tail = () => x.add(g.addDot(w2, 'out', b2));
        return useTail ? fc.checkpointTail(tail) : tail();
      };
      const run = (useCheckpoint, useTail) => fc.scope(() => {
        for (const p of [x, w1, w2, b2]) p.zeroGrad();
        const ps = [x, w1, w2, b2];
        const y = useCheckpoint ? fc.checkpoint(block(useTail), ps) : block(useTail)(...ps);
        y.mul(y).sumAll().backward();
        return [values(y), ...ps.map((p) => values(p.grad()))];
      });
      const plain = run(false, false);
      assert.deepEqual(run(false, true), plain);  // outside a recompute the tail is its function
      assert.deepEqual(run(true, true), plain);
      // nn.Gpt's blocks end in a tail: checkpointed, the loss and gradients are the plain model's.
      const gpt = (checkpointBlocks) => fc.scope(() => {
        const model = new fc.nn.Gpt({ vocab: 16, context: 8, dModel: 16, heads: 2, layers: 2, mlp: 32, checkpointBlocks }, 3);
        const tokens = fc.constant(['batch', 't'], [2, 6], table(2, 6, (b, t) => (5 * b + 3 * t) % 16), 'i32');
        const loss = model.loss(tokens);
        loss.backward();
        return [values(loss), ...model.parameters().map((p) => values(p.grad()))];
      });
      assert.deepEqual(gpt(true), gpt(false));
    });
  });
}

test('threaded-simd runs with more than one thread in Node', async () => {
  const fc = await init({ variant: 'threaded-simd', threads: 3 });
  assert.equal(fc.variant, 'threaded-simd');
  assert.equal(fc.threads, 3);
  // Large enough to be split over the pool; the result must equal the one-thread build's.
  const n = 256;
  const a = fc.constant(['m', 'k'], [n, n], table(n, n, (i, j) => Math.sin(i * 0.1 + j * 0.01)));
  const b = fc.constant(['n', 'k'], [n, n], table(n, n, (i, j) => Math.cos(i * 0.02 - j * 0.1)));
  const single = await engine('simd');
  const a1 = single.constant(['m', 'k'], [n, n], a.toArray());
  const b1 = single.constant(['n', 'k'], [n, n], b.toArray());
  assert.deepEqual(values(a.dot(b, 'k').tanh()), values(a1.dot(b1, 'k').tanh()));
});

test('init validates its options', async () => {
  await assert.rejects(init({ variant: 'gpu' }), { code: 'InvalidArgument' });
  await assert.rejects(init({ variant: 'threaded-simd', threads: 0 }), { code: 'InvalidArgument' });
  const fc = await init();
  assert.equal(fc.variant, 'threaded-simd');  // Node always has SharedArrayBuffer
});
