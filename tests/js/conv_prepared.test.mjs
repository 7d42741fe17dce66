// The prepared convolution through the facade (fc.prepareConv2dWeights, t.conv2dPrepared,
// t.conv2dPreparedRelu): conv2d's values on the Winograd and GEMM paths, the handle's dispose(),
// the reference's gradient error and bad arguments, on both variants.
import { describe, test } from 'node:test';
import { VARIANTS, engine, throwsCode, values, assert } from './helpers.mjs';

const close = (got, want, tol = 1e-4) => {
  assert.equal(got.length, want.length);
  got.forEach((g, i) => assert.ok(Math.abs(g - want[i]) <= tol * (1 + Math.abs(want[i])), `[${i}] ${g} vs ${want[i]}`));
};
const wave = (n, s = 1, p = 0, f = 0.7) => Array.from({ length: n }, (_, i) => s * Math.sin(f * i + p));

for (const variant of VARIANTS) {
  describe(variant, () => {
    test("conv2dPrepared and conv2dPreparedRelu give conv2d's and conv2dRelu's values (Winograd and GEMM paths)", async () => {
      const fc = await engine(variant);
      const cases = [
        [{ padding: 1 }, [2, 3, 7, 5], [5, 3, 3, 3], false],          // 3x3 with few channels: GEMM
        [{ padding: 1 }, [1, 65, 7, 5], [3, 65, 3, 3], true],         // 64+ channels, odd sizes: Winograd
        [{ padding: 0 }, [1, 1, 1, 1], [2, 1, 1, 1], false],          // a 1x1 kernel on a 1x1 image
        [{ padding: 1 }, [3, 64, 1, 1], [4, 64, 3, 3], true],         // 1x1 images in the padding
        [{ stride: 2, padding: 1, groups: 2 }, [2, 4, 9, 8], [6, 2, 3, 3], false],
        [{ dilation: 2, padding: 2 }, [1, 2, 6, 6], [3, 2, 3, 3], false],
        [{ padding: 1 }, [0, 64, 5, 5], [2, 64, 3, 3], true],         // an empty batch
      ];
      for (const [opts, xs, ws, winograd] of cases) {
        const x = fc.constant(['n', 'c', 'h', 'w'], xs, wave(xs.reduce((a, b) => a * b), 1, 0.3));
        const w = fc.constant(['out', 'c', 'kh', 'kw'], ws, wave(ws.reduce((a, b) => a * b), 0.5, 1.1, 0.37));
        const bias = fc.constant(['out'], [ws[0]], wave(ws[0], 0.2, 0.5));
        const p = fc.prepareConv2dWeights(w, { ...opts, bias });
        assert.equal(p.winograd, winograd);
        const y = x.conv2dPrepared(p);
        const want = x.conv2d(w, { ...opts, bias });
        assert.deepEqual(y.tags, want.tags);
        assert.deepEqual(y.shape, want.shape);
        close(values(y), values(want));
        close(values(x.conv2dPreparedRelu(p)), values(x.conv2dRelu(w, { ...opts, bias })));
        p.dispose();
        assert.equal(p.isDisposed, true);
        throwsCode(() => x.conv2dPrepared(p), 'InvalidArgument');
      }
      // Renamed axes and another physical order: the result keeps the input's order.
      const x = fc.constant(['x', 'ch', 'y'], [6, 2, 5], wave(60));
      const w = fc.constant(['ky', 'f', 'ch', 'kx'], [3, 4, 2, 3], wave(72, 0.3, 0.2));
      const axes = { channels: 'ch', height: 'y', width: 'x', outChannels: 'f', kernelH: 'ky', kernelW: 'kx' };
      const p = fc.prepareConv2dWeights(w, { axes, padding: [1, 0] });
      const y = x.conv2dPrepared(p);
      assert.deepEqual(y.tags, ['x', 'f', 'y']);
      close(values(y), values(x.conv2d(w, { axes, padding: [1, 0] })));
      p.dispose();
    });

    test('a weight, bias or input that requires grad is GradientPreparedConv2dUnsupported (not under noGrad)', async () => {
      const fc = await engine(variant);
      const w = fc.constant(['out', 'c', 'kh', 'kw'], [2, 1, 3, 3], wave(18));
      const wv = fc.variable(w);
      const bias = fc.variable(['out'], [2], [0.1, -0.2]);
      const x = fc.constant(['c', 'h', 'w'], [1, 4, 4], wave(16));
      throwsCode(() => fc.prepareConv2dWeights(wv), 'GradientPreparedConv2dUnsupported');
      throwsCode(() => fc.prepareConv2dWeights(w, { bias }), 'GradientPreparedConv2dUnsupported');
      const p = fc.prepareConv2dWeights(w);
      throwsCode(() => fc.variable(x).conv2dPrepared(p), 'GradientPreparedConv2dUnsupported');
      throwsCode(() => fc.variable(x).conv2dPreparedRelu(p), 'GradientPreparedConv2dUnsupported');
      // Evaluation under noGrad: the same operands are accepted and the result is a constant.
      const y = fc.noGrad(() => fc.variable(x).conv2dPrepared(fc.prepareConv2dWeights(wv, { bias })));
      assert.equal(y.requiresGrad, false);
      close(values(y), values(x.conv2d(w, { bias })));
      p.dispose();
    });

    test('bad arguments are InvalidArgument naming prepareConv2dWeights or the op', async () => {
      const fc = await engine(variant);
      const w = fc.constant(['out', 'c', 'kh', 'kw'], [2, 1, 3, 3], wave(18));
      const x = fc.constant(['c', 'h', 'w'], [1, 4, 4], wave(16));
      assert.match(throwsCode(() => fc.prepareConv2dWeights(42), 'InvalidArgument').message, /prepareConv2dWeights: weight/);
      assert.match(throwsCode(() => fc.prepareConv2dWeights(w, { stride: 0 }), 'InvalidArgument').message, /prepareConv2dWeights: stride/);
      assert.match(throwsCode(() => fc.prepareConv2dWeights(w, { nope: 1 }), 'InvalidArgument').message, /prepareConv2dWeights/);
      assert.match(throwsCode(() => x.conv2dPrepared(w), 'InvalidArgument').message, /conv2dPrepared: prepared must be a PreparedConv2d/);
      throwsCode(() => fc.prepareConv2dWeights(fc.constant(['out', 'c'], [2, 1], [1, 2])), 'ShapeMismatch');
      const p = fc.prepareConv2dWeights(w);
      throwsCode(() => fc.constant(['c', 'h', 'w'], [2, 4, 4], wave(32)).conv2dPrepared(p), 'ShapeMismatch');
      p.dispose();
      p.dispose();  // idempotent
    });
  });
}
