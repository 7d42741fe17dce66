// Bad input never kills the module: each case is a clear FucinaError (or the user's own error,
// unchanged), and the module keeps working afterwards.
import { describe, test } from 'node:test';
import { VARIANTS, engine, throwsCode, values, assert, FucinaError } from './helpers.mjs';

async function stillWorks(fc) {
  const x = fc.variable(['d'], [2], [1, 2]);
  x.mul(x).sumAll().backward();
  assert.deepEqual(values(x.grad()), [2, 4]);
}

for (const variant of VARIANTS) {
  describe(variant, () => {
    test('creation errors: value counts, extents, dtypes, argument types', async () => {
      const fc = await engine(variant);
      throwsCode(() => fc.constant(['d'], [2], [1, 2, 3]), 'ShapeMismatch');
      throwsCode(() => fc.constant(['d'], [-1], []), 'InvalidArgument');
      throwsCode(() => fc.constant(['d'], [1.5], [1]), 'InvalidArgument');
      throwsCode(() => fc.constant(['d'], [NaN], []), 'InvalidArgument');
      throwsCode(() => fc.constant(['d'], [Infinity], []), 'InvalidArgument');
      throwsCode(() => fc.constant(['d'], ['2'], [1, 2]), 'InvalidArgument');
      throwsCode(() => fc.constant(['d', 'd'], [1, 1], [1]), 'ShapeMismatch');
      throwsCode(() => fc.constant(['d'], [1], [1], 'f128'), 'InvalidArgument');
      throwsCode(() => fc.constant('d', [1], [1]), 'InvalidArgument');
      throwsCode(() => fc.constant([''], [1], [1]), 'InvalidArgument');
      throwsCode(() => fc.constant(['d'], [2], 'ab'), 'InvalidArgument');
      throwsCode(() => fc.constant(['d'], [2], [1, 'x']), 'InvalidArgument');
      throwsCode(() => fc.full(['d'], [2], 'one'), 'InvalidArgument');
      await stillWorks(fc);
    });

    test('op errors: tags, extents, wrong argument types, dtypes', async () => {
      const fc = await engine(variant);
      const x = fc.variable(['r', 'c'], [2, 3], [1, 2, 3, 4, 5, 6]);
      const e = throwsCode(() => x.add(fc.ones(['c'], [4])), 'ShapeMismatch');
      assert.match(e.message, /'c'/);
      throwsCode(() => x.dot(fc.ones(['o', 'k'], [2, 3]), 'c'), 'ShapeMismatch');
      throwsCode(() => x.sum('nope'), 'ShapeMismatch');
      throwsCode(() => x.narrow('c', 2, 5), 'IndexOutOfRange');
      throwsCode(() => x.add(3), 'InvalidArgument');
      throwsCode(() => x.add({}), 'InvalidArgument');
      throwsCode(() => x.scale('2'), 'InvalidArgument');
      throwsCode(() => x.dot(x, 7), 'InvalidArgument');
      throwsCode(() => x.dropout(2, 1), 'InvalidArgument');
      throwsCode(() => x.dropout(0.5, -1), 'InvalidArgument');
      throwsCode(() => fc.ones(['d'], [2], 'f16').exp(), 'DTypeMismatch');
      throwsCode(() => x.to('i32'), 'GradientCastUnsupported');
      throwsCode(() => x.item(), 'InvalidArgument');
      throwsCode(() => fc.constant(['d'], [1], [1]).backward(), 'NoGradientGraph');
      await stillWorks(fc);
    });

    test('autograd errors: seeds, repeated backward', async () => {
      const fc = await engine(variant);
      const x = fc.variable(['d'], [2], [1, 2]);
      const y = x.scale(2);
      throwsCode(() => y.backward(), 'MissingOutputGradient');
      throwsCode(() => y.backward(fc.ones(['d'], [3])), 'ShapeMismatch');
      throwsCode(() => y.backward('seed'), 'InvalidArgument');
      const loss = y.sumAll();
      loss.backward();
      throwsCode(() => loss.backward(), 'BackwardAlreadyRun');
      await stillWorks(fc);
    });

    test('use after dispose is TensorReleased', async () => {
      const fc = await engine(variant);
      const x = fc.variable(['d'], [2], [1, 2]);
      const y = x.scale(2);
      y.dispose();
      y.dispose();  // idempotent
      assert.equal(y.isDisposed, true);
      throwsCode(() => y.toArray(), 'TensorReleased');
      throwsCode(() => x.add(y), 'TensorReleased');
      throwsCode(() => y.tags, 'TensorReleased');
      await stillWorks(fc);
    });

    test('a JS block that throws, in forward or in the recompute, surfaces unchanged', async () => {
      const fc = await engine(variant);
      const x = fc.variable(['d'], [2], [1, 2]);
      assert.throws(() => fc.checkpoint(() => { throw new TypeError('boom'); }, [x]), { name: 'TypeError', message: 'boom' });
      let fail = false;
      const y = fc.checkpoint((a) => { if (fail) throw new RangeError('recompute boom'); return a.exp(); }, [x]);
      const loss = y.sumAll();
      fail = true;
      assert.throws(() => loss.backward(), { name: 'RangeError', message: 'recompute boom' });
      fail = false;
      loss.backward();  // the graph stayed re-runnable
      // As §5.2 says, contributions delivered before the failure stay: y already held its
      // gradient from the failed pass, so the retry propagates it twice.
      assert.deepEqual(values(x.grad()).map((v) => v.toFixed(4)), [2 * Math.E, 2 * Math.E ** 2].map((v) => v.toFixed(4)));
      throwsCode(() => fc.checkpoint(() => 42, [x]), 'InvalidArgument');
      throwsCode(() => fc.checkpoint('block', [x]), 'InvalidArgument');
      throwsCode(() => fc.checkpoint((a) => a, [x, 'y']), 'InvalidArgument');
      // A FucinaError thrown inside a block keeps its code.
      throwsCode(() => fc.checkpoint((a) => a.add(fc.ones(['e'], [3])).sum('zz'), [x]), 'ShapeMismatch');
      await stillWorks(fc);
    });

    test('customVjp backward returning a wrong shape or nothing is a clear error', async () => {
      const fc = await engine(variant);
      const x = fc.variable(['d'], [2], [1, 2]);
      const spec = (grad) => ({ forward: ([a]) => a.scale(3), backward: () => grad() });
      throwsCode(() => fc.customVjp(spec(() => [fc.ones(['d'], [3])]), [x]).sumAll().backward(), 'ShapeMismatch');
      throwsCode(() => fc.customVjp(spec(() => [null]), [x]).sumAll().backward(), 'MissingBackwardGradient');
      throwsCode(() => fc.customVjp(spec(() => 'nope'), [x]).sumAll().backward(), 'InvalidArgument');
      assert.throws(() => fc.customVjp(spec(() => { throw new SyntaxError('vjp'); }), [x]).sumAll().backward(),
        { name: 'SyntaxError' });
      throwsCode(() => fc.customVjp({ forward: () => 1 }, [x]), 'InvalidArgument');
      const ok = fc.customVjp(spec(() => [fc.full(['d'], [2], 3)]), [x]);
      ok.sumAll().backward();
      assert.deepEqual(values(x.grad()), [3, 3]);
      await stillWorks(fc);
    });

    test('gradcheck errors reach JS with their codes', async () => {
      const fc = await engine(variant);
      const x = fc.variable(['d'], [2], [1, 2]);
      const c = fc.constant(['d'], [2], [1, 2]);
      throwsCode(() => fc.gradcheck((a) => a.sumAll(), [c]), 'NoVariableInputs');
      throwsCode(() => fc.gradcheck((a) => a.sumAll(), [x], { eps: -1 }), 'InvalidGradcheckOptions');
      const wrong = { forward: ([a]) => a.mul(a), backward: ([a], _o, gy) => [gy.mul(a)] };  // missing factor 2
      throwsCode(() => fc.gradcheck((a) => fc.customVjp(wrong, [a]).sumAll(), [x]), 'GradientMismatch');
      assert.equal(x.grad(), null);  // gradcheck leaves gradients zeroed
      await stillWorks(fc);
    });

    test('errors are FucinaError instances with the C++ message', async () => {
      const fc = await engine(variant);
      const e = throwsCode(() => fc.ones(['a'], [2]).add(fc.ones(['a'], [3])), 'ShapeMismatch');
      assert.ok(e instanceof Error);
      assert.ok(e instanceof FucinaError);
      assert.equal(e.name, 'FucinaError');
      assert.match(e.message, /^ShapeMismatch: add: axis 'a' has extent 2/);
    });
  });
}
