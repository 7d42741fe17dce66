// Bad input never kills the module: each case is a clear FucinaError (or the user's own error,
// unchanged), and the module keeps working afterwards.
import { describe, test } from 'node:test';
import { VARIANTS, engine, init, throwsCode, values, assert, FucinaError } from './helpers.mjs';

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
      throwsCode(() => fc.ones(['d'], [2], 'i32').exp(), 'DTypeMismatch');
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
      // Contributions delivered before the failure stay (Note [Re-runnable exits]): y already
      // held its gradient from the failed pass, so the retry propagates it twice.
      assert.deepEqual(values(x.grad()).map((v) => v.toFixed(4)), [2 * Math.E, 2 * Math.E ** 2].map((v) => v.toFixed(4)));
      throwsCode(() => fc.checkpoint(() => 42, [x]), 'InvalidArgument');
      throwsCode(() => fc.checkpoint('block', [x]), 'InvalidArgument');
      throwsCode(() => fc.checkpoint((a) => a, [x, 'y']), 'InvalidArgument');
      // A FucinaError thrown inside a block keeps its code.
      throwsCode(() => fc.checkpoint((a) => a.add(fc.ones(['e'], [3])).sum('zz'), [x]), 'ShapeMismatch');
      // checkpointTail's callback likewise, inside a recompute too.
      throwsCode(() => fc.checkpointTail('tail'), 'InvalidArgument');
      throwsCode(() => fc.checkpointTail(() => 42), 'InvalidArgument');
      assert.throws(() => fc.checkpointTail(() => { throw new TypeError('tail boom'); }), { name: 'TypeError', message: 'tail boom' });
      const z = fc.checkpoint((a) => fc.checkpointTail(() => { if (fail) throw new RangeError('tail recompute'); return a.add(a); }), [x]);
      fail = true;
      assert.throws(() => z.sumAll().backward(), { name: 'RangeError', message: 'tail recompute' });
      fail = false;
      await stillWorks(fc);
    });

    test('customVjp backward returning a wrong shape or nothing is a clear error', async () => {
      const fc = await engine(variant);
      const x = fc.variable(['d'], [2], [1, 2]);
      const spec = (grad) => ({ forward: ([a]) => a.scale(3), backward: () => grad() });
      throwsCode(() => fc.customVjp(spec(() => [fc.ones(['d'], [3])]), [x]).sumAll().backward(), 'ShapeMismatch');
      throwsCode(() => fc.customVjp(spec(() => [null]), [x]).sumAll().backward(), 'MissingBackwardGradient');
      // Too few gradients leave the rest empty: a slot that needs one is MissingBackwardGradient
      // (the reference's code), and one that needs none may be left out.
      throwsCode(() => fc.customVjp(spec(() => []), [x]).sumAll().backward(), 'MissingBackwardGradient');
      const x2 = fc.variable(['d'], [2], [1, 2]), c = fc.full(['d'], [2], 5);
      const two = { forward: ([a, b]) => a.mul(b), backward: ([, b], _y, gy) => [gy.mul(b)] };
      fc.customVjp(two, [x2, c]).sumAll().backward();
      assert.deepEqual(values(x2.grad()), [5, 5]);
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
      // printMismatch (the reference's print_mismatch, default true) prints the first failing
      // element with console.error before the error is thrown; false prints nothing.
      const printed = [];
      const consoleError = console.error;
      console.error = (...a) => printed.push(a.join(' '));
      try {
        throwsCode(() => fc.gradcheck((a) => fc.customVjp(wrong, [a]).sumAll(), [x]), 'GradientMismatch');
        assert.equal(printed.length, 1);
        assert.match(printed[0], /element 0: numerical .* vs analytical/);
        throwsCode(() => fc.gradcheck((a) => fc.customVjp(wrong, [a]).sumAll(), [x], { printMismatch: false }), 'GradientMismatch');
        assert.equal(printed.length, 1);
      } finally {
        console.error = consoleError;
      }
      fc.gradcheck((a) => a.mul(a).sumAll(), [x], { printMismatch: false });
      throwsCode(() => fc.gradcheck((a) => a.sumAll(), [x], { printMismatch: 1 }), 'InvalidArgument');
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

// Trustworthy under hostile use: each finding's regression test.
const baseline = (fc) => fc.memory().liveTensors;

/** fn throws (a FucinaError with this code, if given); afterwards grad mode is on, no tensor
 * leaked, and ops still work. Returns what was thrown. */
async function leavesEngineSound(fc, fn, code) {
  const before = baseline(fc);
  let thrown = false;
  let error;
  try {
    fc.scope(fn);  // frees what the case itself made before the error
  } catch (e) {
    thrown = true;
    error = e;
  }
  assert.ok(thrown, 'expected a throw');
  if (code !== undefined) {
    assert.ok(error instanceof FucinaError, `expected a FucinaError ${code}, got ${error?.name}: ${error?.message}`);
    assert.equal(error.code, code, error.message);
  }
  assert.equal(fc.isGradEnabled(), true, 'grad mode restored');
  assert.equal(baseline(fc), before, 'no tensor leaked');
  await stillWorks(fc);
  return error;
}

for (const variant of VARIANTS) {
  describe(`${variant}: hostile inputs`, () => {
    test('a tensor of another instance is refused clearly, in ops and callback results', async () => {
      const fc = await engine(variant);
      const other = await init({ variant, threads: variant === 'threaded-simd' ? 1 : undefined });
      const foreign = other.ones(['d'], [2]);
      const x = fc.variable(['d'], [2], [1, 2]);
      const cases = [
        () => x.add(foreign),
        () => fc.concat([x, foreign], 'd'),
        () => fc.optim.sgd([foreign]),
        () => fc.checkpoint(() => foreign, [x]),
        () => fc.customVjp({ forward: () => foreign, backward: () => [null] }, [x]),
        () => fc.gradcheck(() => foreign, [x]),
        () => fc.customVjp({ forward: ([a]) => a.scale(2), backward: () => [foreign] }, [x]).sumAll().backward(),
      ];
      for (const c of cases) {
        const e = await leavesEngineSound(fc, c, 'InvalidArgument');
        assert.match(e.message, /another fucina instance/);
      }
      foreign.dispose();
    });

    test('every way a callback can fail restores grad mode, scopes and handles', async () => {
      const fc = await engine(variant);
      const x = fc.variable(['d'], [2], [1, 2]);
      const disposed = fc.ones(['d'], [2]);
      disposed.dispose();
      const results = [() => { throw new Error('boom'); }, () => 42, () => fc.ones(['e'], [3]), () => disposed,
        () => { throw null; }, () => { throw undefined; }, () => { throw 'text'; }, () => { throw 7; }];
      for (const r of results) {
        await leavesEngineSound(fc, () => fc.checkpoint(r, [x]).sumAll().backward());
        await leavesEngineSound(fc, () => fc.customVjp({ forward: r, backward: () => [null] }, [x]).sumAll().backward());
        await leavesEngineSound(fc, () => fc.customVjp({ forward: ([a]) => a.scale(2), backward: () => [r()] }, [x]).sumAll().backward());
        await leavesEngineSound(fc, () => fc.gradcheck(r, [x]));
      }
    });

    test('a value thrown in a callback comes out as thrown (null, undefined, strings, numbers)', async () => {
      const fc = await engine(variant);
      const x = fc.variable(['d'], [2], [1, 2]);
      for (const value of [null, undefined, 'text', 7]) {
        const e = await leavesEngineSound(fc, () => fc.checkpoint(() => { throw value; }, [x]));
        assert.equal(e, value);
        const g = await leavesEngineSound(fc, () => fc.gradcheck(() => { throw value; }, [x]));
        assert.equal(g, value);
      }
    });

    test('a customVjp backward returning extra gradients is InvalidArgument and leaks nothing', async () => {
      const fc = await engine(variant);
      const x = fc.variable(['d'], [2], [1, 2]);
      const spec = { forward: ([a]) => a.scale(3), backward: () => [fc.ones(['d'], [2]), fc.ones(['d'], [2])] };
      await leavesEngineSound(fc, () => fc.customVjp(spec, [x]).sumAll().backward(), 'InvalidArgument');
    });

    test('every loss takes its reduction as a string or { reduction }, and rejects others', async () => {
      const fc = await engine(variant);
      const logits = fc.variable(['b', 'c'], [2, 3], [1, 2, 3, 3, 1, 2]);
      const labels = fc.constant(['b'], [2], [0, 2], 'i32');
      const p = fc.constant(['b', 'c'], [2, 3], [0.2, 0.3, 0.5, 0.1, 0.1, 0.8]);
      const losses = {
        crossEntropy: (o) => logits.crossEntropy(labels, 'c', o),
        nllLoss: (o) => logits.logSoftmax('c').nllLoss(labels, 'c', o),
        mseLoss: (o) => logits.mseLoss(p, o),
        huberLoss: (o) => logits.huberLoss(p, o),
        bceLoss: (o) => p.bceLoss(p, o),
        bceWithLogitsLoss: (o) => logits.bceWithLogitsLoss(p, o),
        klDivLoss: (o) => logits.logSoftmax('c').klDivLoss(p, o),
      };
      for (const [name, loss] of Object.entries(losses)) {
        const none = values(loss('none'));
        const sum = none.reduce((a, b) => a + b, 0);
        assert.ok(Math.abs(loss('sum').item() - sum) < 1e-4, `${name} 'sum'`);
        assert.ok(Math.abs(loss({ reduction: 'sum' }).item() - sum) < 1e-4, `${name} { reduction: 'sum' }`);
        assert.ok(Math.abs(loss().item() - loss('mean').item()) < 1e-6, `${name} default`);
        assert.match(throwsCode(() => loss('avg'), 'InvalidArgument').message, /'avg'/);
        assert.match(throwsCode(() => loss({ reduction: 'avg' }), 'InvalidArgument').message, /'avg'/);
        assert.match(throwsCode(() => loss({ reductoin: 'sum' }), 'InvalidArgument').message, /'reductoin'/);
        throwsCode(() => loss(3), 'InvalidArgument');
      }
      await stillWorks(fc);
    });

    test('unknown option keys are InvalidArgument naming the key and the accepted ones', async () => {
      const fc = await engine(variant);
      const x = fc.variable(['c', 'h', 'w'], [1, 4, 4], new Array(16).fill(1));
      const labels = fc.constant([], [], [0], 'i32');
      const cases = [
        [() => x.sum('h').sum('w').crossEntropy(labels, 'c', { reductoin: 'sum' }), 'reductoin'],
        [() => x.layerNorm('w', { epsilon: 1e-3 }), 'epsilon'],
        [() => fc.gradcheck((a) => a.sumAll(), [x], { tol: 1 }), 'tol'],
        [() => new fc.nn.Gpt({ dmodel: 8 }), 'dmodel'],
        [() => new fc.nn.Mlp({ size: [2, 2] }), 'size'],
        [() => new fc.nn.Cnn({ img: 28 }), 'img'],
        [() => new fc.nn.Linear('in', 'out', 2, 2, 0, { biass: false }), 'biass'],
        [() => fc.optim.adam([x], { beta: 0.9 }), 'beta'],
        [() => x.conv2d(fc.ones(['out', 'c', 'kh', 'kw'], [1, 1, 1, 1]), { strides: 2 }), 'strides'],
        [() => x.maxPool2d(2, { pad: 1 }), 'pad'],
        [() => x.rope({ pos: 'h' }), 'pos'],
      ];
      for (const [fn, key] of cases) {
        const e = throwsCode(fn, 'InvalidArgument');
        assert.match(e.message, new RegExp(`unknown option '${key}' \\(use `));
      }
      await assert.rejects(init({ variant, thread: 2 }), (e) => e instanceof FucinaError && /'thread'/.test(e.message));
      await stillWorks(fc);
    });

    test('integer arguments are checked as integers, naming the argument', async () => {
      const fc = await engine(variant);
      const x = fc.variable(['r', 'c'], [2, 3], [1, 2, 3, 4, 5, 6]);
      for (const bad of [Infinity, 2 ** 53, 2 ** 32 + 1, NaN, 1.5, -1])
        assert.match(throwsCode(() => x.insertAxis('n', bad), 'InvalidArgument').message, /position/);
      const cases = [
        [() => x.narrow('c', 0.5, 1), 'start'], [() => x.narrow('c', 0, NaN), 'length'],
        [() => x.select('c', 1.5), 'index'], [() => x.select('c', 2 ** 60), 'index'],
        [() => x.slice('c', 0, Infinity), 'end'], [() => x.slice('c', 0, 2, 0.5), 'step'],
        [() => x.pad('c', -1, 0), 'before'], [() => x.tril('r', 'c', Infinity), 'bound'],
        [() => x.variance('c', 0.5), 'correction'], [() => x.dropout(0.5, 1.5), 'seed'],
        [() => fc.uniform(['d'], [2], 0, 1, -1), 'seed'], [() => fc.normal(['d'], [2], 0, 1, 2 ** 64), 'seed'],
        [() => x.rope({ position: 'r', dim: 'c', offset: 0.5 }), 'offset'],
        [() => fc.zeros(['d'], [2 ** 53]), 'shape'], [() => x.split('c', ['a', 'b'], [3, 1.5]), 'extents'],
        [() => x.insertAxis('h', 0).insertAxis('w', 0).maxPool2d(0), 'kernel'],
        [() => x.insertAxis('h', 0).insertAxis('w', 0).avgPool2d(1, { stride: Infinity }), 'stride'],
      ];
      for (const [fn, what] of cases) assert.match(throwsCode(fn, 'InvalidArgument').message, new RegExp(what));
      await assert.rejects(init({ variant: 'threaded-simd', threads: 2.5 }), (e) => e instanceof FucinaError && /threads/.test(e.message));
      await stillWorks(fc);
    });

    test('heap exhaustion and corrupt bytes are FucinaErrors with codes', async () => {
      const fc = await engine(variant);
      await leavesEngineSound(fc, () => fc.zeros(['d'], [2 ** 31]), 'OutOfMemory');
      await leavesEngineSound(fc, () => fc.zeros(['a', 'b'], [2 ** 20, 2 ** 20]), 'OutOfMemory');
      const good = fc.encodeSafetensors({ w: fc.ones(['d'], [2]) });
      for (const bytes of [good.subarray(0, 12), good.subarray(0, good.length - 1), new Uint8Array(8).fill(255),
        new Uint8Array([4, 0, 0, 0, 0, 0, 0, 0, 123, 34, 34, 125])]) {
        const e = await leavesEngineSound(fc, () => fc.decodeSafetensors(bytes));
        assert.ok(e instanceof FucinaError && typeof e.code === 'string', `${e?.name}: ${e?.message}`);
      }
      throwsCode(() => fc.encodeSafetensors({ w: fc.ones(['d'], [2]) }, null), 'InvalidArgument');
      throwsCode(() => fc.encodeSafetensors({ w: fc.ones(['d'], [2]) }, { k: 1 }), 'InvalidArgument');
    });

    test('disposed and non-tensor arguments are FucinaErrors in every function', async () => {
      const fc = await engine(variant);
      const x = fc.variable(['d'], [2], [1, 2]);
      const gone = fc.ones(['d'], [2]);
      gone.dispose();
      for (const [bad, code] of [[gone, 'TensorReleased'], [{}, 'InvalidArgument'], [null, 'InvalidArgument']]) {
        throwsCode(() => x.add(bad), code);
        throwsCode(() => fc.concat([x, bad], 'd'), code);
        throwsCode(() => fc.where(bad, x, x), code);
        throwsCode(() => fc.variable(bad), code);
        throwsCode(() => fc.optim.sgd([bad]), code);
        throwsCode(() => fc.optim.clipGradNorm([bad], 1), code);
        throwsCode(() => fc.encodeSafetensors({ a: bad }), code);
        throwsCode(() => fc.checkpoint((a) => a, [bad]), code);
        throwsCode(() => x.backward(bad), code);
      }
      await stillWorks(fc);
    });
  });
}

describe('hostile inputs: data and layer helpers', () => {
  test('readIdx on a truncated .gz, subSeed of a string, a huge shuffledIndices are FucinaErrors', async () => {
    const { gzipSync } = await import('node:zlib');
    const { writeFileSync, mkdtempSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const { readIdx, shuffledIndices } = await import('fucina');
    const file = `${mkdtempSync(`${tmpdir()}/fucina-`)}/t.gz`;
    const gz = gzipSync(new Uint8Array([0, 0, 8, 1, 0, 0, 0, 2, 7, 9]));
    writeFileSync(file, gz.subarray(0, gz.length - 6));
    await assert.rejects(readIdx(file), (e) => e instanceof FucinaError && e.code === 'InvalidArgument');
    const fc = await engine('simd');
    throwsCode(() => fc.nn.subSeed('x', 0), 'InvalidArgument');
    throwsCode(() => fc.nn.subSeed(1.5, 0), 'InvalidArgument');
    throwsCode(() => shuffledIndices(2 ** 32, 1), 'InvalidArgument');
    throwsCode(() => shuffledIndices(4, 'seed'), 'InvalidArgument');
  });
});
