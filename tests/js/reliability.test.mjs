// The engine's promises seen from JS (RELIABILITY.md): one backward per graph reaches into the
// graph, and a few thousand training steps keep memory flat. FUCINA_SOAK_STEPS sets the soak's
// length (the documented long run uses 100000).
import { describe, test } from 'node:test';
import { VARIANTS, engine, throwsCode, values, assert } from './helpers.mjs';

const SOAK_STEPS = Number(process.env.FUCINA_SOAK_STEPS ?? 2000);

for (const variant of VARIANTS) {
  describe(variant, () => {
    test('a second backward through a spent interior tensor is refused, gradients exact', async () => {
      // Regression: x.grad came out 4 * dh (PyTorch: 3 * dh, or an error without retain_graph).
      const fc = await engine(variant);
      const before = fc.memory().liveTensors;
      fc.scope(() => {
        const x = fc.variable(['d'], [2], [0.5, -1]);
        const h = x.tanh();
        h.scale(1).sumAll().backward();
        const dh = values(x.grad());
        const e = throwsCode(() => h.scale(2).sumAll().backward(), 'BackwardAlreadyRun');
        assert.match(e.message, /tanh/);
        assert.deepEqual(values(x.grad()), dh);
        x.tanh().scale(2).sumAll().backward();  // a fresh graph over the same leaf runs
        assert.deepEqual(values(x.grad()), dh.map((g) => Math.fround(g + Math.fround(2 * g))));
      });
      assert.equal(fc.memory().liveTensors, before);
    });

    test(`soak: ${SOAK_STEPS} MLP steps keep live tensors, bytes and allocations flat`, async (t) => {
      const fc = await engine(variant);
      const base = fc.memory().liveTensors;
      const l1 = new fc.nn.Linear('in', 'hidden', 16, 32, 1);
      const l2 = new fc.nn.Linear('hidden', 'out', 32, 4, 2);
      const opt = fc.optim.adam([...l1.parameters(), ...l2.parameters()], { lr: 1e-3 });
      const x = fc.uniform(['batch', 'in'], [8, 16], -1, 1, 3);
      const y = fc.uniform(['batch', 'out'], [8, 4], -1, 1, 4);
      const warmup = Math.max(50, Math.floor(SOAK_STEPS / 10));
      let first, firstLoss, lastLoss;
      for (let step = 0; step < SOAK_STEPS; ++step) {
        const loss = fc.scope(() => {
          opt.zeroGrad();
          const mse = l2.forward(l1.forward(x).tanh()).mseLoss(y);
          mse.backward();
          opt.step();
          return mse.item();
        });
        if (step === 0) firstLoss = loss;
        lastLoss = loss;
        if (step + 1 === warmup) first = fc.memory();
      }
      const last = fc.memory();
      const rss = (process.memoryUsage().rss / 1048576).toFixed(1);
      t.diagnostic(`${SOAK_STEPS} steps: live tensors ${first.liveTensors} -> ${last.liveTensors}, ` +
        `live bytes ${first.liveBytes} -> ${last.liveBytes}, system allocations ` +
        `${first.systemAllocations} -> ${last.systemAllocations}, loss ${firstLoss.toFixed(4)} -> ` +
        `${lastLoss.toFixed(4)}, process RSS at the end ${rss} MiB`);
      assert.equal(last.liveTensors, first.liveTensors);
      assert.equal(last.liveBytes, first.liveBytes);
      assert.equal(last.systemAllocations, first.systemAllocations);
      assert.ok(lastLoss < firstLoss, `loss ${firstLoss} -> ${lastLoss}`);
      opt.dispose();
      for (const t of [...l1.parameters(), ...l2.parameters(), x, y]) t.dispose();
      assert.equal(fc.memory().liveTensors, base);
    });
  });
}
