// The inference-only packed products through the facade, on both variants: packRhs's handle, the
// values of dot/addDot and of the fused forms' parts, the three gradient refusals and bad
// arguments (packed_tests.cpp has the layouts, sizes and thread counts).
import { describe, test } from 'node:test';
import { VARIANTS, engine, throwsCode, values, assert } from './helpers.mjs';

const close = (got, want, tol = 1e-5) => {
  assert.equal(got.length, want.length);
  got.forEach((g, i) => assert.ok(Math.abs(g - want[i]) <= tol * (1 + Math.abs(want[i])), `element ${i}: ${g} vs ${want[i]}`));
};
const wave = (n, phase) => Array.from({ length: n }, (_, i) => 0.8 * Math.sin(0.37 * i + phase));

for (const variant of VARIANTS) {
  describe(variant, () => {
    test('dotPacked equals dot and addDot, dense and quantized', async () => {
      const fc = await engine(variant);
      fc.scope(() => {
        const x = fc.constant(['t', 'e'], [3, 64], wave(192, 0.1));
        const w = fc.constant(['o', 'e'], [5, 64], wave(320, 0.5));
        const bias = fc.constant(['o'], [5], [1, 2, 3, 4, 5]);
        const p = fc.packRhs(w, 'e');
        assert.equal(p.axis, 'e');
        assert.equal(p.depth, 64);
        assert.deepEqual(p.tags, ['o']);
        assert.deepEqual(p.shape, [5]);
        assert.equal(p.dtype, 'f32');
        assert.equal(p.sourceDtype, 'f32');
        assert.ok(p.bytes >= 5 * 64 * 4);
        assert.match(String(p), /PackedRhs\('e' 64/);
        const y = x.dotPacked(p);
        assert.deepEqual(y.tags, ['t', 'o']);
        assert.equal(y.requiresGrad, false);
        close(values(y), values(x.dot(w, 'e')));
        close(values(x.dotPacked(p, bias)), values(x.addDot(w, 'e', bias)));
        const q = w.quantize('q8_0', 'e');
        const pq = fc.packRhs(q, 'e');
        assert.equal(pq.dtype, 'q8_0');
        assert.equal(pq.sourceDtype, 'q8_0');
        assert.equal(pq.bytes, 5 * 2 * 34);
        close(values(x.dotPacked(pq)), values(x.dot(q, 'e')));
        close(values(x.dotPacked(pq, bias)), values(x.addDot(q, 'e', bias)));
        p.dispose();
        pq.dispose();
        assert.equal(p.isDisposed, true);
        p.dispose();  // idempotent
        assert.equal(String(p), 'PackedRhs (disposed)');
        throwsCode(() => x.dotPacked(p), 'InvalidArgument');
      });
    });

    test('the fused packed products equal their parts', async () => {
      const fc = await engine(variant);
      fc.scope(() => {
        const x = fc.constant(['t', 'e'], [2, 32], wave(64, 0.2));
        const gateUp = fc.constant(['t', 'e'], [2, 64], wave(128, 0.4));
        const gamma = fc.constant(['e'], [32], wave(32, 0.9));
        const w = fc.constant(['o', 'e'], [4, 32], wave(128, 0.5));
        const q = w.quantize('q8_0', 'e');
        const dense = fc.packRhs(w, 'e');
        const quant = fc.packRhs(q, 'e');
        close(values(x.rmsNormMulDotPacked(gamma, dense)), values(x.rmsNormMul('e', gamma).dot(w, 'e')));
        close(values(x.rmsNormMulDotPacked(gamma, quant, 1e-5)), values(x.rmsNormMul('e', gamma, 1e-5).dot(q, 'e')));
        close(values(gateUp.splitSwiGluDotPacked(dense)), values(gateUp.swiglu('e').dot(w, 'e')));
        close(values(gateUp.gegluQuantDotPacked(quant)), values(gateUp.geglu('e').dot(q, 'e')));
        throwsCode(() => gateUp.gegluQuantDotPacked(dense), 'DTypeMismatch');
        dense.dispose();
        quant.dispose();
      });
    });

    test('packed products refuse gradients and bad arguments', async () => {
      const fc = await engine(variant);
      fc.scope(() => {
        const wv = fc.variable(['o', 'e'], [2, 32], wave(64, 0.5));
        throwsCode(() => fc.packRhs(wv, 'e'), 'GradientPackedMatmulUnsupported');
        const dense = fc.packRhs(wv.detach(), 'e');
        const quant = fc.packRhs(wv.detach().quantize('q8_0', 'e'), 'e');
        const xv = fc.variable(['t', 'e'], [1, 32], wave(32, 0.1));
        throwsCode(() => xv.dotPacked(dense), 'GradientPackedMatmulUnsupported');
        throwsCode(() => xv.dotPacked(quant), 'GradientQuantizedMatmulUnsupported');
        throwsCode(() => xv.rmsNormMulDotPacked(fc.ones(['e'], [32]), dense), 'GradientQuantizedMatmulUnsupported');
        const uv = fc.variable(['t', 'e'], [1, 64], wave(64, 0.1));
        throwsCode(() => uv.splitSwiGluDotPacked(quant), 'GradientQuantizedMatmulUnsupported');
        throwsCode(() => uv.gegluQuantDotPacked(quant), 'GradientQuantizedMatmulUnsupported');
        const x = xv.detach();
        throwsCode(() => x.dotPacked(wv), 'InvalidArgument');  // a Tensor is not a PackedRhs
        throwsCode(() => x.dotPacked(undefined), 'InvalidArgument');
        throwsCode(() => x.dotPacked(dense, 3), 'InvalidArgument');
        throwsCode(() => fc.packRhs(wv.detach(), 7), 'InvalidArgument');
        throwsCode(() => fc.packRhs([1, 2], 'e'), 'InvalidArgument');
        throwsCode(() => fc.packRhs(wv.detach(), 'nope'), 'ShapeMismatch');
        throwsCode(() => fc.constant(['t', 'e'], [1, 31], wave(31, 0)).dotPacked(dense), 'ShapeMismatch');
        throwsCode(() => x.rmsNormMulDotPacked(fc.ones(['e'], [32]), dense, 'eps'), 'InvalidArgument');
        dense.dispose();
        quant.dispose();
      });
    });

    test("the layers' and models' pack() compute their forward, as constants, and free everything", async () => {
      const fc = await engine(variant);
      fc.scope(() => {
        const before = fc.memory().liveTensors;
        const lin = new fc.nn.Linear('in', 'out', 5, 3, 1);
        const mlp = new fc.nn.Mlp({ sizes: [5, 7, 3] }, 2);
        const conv = new fc.nn.Conv2d('c', 'c1', 1, 4, 3, 3, { padding: 1 });
        const cnn = new fc.nn.Cnn({ image: 12, conv1: 3, conv2: 4, hidden: 6, classes: 5 }, 4);
        const x = fc.constant(['batch', 'in'], [2, 5], wave(10, 0.3));
        const img = fc.constant(['batch', 'c', 'h', 'w'], [2, 1, 12, 12], wave(288, 0.7));
        for (const [model, input] of [[lin, x], [mlp, x], [conv, img], [cnn, img]]) fc.scope(() => {
          const packed = model.pack();
          const y = packed.forward(input);
          assert.equal(y.requiresGrad, false);
          const want = model.forward(input);
          assert.deepEqual(y.tags, want.tags);
          close(values(y), values(want), 1e-4);
          packed.dispose();
        });
        const packed = lin.pack();
        const narrow = fc.ones(['batch', 'in'], [1, 4]);
        throwsCode(() => packed.forward(narrow), 'ShapeMismatch');
        packed.dispose();
        for (const t of [...[lin, mlp, conv, cnn].flatMap((m) => m.parameters()), x, img, narrow]) t.dispose();
        assert.equal(fc.memory().liveTensors, before);
      });
    });

    test('a packed weight counts in fc.memory() until disposed', async () => {
      const fc = await engine(variant);
      fc.scope(() => {
        const w = fc.constant(['o', 'e'], [64, 100], wave(6400, 0.5));
        const before = fc.memory().liveBytes;
        const p = fc.packRhs(w, 'e');
        assert.ok(fc.memory().liveBytes >= before + p.bytes);
        p.dispose();
        assert.equal(fc.memory().liveBytes, before);
      });
    });
  });
}
