// The views, flips and shifts through the facade, on both variants: alignTo,
// viewWithStrides, materialize, sliceStep, zeroPad2d, constantPad2d, unbindInto, repeatAxis,
// flip, roll, rollBy, shiftBy, relposShift. Values, fc.gradcheck through each on a permuted
// input, and the engine's refusals (the PyTorch fixtures in ops_parity.test.mjs check more values).
import { describe, test } from 'node:test';
import { VARIANTS, engine, throwsCode, values, assert } from './helpers.mjs';

const opts = { eps: 1e-3, absTol: 3e-3, relTol: 2e-2 };

for (const variant of VARIANTS) {
  describe(variant, () => {
    test('views: alignTo, viewWithStrides, materialize, sliceStep, unbindInto', async () => {
      const fc = await engine(variant);
      fc.scope(() => {
        const x = fc.constant(['a', 'b'], [2, 3], [0, 1, 2, 3, 4, 5]);
        const y = x.alignTo(['n', 'b', 'a']);
        assert.deepEqual(y.tags, ['n', 'b', 'a']);
        assert.deepEqual(y.shape, [1, 3, 2]);
        assert.deepEqual(values(y), [0, 3, 1, 4, 2, 5]);
        const t = fc.constant(['t'], [5], [1, 2, 3, 4, 5]);
        assert.deepEqual(values(t.viewWithStrides(['w', 'k'], [3, 3], [1, 1])), [1, 2, 3, 2, 3, 4, 3, 4, 5]);
        assert.deepEqual(values(x.permuteTo(['b', 'a']).viewWithStrides(['d'], [2], [4], 1)), [3, 5]);
        const m = x.materialize();
        assert.deepEqual(values(m), values(x));
        assert.deepEqual(values(x.permuteTo(['b', 'a']).materialize()), [0, 3, 1, 4, 2, 5]);
        const s = fc.constant(['t'], [7], [0, 1, 2, 3, 4, 5, 6]);
        assert.deepEqual(values(s.sliceStep('t', 5, 0, -2)), [5, 3, 1]);
        assert.deepEqual(values(s.sliceStep('t', -1, -8, -1)), [6, 5, 4, 3, 2, 1, 0]);
        assert.deepEqual(values(s.sliceStep('t', -3, 100)), [4, 5, 6]);
        const parts = x.unbindInto('b');
        assert.ok(Array.isArray(parts));
        assert.equal(parts.length, 3);
        assert.deepEqual(parts[2].tags, ['a']);
        assert.deepEqual(values(parts[2]), [2, 5]);
        assert.deepEqual(fc.zeros(['e', 'a'], [0, 2]).unbindInto('e'), []);
        throwsCode(() => x.alignTo(['a']), 'ShapeMismatch');
        throwsCode(() => x.alignTo(['a', 'b', 'a']), 'InvalidArgument');
        throwsCode(() => t.viewWithStrides(['d'], [3], [2], 1), 'InvalidArgument');
        throwsCode(() => s.sliceStep('t', 0, 3, 0), 'InvalidArgument');
        throwsCode(() => x.unbindInto('z'), 'ShapeMismatch');
      });
    });

    test('pads, repeats, flips and shifts: values and refusals', async () => {
      const fc = await engine(variant);
      fc.scope(() => {
        const x = fc.constant(['h', 'w'], [2, 3], [1, 2, 3, 4, 5, 6]);
        assert.deepEqual(values(x.zeroPad2d('h', 'w', 1, 0, 0, 1)), [0, 1, 2, 3, 0, 4, 5, 6, 0, 0, 0, 0]);
        assert.deepEqual(values(x.constantPad2d('h', 'w', -1, 1, -1, 0, 9)), [5, 6, 9]);
        assert.deepEqual(x.constantPad2d('h', 'w', 0, 0, 0, 0).shape, [2, 3]);
        const r = fc.constant(['h', 'd'], [2, 2], [1, 2, 3, 4]);
        assert.deepEqual(values(r.repeatAxis('h', 2)), [1, 2, 3, 4, 1, 2, 3, 4]);
        assert.deepEqual(values(r.repeatAxis('h', 2, true)), [1, 2, 1, 2, 3, 4, 3, 4]);
        assert.deepEqual(r.repeatAxis('d', 0).shape, [2, 0]);
        const q = fc.constant(['b', 't'], [2, 4], [0, 1, 2, 3, 4, 5, 6, 7]);
        assert.deepEqual(values(q.flip('t')), [3, 2, 1, 0, 7, 6, 5, 4]);
        assert.deepEqual(values(q.roll('t', 1)), [3, 0, 1, 2, 7, 4, 5, 6]);
        assert.deepEqual(values(q.roll('t', -9)), values(q.roll('t', 3)));
        const k = fc.constant(['b'], [2], [1, -2], 'i32');
        assert.deepEqual(values(q.rollBy('t', 'b', k)), [3, 0, 1, 2, 6, 7, 4, 5]);
        assert.deepEqual(values(q.shiftBy('t', 'b', k)), [0, 0, 1, 2, 6, 7, 0, 0]);
        assert.deepEqual(values(q.shiftBy('t', 'b', fc.constant(['b'], [2], [9, -9], 'i64'))), [0, 0, 0, 0, 0, 0, 0, 0]);
        const p = fc.constant(['q', 'k'], [2, 3], [1, 2, 3, 4, 5, 6]);
        assert.deepEqual(values(p.relposShift('q', 'k')), [2, 3, 0, 4, 5, 6]);
        assert.deepEqual(p.alignTo(['k', 'h', 'q']).relposShift('q', 'k').tags, ['h', 'q', 'k']);
        const i = fc.constant(['t'], [3], [1, 2, 3], 'i64');
        assert.equal(i.flip('t').dtype, 'i64');
        assert.deepEqual(values(i.roll('t', 1)), [3, 1, 2]);
        throwsCode(() => x.zeroPad2d('h', 'h', 1, 1, 1, 1), 'InvalidArgument');
        throwsCode(() => x.zeroPad2d('h', 'w', -2, -2, 0, 0), 'InvalidArgument');
        throwsCode(() => r.repeatAxis('h', -1), 'InvalidArgument');
        throwsCode(() => q.flip('z'), 'ShapeMismatch');
        throwsCode(() => q.rollBy('t', 'b', fc.constant(['b'], [2], [1, 2])), 'DTypeMismatch');
        throwsCode(() => q.rollBy('t', 'b', fc.constant(['b'], [3], [1, 2, 3], 'i32')), 'ShapeMismatch');
        throwsCode(() => q.shiftBy('t', 't', k), 'InvalidArgument');
        throwsCode(() => p.relposShift('q', 'q'), 'InvalidArgument');
        throwsCode(() => fc.ones(['r', 'c'], [2, 32]).quantize('q8_0', 'c').roll('c', 1), 'DTypeMismatch');
      });
    });

    test('gradcheck through each op on a permuted input', async () => {
      const fc = await engine(variant);
      fc.scope(() => {
        const x = fc.variable(['c', 'r'], [4, 3], [0.3, -1.2, 0.7, 1.5, -0.4, 0.9, -1.7, 0.2, 1.1, -0.6, 0.45, -0.85]);
        const k = fc.constant(['r'], [3], [1, -2, 5], 'i64');
        // sum(tanh(y) · w) with w laid out like y: a loss that sees every element's position.
        const probe = (y) => y.tanh().mul(fc.constant(y.tags, y.shape, Array.from({ length: y.shape.reduce((a, b) => a * b, 1) },
          (_, i) => Math.sin(0.7 * i + 0.3)))).sumAll();
        const ops = [
          (v) => v.alignTo(['c', 'n', 'r']),
          (v) => v.viewWithStrides(['w', 'k'], [4, 4], [2, 1], 1),
          (v) => v.materialize(),
          (v) => v.sliceStep('c', -1, -100, -2),
          (v) => v.zeroPad2d('r', 'c', 1, -1, -1, 2),
          (v) => v.constantPad2d('r', 'c', -2, 1, 0, 1, 0.5),
          (v) => v.unbindInto('c').reduce((acc, t, i) => acc.add(t.scale(i + 1)), fc.zeros(['r'], [3])),
          (v) => v.repeatAxis('c', 2),
          (v) => v.repeatAxis('r', 3, true),
          (v) => v.flip('c'),
          (v) => v.roll('c', -3),
          (v) => v.rollBy('c', 'r', k),
          (v) => v.shiftBy('c', 'r', k),
          (v) => v.relposShift('r', 'c'),
        ];
        for (const op of ops) fc.gradcheck((v) => probe(op(v.permuteTo(['r', 'c']))), [x], opts);
      });
    });
  });
}
