// Structure ops (insertAxis, squeeze, merge, split, flatten, reshape, select, slice, concat, stack,
// pad, where, maskedFill, tril, triu, bandPart): values, fc.gradcheck through each on
// permuted/narrowed inputs, and an error case per op, on both variants.
import { describe, test } from 'node:test';
import { VARIANTS, engine, throwsCode, values, assert } from './helpers.mjs';

const opts = { eps: 1e-3, absTol: 3e-3, relTol: 2e-2 };

for (const variant of VARIANTS) {
  describe(variant, () => {
    test('view ops: values and axes', async () => {
      const fc = await engine(variant);
      const x = fc.constant(['a', 'b'], [2, 3], [0, 1, 2, 3, 4, 5]);
      const y = x.insertAxis('k', 1);
      assert.deepEqual(y.tags, ['a', 'k', 'b']);
      assert.deepEqual(y.shape, [2, 1, 3]);
      assert.deepEqual(y.squeeze('k').tags, ['a', 'b']);
      const m = x.merge(['b', 'a'], 'ba');
      assert.deepEqual(m.tags, ['ba']);
      assert.deepEqual(values(m), [0, 3, 1, 4, 2, 5]);
      const s = x.split('b', ['p', 'q'], [3, 1]);
      assert.deepEqual(s.tags, ['a', 'p', 'q']);
      assert.deepEqual(s.shape, [2, 3, 1]);
      assert.deepEqual(values(x.flatten('all')), [0, 1, 2, 3, 4, 5]);
      assert.deepEqual(values(x.permuteTo(['b', 'a']).reshape(['p', 'q'], [3, 2])), [0, 3, 1, 4, 2, 5]);
      assert.deepEqual(values(x.select('a', 1)), [3, 4, 5]);
      assert.deepEqual(values(x.select('b', -1)), [2, 5]);
      assert.deepEqual(values(x.slice('b', 0, 3, 2)), [0, 2, 3, 5]);
      assert.deepEqual(values(x.slice('b', 1, 3)), [1, 2, 4, 5]);
    });

    test('view ops: gradcheck on permuted and narrowed inputs', async () => {
      const fc = await engine(variant);
      const x = fc.variable(['r', 'c'], [3, 4], [0.3, -1.2, 0.7, 1.5, -0.4, 0.9, -1.7, 0.2, 1.1, -0.6, 0.45, -0.85]);
      const w = fc.constant(['k'], [12], [1, -2, 3, 0.5, -1, 2, 0.25, 1.5, -0.5, 2.5, -3, 1]);
      fc.gradcheck((x) => x.permuteTo(['c', 'r']).flatten('k').tanh().mul(w).sumAll(), [x], opts);
      fc.gradcheck((x) => x.merge(['c', 'r'], 'k').split('k', ['p', 'q'], [6, 2]).reshape(['k'], [12])
        .tanh().mul(w).sumAll(), [x], opts);
      fc.gradcheck((x) => x.narrow('c', 1, 3).permuteTo(['c', 'r']).slice('c', 0, 3, 2).insertAxis('u', 0)
        .squeeze('u').tanh().sumAll().add(x.select('r', -1).mul(x.select('c', 2).sumAll()).sumAll()), [x], opts);
    });

    test('view ops: bad inputs name the axis', async () => {
      const fc = await engine(variant);
      const x = fc.ones(['a', 'b'], [2, 3]);
      throwsCode(() => x.insertAxis('k', 3), 'IndexOutOfRange');
      throwsCode(() => x.insertAxis('a', 0), 'ShapeMismatch');
      assert.match(throwsCode(() => x.squeeze('a'), 'InvalidArgument').message, /'a'/);
      throwsCode(() => x.merge(['a', 'zz'], 'k'), 'ShapeMismatch');
      assert.match(throwsCode(() => x.split('b', ['p', 'q'], [2, 2]), 'ShapeMismatch').message, /'b'/);
      throwsCode(() => x.flatten(3), 'InvalidArgument');
      throwsCode(() => x.reshape(['p'], [5]), 'ShapeMismatch');
      assert.match(throwsCode(() => x.select('a', 2), 'IndexOutOfRange').message, /'a'/);
      throwsCode(() => x.slice('b', 0, 4), 'IndexOutOfRange');
      throwsCode(() => x.slice('b', 0, 2, 0), 'InvalidArgument');
      throwsCode(() => x.slice('b', 0.5, 2), 'InvalidArgument');
    });

    test('joining, padding and masking ops: values', async () => {
      const fc = await engine(variant);
      const x = fc.constant(['a', 'b'], [2, 2], [1, 2, 3, 4]);
      const y = fc.constant(['b', 'a'], [1, 2], [5, 6]);
      assert.deepEqual(values(fc.concat([x, y], 'b')), [1, 2, 5, 3, 4, 6]);
      const s = fc.stack([x, x.permuteTo(['b', 'a'])], 'n');
      assert.deepEqual(s.tags, ['n', 'a', 'b']);
      assert.deepEqual(values(s), [1, 2, 3, 4, 1, 2, 3, 4]);
      assert.deepEqual(values(x.pad('b', 1, 0, -1)), [-1, 1, 2, -1, 3, 4]);
      const cond = fc.constant(['b'], [2], [1, 0], 'u8');
      assert.deepEqual(values(fc.where(cond, x, fc.constant(['a'], [2], [10, 20]))), [1, 10, 3, 20]);
      assert.deepEqual(values(x.maskedFill(cond, -9)), [-9, 2, -9, 4]);
      const m = fc.constant(['i', 'j'], [3, 3], [1, 2, 3, 4, 5, 6, 7, 8, 9]);
      assert.deepEqual(values(m.tril('i', 'j')), [1, 0, 0, 4, 5, 0, 7, 8, 9]);
      assert.deepEqual(values(m.triu('i', 'j', 1)), [0, 2, 3, 0, 0, 6, 0, 0, 0]);
      assert.deepEqual(values(m.bandPart('i', 'j', 1, 0)), [1, 0, 0, 4, 5, 0, 0, 8, 9]);
      assert.deepEqual(values(m.bandPart('i', 'j', -1, 0)), values(m.tril('i', 'j')));
    });

    test('joining, padding and masking ops: gradcheck', async () => {
      const fc = await engine(variant);
      const x = fc.variable(['r', 'c'], [3, 3], [0.3, -1.2, 0.7, 1.5, -0.4, 0.9, -1.7, 0.2, 1.1]);
      const y = fc.variable(['c'], [3], [0.5, -0.25, 0.8]);
      const cond = fc.constant(['c', 'r'], [3, 3], [1, 0, 1, 0, 0, 1, 1, 1, 0], 'u8');
      const w = fc.constant(['r', 'c'], [4, 3], [1, -2, 3, 0.5, -1, 2, 0.25, 1.5, -0.5, 2.5, -3, 1]);
      fc.gradcheck((x, y) => fc.concat([x.permuteTo(['c', 'r']), y.insertAxis('r', 1)], 'r').tanh().mul(w).sumAll()
        .add(fc.stack([x.select('r', 0), y], 'n').tanh().sumAll()), [x, y], opts);
      fc.gradcheck((x, y) => x.narrow('c', 0, 2).pad('c', 1, 0, 0.5).tanh().mul(x).sumAll()
        .add(fc.where(cond, x.permuteTo(['c', 'r']), y).tanh().sumAll())
        .add(x.maskedFill(cond, 2).mul(x).sumAll()), [x, y], opts);
      fc.gradcheck((x) => x.tril('r', 'c').add(x.triu('c', 'r', 1)).add(x.bandPart('r', 'c', 0, 1))
        .tanh().mul(x).sumAll(), [x], opts);
    });

    test('joining, padding and masking ops: bad inputs', async () => {
      const fc = await engine(variant);
      const x = fc.ones(['a', 'b'], [2, 2]);
      assert.match(throwsCode(() => fc.concat([x, fc.ones(['a', 'b'], [3, 1])], 'b'), 'ShapeMismatch').message, /'b'/);
      throwsCode(() => fc.concat([], 'b'), 'InvalidArgument');
      throwsCode(() => fc.concat([x, [1, 2]], 'b'), 'InvalidArgument');
      throwsCode(() => fc.stack([x, fc.ones(['a'], [2])], 'n'), 'ShapeMismatch');
      throwsCode(() => x.pad('b', -1, 0), 'InvalidArgument');
      throwsCode(() => fc.where(fc.ones(['b'], [3], 'u8'), x, x), 'ShapeMismatch');
      throwsCode(() => fc.where(fc.ones(['b'], [2], 'i32'), x, x), 'DTypeMismatch');
      assert.match(throwsCode(() => x.maskedFill(fc.ones(['q'], [2], 'u8'), 0), 'ShapeMismatch').message, /'q'/);
      throwsCode(() => x.tril('a', 'a'), 'InvalidArgument');
      throwsCode(() => x.triu('a', 'zz'), 'ShapeMismatch');
      throwsCode(() => x.bandPart('a', 'b', -2, 0), 'InvalidArgument');
    });
  });
}

for (const variant of ['threaded-simd', 'simd']) {
  test(`${variant}: indexSelect looks up embeddings and scatter-adds their gradients`, async () => {
    const fc = await engine(variant);
    const table = fc.variable(['vocab', 'd'], [3, 2], [1, 2, 3, 4, 5, 6]);
    const ids = fc.constant(['batch', 't'], [2, 2], [2, 0, 2, 1], 'i32');
    const e = table.indexSelect('vocab', ids);
    assert.deepEqual(e.tags, ['batch', 't', 'd']);
    assert.deepEqual(Array.from(e.toArray()), [5, 6, 1, 2, 5, 6, 3, 4]);
    e.sumAll().backward();
    assert.deepEqual(Array.from(table.grad().toArray()), [1, 1, 1, 1, 2, 2]);  // id 2 used twice
    fc.gradcheck((t) => t.indexSelect('vocab', ids).tanh().sumAll(), [table]);
    throwsCode(() => table.indexSelect('vocab', fc.constant(['b'], [1], [3], 'i32')), 'IndexOutOfRange');
    throwsCode(() => table.indexSelect('vocab', [1]), 'InvalidArgument');
  });
}
