// The intentionally no-grad ops through the facade, on both variants: constants even from
// variables, the same seeded draws as natively, masks from any dtype (the PyTorch fixtures in
// ops_parity.test.mjs check the values of the others).
import { describe, test } from 'node:test';
import { VARIANTS, engine, throwsCode, values, assert } from './helpers.mjs';

for (const variant of VARIANTS) {
  describe(variant, () => {
    test('argmax and argsort give i64 constants; multinomial is seeded and follows the weights', async () => {
      const fc = await engine(variant);
      fc.scope(() => {
        const x = fc.variable(['r', 'c'], [2, 3], [1, 5, 5, -1, NaN, 2]);
        const am = x.argmax('c');
        assert.equal(am.dtype, 'i64');
        assert.equal(am.requiresGrad, false);
        assert.deepEqual(values(am), [1, 1]);
        assert.deepEqual(values(x.argsort('c', true)), values(x.sort('c', true)[1]));
        const w = fc.constant(['r', 'k'], [1, 3], [1, 0, 3]);
        const s = w.multinomial('k', 4000, 11, true);
        assert.deepEqual(s.shape, [1, 4000]);
        assert.deepEqual(values(w.multinomial('k', 4000, 11, true)), values(s));
        const counts = [0, 0, 0];
        for (const v of values(s)) counts[v] += 1;
        assert.equal(counts[1], 0);
        assert.ok(Math.abs(counts[2] - 3000) < 150, `${counts}`);
        assert.deepEqual(values(w.multinomial('k', 2, 11)).sort(), [0, 2]);
        throwsCode(() => w.multinomial('k', 3, 11), 'InvalidArgument');  // 2 positive weights
        throwsCode(() => w.multinomial('k', -1, 11), 'InvalidArgument');
      });
    });

    test('masks: isnan, logical ops with broadcasting, any/all, bandMask', async () => {
      const fc = await engine(variant);
      fc.scope(() => {
        const x = fc.constant(['d'], [4], [1, NaN, -Infinity, 0]);
        assert.deepEqual(values(x.isnan()), [0, 1, 0, 0]);
        assert.deepEqual(values(x.isfinite()), [1, 0, 0, 1]);
        assert.equal(x.isnan().dtype, 'u8');
        const m = fc.constant(['r', 'd'], [2, 4], [1, 0, 1, 0, 0, 0, 0, 0], 'u8');
        assert.deepEqual(values(m.logicalOr(x)), [1, 1, 1, 0, 1, 1, 1, 0]);
        assert.deepEqual(values(m.any('d')), [1, 0]);
        assert.deepEqual(values(m.all('r')), [0, 0, 0, 0]);
        assert.equal(m.anyAll().item(), 1);
        assert.deepEqual(values(fc.bandMask('q', 'k', 2, 3, -1, 0)), [1, 0, 0, 1, 1, 0]);
        throwsCode(() => fc.bandMask('q', 'q', 2, 2, 0, 0), 'InvalidArgument');
      });
    });
  });
}
