// The caching allocator seen from JS: fc.memory()'s allocation counters, fc.trimCache(), and a
// long training loop whose wasm memory stops growing after warm-up.
import { describe, test } from 'node:test';
import { VARIANTS, engine, throwsCode, assert } from './helpers.mjs';

for (const variant of VARIANTS) {
  describe(variant, () => {
    test('memory() counts system allocations, cache hits and cached bytes; trimCache empties the cache', async () => {
      const fc = await engine(variant);
      fc.scope(() => { fc.zeros(['i'], [1000]); });
      const m0 = fc.memory();
      assert.ok(m0.cachedBytes >= 4000);
      fc.scope(() => { fc.zeros(['i'], [1000]); });  // the freed buffer comes back
      const m1 = fc.memory();
      assert.equal(m1.systemAllocations, m0.systemAllocations);
      assert.equal(m1.cacheHits, m0.cacheHits + 1);
      assert.equal(m1.allocations, m0.allocations + 1);
      assert.equal(m1.liveBytes, m0.liveBytes);
      assert.ok(m1.heapBytes > 0);
      fc.trimCache();
      assert.equal(fc.memory().cachedBytes, 0);
      // 8 GiB: more than wasm32 can address; the byte count must not wrap around.
      throwsCode(() => fc.zeros(['i'], [2 ** 31]), 'OutOfMemory');
      assert.equal(fc.memory().liveBytes, m1.liveBytes);
    });

    test('10,000 small training steps keep the wasm memory flat after warm-up', async () => {
      const fc = await engine(variant);
      const x = fc.scope(() => fc.constant(['sample', 'in'], [64, 8],
        Array.from({ length: 64 * 8 }, (_, i) => Math.sin(0.37 * i))));
      const y = fc.constant(['sample'], [64], Array.from({ length: 64 }, (_, s) => s % 3), 'i32');
      const model = new fc.nn.Mlp({ sizes: [8, 16, 3] }, 5);
      const opt = fc.optim.sgd(model.parameters(), { lr: 0.05, momentum: 0.9 });
      const step = (i) => fc.scope(() => {
        opt.zeroGrad();
        const start = (i * 16) % 64;
        const loss = model.forward(x.narrow('sample', start, 16)).crossEntropy(y.narrow('sample', start, 16), 'class');
        loss.backward();
        opt.step();
      });
      for (let i = 0; i < 20; ++i) step(i);
      const warm = fc.memory();
      for (let i = 20; i < 10000; ++i) step(i);
      const end = fc.memory();
      assert.equal(end.systemAllocations, warm.systemAllocations, 'tensor buffers allocated after warm-up');
      assert.equal(end.heapBytes, warm.heapBytes, 'the wasm memory grew after warm-up');
      assert.equal(end.liveBytes, warm.liveBytes);
      assert.equal(end.liveTensors, warm.liveTensors);
      assert.ok(end.cacheHits > warm.cacheHits + 9980 * 10);
      for (const t of [x, y, opt]) t.dispose();
    });
  });
}
