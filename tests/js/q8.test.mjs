// q8_0 in JS: quantize and its error bound, to('q8_0') refused, memory by dtype, safetensors round
// trip, and attention over 16-bit and q8_0 KV constants.
import { describe, test } from 'node:test';
import { VARIANTS, engine, values, assert, throwsCode } from './helpers.mjs';

for (const variant of VARIANTS) {
  describe(variant, () => {
    test('quantize to q8_0 and back stays within half a step of each block', async () => {
      const fc = await engine(variant);
      fc.scope(() => {
        const x = fc.normal(['r', 'c'], [3, 96], 0, 2, 1);
        const q = x.quantize('q8_0', 'c');
        assert.equal(q.dtype, 'q8_0');
        assert.deepEqual(q.tags, ['r', 'c']);
        assert.deepEqual(q.shape, [3, 96]);
        assert.equal(q.requiresGrad, false);
        const want = values(x), got = values(q.to('f32'));
        assert.deepEqual(values(q), got);
        for (let b = 0; b < want.length / 32; ++b) {
          const block = want.slice(32 * b, 32 * b + 32);
          const d = Math.max(...block.map(Math.abs)) / 127;
          for (let i = 0; i < 32; ++i) assert.ok(Math.abs(block[i] - got[32 * b + i]) <= d / 2 * 1.001 + 1e-30);
        }
        throwsCode(() => x.to('q8_0'), 'DTypeMismatch');
        throwsCode(() => x.quantize('f16', 'c'), 'InvalidArgument');
        throwsCode(() => x.quantize('q8_0', 'r'), 'InvalidArgument');
        throwsCode(() => x.quantize('q8_0', 'zz'), 'ShapeMismatch');
        throwsCode(() => x.quantize('q4', 'c'), 'InvalidArgument');
        throwsCode(() => q.exp(), 'DTypeMismatch');
        throwsCode(() => fc.zeros(['c'], [32], 'q8_0'), 'DTypeMismatch');
      });
    });

    test('memory().bytesByDtype counts q8_0 at 34 bytes per 32 values', async () => {
      const fc = await engine(variant);
      fc.scope(() => {
        const before = fc.memory().bytesByDtype;
        assert.deepEqual(Object.keys(before).sort(), ['bf16', 'f16', 'f32', 'f64', 'i32', 'i64', 'q8_0', 'u8']);
        const w = fc.uniform(['out', 'in'], [64, 256], -1, 1, 1);
        const q = w.quantize('q8_0', 'in');
        const m = fc.memory();
        assert.equal(m.bytesByDtype.q8_0 - before.q8_0, 64 * 256 / 32 * 34);
        assert.equal(m.bytesByDtype.f32 - before.f32, 65536);
        assert.equal(Object.values(m.bytesByDtype).reduce((a, b) => a + b, 0), m.liveBytes);
        q.dispose();
        assert.equal(fc.memory().bytesByDtype.q8_0, before.q8_0);
      });
    });

    test('safetensors round-trips q8_0 tensors', async () => {
      const fc = await engine(variant);
      fc.scope(() => {
        const q = fc.normal(['in', 'out'], [64, 3], 0, 1, 2).quantize('q8_0', 'in');
        const bytes = fc.encodeSafetensors({ q });
        const headerLength = Number(new DataView(bytes.buffer).getBigUint64(0, true));
        const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + headerLength)));
        assert.deepEqual(header.q, { dtype: 'U8', shape: [6, 34], data_offsets: [0, 204] });
        assert.deepEqual(JSON.parse(header.__metadata__['q8_0.q']), { tags: ['in', 'out'], shape: [64, 3], block_axis: 'in' });
        const { tensors, metadata } = fc.decodeSafetensors(bytes);
        assert.deepEqual(metadata, {});
        assert.equal(tensors.q.dtype, 'q8_0');
        assert.deepEqual(tensors.q.tags, ['in', 'out']);
        assert.deepEqual(values(tensors.q), values(q));
      });
    });

    test('groupedAttention over f16 and q8_0 KV constants equals f32 on the same values', async () => {
      const fc = await engine(variant);
      fc.scope(() => {
        const qv = values(fc.normal(['head', 't', 'd'], [2, 3, 32], 0, 1, 3));
        const k = fc.normal(['head', 't', 'd'], [1, 4, 32], 0, 1, 4), v = fc.normal(['head', 't', 'd'], [1, 4, 32], 0, 1, 5);
        for (const [kc, vc] of [[k.to('f16'), v.to('f16')], [k.quantize('q8_0', 'd'), v.quantize('q8_0', 'd')]]) {
          const q1 = fc.variable(['head', 't', 'd'], [2, 3, 32], qv), q2 = fc.variable(['head', 't', 'd'], [2, 3, 32], qv);
          const got = fc.groupedAttention(q1, kc, vc);
          const want = fc.groupedAttention(q2, kc.to('f32'), vc.to('f32'));
          assert.deepEqual(values(got), values(want));
          got.sumAll().backward();
          want.sumAll().backward();
          assert.deepEqual(values(q1.grad()), values(q2.grad()));
        }
        const kvar = fc.variable(['head', 't', 'd'], [1, 4, 32], values(k)).to('f16');
        throwsCode(() => fc.groupedAttention(fc.variable(['head', 't', 'd'], [2, 3, 32], qv), kvar, v), 'UnsupportedGradient');
      });
    });
  });
}
