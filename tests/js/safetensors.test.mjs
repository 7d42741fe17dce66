// safetensors in JS: round trips with axis names and metadata, bytes shared with C++ (the same
// encoder), a model's parameters saved and loaded in place, and malformed input.
import { describe, test } from 'node:test';
import { VARIANTS, engine, values, assert, throwsCode } from './helpers.mjs';

for (const variant of VARIANTS) {
  describe(variant, () => {
    test('safetensors round-trips tensors, axis names and metadata', async () => {
      const fc = await engine(variant);
      fc.scope(() => {
        const w = fc.constant(['out', 'in'], [2, 3], [1, 2, 3, 4, 5, 6]);
        const ids = fc.constant(['batch'], [3], [7, -1, 9], 'i32');
        const bytes = fc.encodeSafetensors({ w, 'w.t': w.permuteTo(['in', 'out']), ids }, { format: 'pt' });
        assert.ok(bytes instanceof Uint8Array);
        const headerLength = Number(new DataView(bytes.buffer).getBigUint64(0, true));
        const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + headerLength)));
        assert.deepEqual(header.w, { dtype: 'F32', shape: [2, 3], data_offsets: [0, 24] });
        assert.equal(header.__metadata__['axes.w.t'], 'in,out');
        const { tensors, metadata } = fc.decodeSafetensors(bytes);
        assert.deepEqual(metadata, { format: 'pt' });
        assert.deepEqual(Object.keys(tensors), ['w', 'w.t', 'ids']);
        assert.deepEqual(tensors['w.t'].tags, ['in', 'out']);
        assert.deepEqual(values(tensors['w.t']), [1, 4, 2, 5, 3, 6]);
        assert.equal(tensors.ids.dtype, 'i32');
        assert.deepEqual(values(tensors.ids), [7, -1, 9]);
        throwsCode(() => fc.decodeSafetensors(bytes.subarray(0, 20)), 'InvalidArgument');
        throwsCode(() => fc.decodeSafetensors([1, 2, 3]), 'InvalidArgument');
      });
    });

    test('a model\'s parameters save and load in place', async () => {
      const fc = await engine(variant);
      const a = new fc.nn.Mlp({ sizes: [6, 5, 3] }, 1), b = new fc.nn.Mlp({ sizes: [6, 5, 3] }, 2);
      fc.scope(() => {
        const x = fc.normal(['batch', 'in'], [4, 6], 0, 1, 3);
        assert.notDeepEqual(values(b.forward(x)), values(a.forward(x)));
        fc.nn.loadParameters(b.parameters(), fc.nn.saveParameters(a.parameters()));
        assert.deepEqual(values(b.forward(x)), values(a.forward(x)));
        const wider = new fc.nn.Mlp({ sizes: [6, 7, 3] }, 1);
        throwsCode(() => fc.nn.loadParameters(wider.parameters(), fc.nn.saveParameters(a.parameters())), 'ShapeMismatch');
      });
    });
  });
}
