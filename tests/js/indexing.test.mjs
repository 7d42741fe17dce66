// Diagonals, masked selection and indexed updates through the facade, on both wasm
// variants: the hand-checked values of tests/cpp/indexing_tests.cpp, gradients, gradcheck and
// bad inputs with their codes (ops_parity.test.mjs checks them against PyTorch too).
import { describe, test } from 'node:test';
import { VARIANTS, engine, throwsCode, values, assert } from './helpers.mjs';

const iota = (n) => Array.from({ length: n }, (_, i) => i);
// y · (1, 2, 3, ...) summed: gradients are the weights at the positions used.
const weighted = (fc, y) => y.mul(fc.constant(y.tags, y.shape, iota(y.shape.reduce((p, e) => p * e, 1)).map((i) => i + 1))).sumAll();

for (const variant of VARIANTS) {
  describe(variant, () => {
    test('diagonal, trace, diag and diagEmbed', async () => {
      const fc = await engine(variant);
      fc.scope(() => {
        const x = fc.variable(['a', 'b'], [3, 4], iota(12));
        assert.deepEqual(values(x.diagonal('a', 'b', 0, 'd')), [0, 5, 10]);
        assert.deepEqual(values(x.diagonal('a', 'b', -1, 'd')), [4, 9]);
        assert.deepEqual(x.diagonal('a', 'b', 4, 'd').shape, [0]);
        const d = x.diagonal('a', 'b', 1, 'd');
        assert.deepEqual(d.tags, ['d']);
        weighted(fc, d).backward();
        assert.deepEqual(values(x.grad()), [0, 1, 0, 0, 0, 0, 2, 0, 0, 0, 0, 3]);
        assert.equal(x.trace('a', 'b').item(), 15);
        const v = fc.variable(['n'], [3], [1, 2, 3]);
        const m = v.diag(['n'], ['i', 'j'], 1);
        assert.deepEqual(m.tags, ['i', 'j']);
        assert.deepEqual(values(m), [0, 1, 0, 0, 0, 0, 2, 0, 0, 0, 0, 3, 0, 0, 0, 0]);
        assert.deepEqual(values(m.diag(['i', 'j'], ['k'], 1)), [1, 2, 3]);
        weighted(fc, m).backward();
        assert.deepEqual(values(v.grad()), [2, 7, 12]);
        const b = fc.variable(['x', 'n'], [2, 3], [0.3, -0.2, 0.5, 0.1, -0.7, 0.9]);
        const e = b.diagEmbed('n', 'i', 'j', -1);
        assert.deepEqual(e.tags, ['x', 'i', 'j']);
        assert.deepEqual(e.shape, [2, 4, 4]);
        fc.gradcheck((t) => t.diagEmbed('n', 'i', 'j', 1).tanh().sumAll(), [b]);
        fc.gradcheck((t) => t.permuteTo(['n', 'x']).diagonal('n', 'x', 0, 'd').tanh().sumAll(), [b]);
        throwsCode(() => x.diagonal('a', 'a', 0, 'd'), 'InvalidArgument');
        throwsCode(() => x.diagonal('a', 'zz', 0, 'd'), 'ShapeMismatch');
        throwsCode(() => x.diag(['a', 'b'], ['i', 'j']), 'InvalidArgument');
        throwsCode(() => x.diag(['a'], ['i']), 'InvalidArgument');
        throwsCode(() => b.diagEmbed('n', 'x', 'j'), 'ShapeMismatch');
        throwsCode(() => x.trace('a', 'zz'), 'ShapeMismatch');
      });
    });

    test('indexAdd, scatter, setRows and zeroRows', async () => {
      const fc = await engine(variant);
      fc.scope(() => {
        const x = fc.variable(['a', 'b'], [2, 3], iota(6));
        const src = fc.variable(['a', 'b'], [2, 4], [1, 2, 3, 4, 5, 6, 7, 8]);
        const y = x.indexAdd('b', fc.constant(['k'], [4], [2, 0, 2, 1], 'i32'), src);
        assert.deepEqual(values(y), [2, 5, 6, 9, 12, 17]);
        weighted(fc, y).backward();
        assert.deepEqual(values(x.grad()), [1, 2, 3, 4, 5, 6]);
        assert.deepEqual(values(src.grad()), [3, 1, 3, 2, 6, 4, 6, 5]);
        const s2 = fc.variable(['a', 'b'], [2, 2], [10, 20, 30, 40]);
        const sc = x.scatter('b', fc.constant(['b', 'a'], [2, 2], [2, 1, 0, 1], 'i64'), s2);
        assert.deepEqual(values(sc), [20, 1, 10, 3, 40, 5]);  // the last of the repeated (1, 1) wins
        const rows = fc.constant(['k'], [3], [2, 0, 2], 'i32');
        const s3 = fc.variable(['a', 'b'], [2, 3], [1, 2, 3, 4, 5, 6]);
        assert.deepEqual(values(x.setRows('b', rows, s3)), [2, 1, 3, 5, 4, 6]);
        assert.deepEqual(values(x.zeroRows('b', rows)), [0, 1, 0, 0, 4, 0]);
        const w = fc.variable(['a', 'b', 'c'], [2, 3, 2], [0.3, -0.2, 0.5, 0.1, -0.7, 0.9, 0.4, -0.1, 0.2, 0.8, -0.5, 0.6]);
        const ws = fc.variable(['c', 'b', 'a'], [2, 2, 2], [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8]);
        const two = fc.constant(['k'], [2], [2, 0], 'i64');
        fc.gradcheck((t, s) => t.indexAdd('b', two, s).tanh().sumAll(), [w, ws]);
        fc.gradcheck((t, s) => t.permuteTo(['c', 'b', 'a']).setRows('b', two, s).tanh().sumAll(), [w, ws]);
        fc.gradcheck((t) => t.zeroRows('a', fc.constant(['k'], [1], [1], 'i32')).tanh().sumAll(), [w]);
        throwsCode(() => x.indexAdd('b', fc.constant(['k'], [1], [3], 'i32'), fc.ones(['a', 'b'], [2, 1])), 'IndexOutOfRange');
        throwsCode(() => x.setRows('b', fc.constant(['k'], [1], [-1], 'i32'), fc.ones(['a', 'b'], [2, 1])), 'IndexOutOfRange');
        throwsCode(() => x.zeroRows('b', fc.constant(['k'], [1], [0])), 'DTypeMismatch');  // f32 indices
        throwsCode(() => x.indexAdd('b', two, x), 'ShapeMismatch');
        throwsCode(() => x.scatter('b', fc.full(['a', 'b'], [1, 1], 7, 'i32'), fc.ones(['a', 'b'], [1, 1])), 'IndexOutOfRange');
      });
    });

    test('maskedSelect, maskedScatter, setSlice and zeroSlice', async () => {
      const fc = await engine(variant);
      fc.scope(() => {
        const x = fc.variable(['a', 'b'], [2, 3], iota(6));
        const mask = fc.constant(['b'], [3], [1, 0, 1], 'u8');
        const sel = x.maskedSelect(mask, 'k');
        assert.deepEqual(sel.tags, ['k']);
        assert.deepEqual(values(sel), [0, 2, 3, 5]);
        weighted(fc, sel).backward();
        assert.deepEqual(values(x.grad()), [1, 0, 2, 3, 0, 4]);
        x.zeroGrad();
        const src = fc.variable(['s'], [5], [10, 20, 30, 40, 50]);
        const y = x.maskedScatter(mask, src);
        assert.deepEqual(values(y), [10, 1, 20, 30, 4, 40]);
        weighted(fc, y).backward();
        assert.deepEqual(values(x.grad()), [0, 2, 0, 0, 5, 0]);
        assert.deepEqual(values(src.grad()), [1, 3, 4, 6, 0]);
        const z = fc.variable(['a', 'b'], [2, 4], iota(8));
        const part = fc.variable(['b', 'a'], [2, 2], [10, 30, 20, 40]);
        assert.deepEqual(values(z.setSlice('b', 1, part)), [0, 10, 20, 3, 4, 30, 40, 7]);
        assert.deepEqual(values(z.zeroSlice('b', 1, 3)), [0, 0, 0, 3, 4, 0, 0, 7]);
        fc.gradcheck((t, p) => t.setSlice('b', 2, p).tanh().sumAll(), [z, part]);
        fc.gradcheck((t) => t.permuteTo(['b', 'a']).zeroSlice('a', 0, 1).tanh().sumAll(), [z]);
        fc.gradcheck((t, s) => t.maskedScatter(mask, s).tanh().sumAll(), [x, src]);
        throwsCode(() => x.maskedSelect(fc.constant(['b'], [3], [1, 0, 1], 'i32'), 'k'), 'DTypeMismatch');
        throwsCode(() => x.maskedSelect(fc.constant(['c'], [3], [1, 0, 1], 'u8'), 'k'), 'ShapeMismatch');
        throwsCode(() => x.maskedScatter(mask, fc.ones(['s'], [3])), 'ShapeMismatch');
        throwsCode(() => z.setSlice('b', 3, part), 'IndexOutOfRange');
        throwsCode(() => z.setSlice('b', 0, part.to('f16')), 'DTypeMismatch');
        throwsCode(() => z.zeroSlice('b', 3, 2), 'IndexOutOfRange');
        throwsCode(() => z.zeroSlice('b', -1, 2), 'InvalidArgument');  // the facade's check
      });
    });
  });
}
