// Tensors larger than one binding on the webgpu device (Note [Bound in pieces]): engines whose
// device binds at most 16 or 64 KiB (init's deviceLimits: as a GPU of 128 MiB bindings meets
// GPT-2's 154 MB embedding) run products, gathers, rows and elementwise kernels in pieces, to the
// cpu's values; a kernel with no pieces says so. Row kernels need 64 KiB here: their pieces start
// at rows where every operand's window is aligned (64 rows, for a per-row f32).
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { init, assert, throwsCode, VARIANTS } from './helpers.mjs';
import { values } from './seeded.mjs';
import { create } from './gpu.mjs';

const engines = new Map();
async function smallDevice(variant, binding = 16384) {
  const key = `${variant}/${binding}`;
  if (!engines.has(key)) {
    engines.set(key, await init({ variant, device: 'webgpu', gpu: create([]), deviceLimits: { maxStorageBufferBindingSize: binding },
      threads: variant === 'simd' ? undefined : 2 }));
  }
  return engines.get(key);
}

// build(fc) on the cpu and on the device: { name: Tensor } compared within tol; the device's
// kernels must have bound windows.
async function compareOnBoth(fc, build, tol = 2e-5) {
  const out = {};
  const windowed = fc.memory().devices.webgpu.windowedDispatches;
  for (const device of ['cpu', 'webgpu']) {
    fc.defaultDevice = device;
    out[device] = {};
    for (const [k, t] of Object.entries(build(fc))) out[device][k] = Array.from(await t.data());
  }
  fc.defaultDevice = 'webgpu';
  assert.ok(fc.memory().devices.webgpu.windowedDispatches > windowed, 'pieces were bound');
  for (const [k, want] of Object.entries(out.cpu)) {
    const got = out.webgpu[k];
    assert.equal(got.length, want.length, `${k}: length`);
    for (let i = 0; i < want.length; ++i)
      assert.ok(Math.abs(got[i] - want[i]) <= tol * (1 + Math.abs(want[i])), `${k}[${i}]: ${got[i]} vs ${want[i]} (cpu)`);
  }
}

const read = (name) => readFileSync(new URL(`../fixtures/gpt2/${name}`, import.meta.url));

for (const variant of VARIANTS) {
  test(`webgpu pieces (${variant}): products over one binding run in blocks, forward and VJP, as the cpu`, async () => {
    const fc = await smallDevice(variant);
    assert.equal(fc.memory().devices.webgpu !== undefined, true);
    await compareOnBoth(fc, (fc) => {
      const dev = fc.defaultDevice;
      const a = fc.variable(['m', 'k'], [200, 48], values(200 * 48, 1));        // 38 KB
      const b = fc.variable(['k', 'n'], [48, 130], values(48 * 130, 2));        // 25 KB; C 104 KB
      const bt = fc.variable(['n', 'k'], [130, 48], values(130 * 48, 3));
      const x = fc.variable(['z', 'm', 'k'], [3, 70, 40], values(3 * 70 * 40, 4));
      const y = fc.variable(['z', 'k', 'n'], [3, 40, 90], values(3 * 40 * 90, 5));
      fc.defaultDevice = 'cpu';  // a q8_0 weight is made on the host and moved, as a model's
      const q = fc.constant(['o', 'k'], [256, 64], values(256 * 64, 6)).quantize('q8_0', 'k').to(dev);  // 17 KB
      fc.defaultDevice = dev;
      const h = fc.variable(['r', 'k'], [90, 64], values(90 * 64, 7));
      const c = fc.variable(['m', 'j'], [200, 30], values(200 * 30, 8));
      const r = {
        ab: a.dot(b, 'k'),
        abt: a.dot(bt.permuteTo(['k', 'n']), 'k'),      // a transposed operand
        xy: x.dot(y, 'k'),                               // batched
        hq: h.dot(q, 'k'),                               // q8_0 read in place
        deep: a.dot(c, 'm'),                             // over m: a read across its rows
      };
      r.ab.mul(r.ab).sumAll().add(r.abt.sumAll()).add(r.deep.mul(r.deep).sumAll()).add(r.xy.mul(r.xy).sumAll()).add(r.hq.mul(r.hq).sumAll()).backward();
      return { ...r, ga: a.grad(), gc: c.grad(), gb: b.grad(), gbt: bt.grad(), gx: x.grad(), gy: y.grad(), gh: h.grad() };
    }, 1e-4);
  });

  test(`webgpu pieces (${variant}): gathers and elementwise kernels over one binding, as the cpu`, async () => {
    const fc = await smallDevice(variant);
    await compareOnBoth(fc, (fc) => {
      const dev = fc.defaultDevice;
      const table = fc.variable(['v', 'd'], [300, 32], values(300 * 32, 11));  // 38 KB
      fc.defaultDevice = 'cpu';
      const host = fc.constant(['v', 'd'], [600, 64], values(600 * 64, 12));
      const typed = { f16: host.to('f16').to(dev), bf16: host.to('bf16').to(dev), q8: host.quantize('q8_0', 'd').to(dev) };
      fc.defaultDevice = dev;
      const idx = fc.constant(['t'], [9], [299, 0, 150, 7, 299, 64, 128, 255, 1], 'i64');
      const idx2 = fc.constant(['t'], [7], [599, 0, 300, 128, 129, 450, 599], 'i64');
      const wide = fc.variable(['r', 'c'], [300, 40], values(300 * 40, 14));     // 48 KB
      const bias = fc.variable(['c'], [40], values(40, 15));
      const r = {
        rows: table.indexSelect('v', idx),
        f16: typed.f16.indexSelect('v', idx2).to('f32'),
        bf16: typed.bf16.indexSelect('v', idx2).to('f32'),
        q8: typed.q8.indexSelect('v', idx2).to('f32'),
        add: wide.add(bias),
        gelu: wide.permuteTo(['c', 'r']).gelu(),      // a strided operand
        half: wide.to('f16').to('f32'),               // conversions both ways
        filled: fc.full(['i'], [9000], 0.25),
        rowSums: wide.sum('c'),                       // a sum per kept row
        colSums: wide.sum('r'),                       // long lines, summed in halves
        dropped: wide.dropout(0.3, 9),                // the draw of each element, whatever its piece
      };
      r.rows.mul(r.rows).sumAll().add(r.add.mul(r.gelu.permuteTo(['r', 'c'])).sumAll()).backward();
      // An optimizer's step and the gradient's norm over a 48 KB parameter.
      const p = fc.variable(['i'], [12000], values(12000, 18));
      const opt = fc.optim.adam([p], { lr: 0.1 });
      p.mul(p).sumAll().backward();
      const norm = fc.optim.clipGradNormTensor([p], 1.0);
      opt.step();
      opt.dispose();
      return { ...r, gtable: table.grad(), gwide: wide.grad(), gbias: bias.grad(), norm, p };
    }, 1e-4);
  });

  test(`webgpu pieces (${variant}): quantizing, ternary weights and packed products over one binding, as the cpu`, async () => {
    const fc = await smallDevice(variant, 65536);  // the quantizer's pieces are 64 pairs of blocks: 16 KiB read
    await compareOnBoth(fc, (fc) => {
      const w = fc.constant(['o', 'k'], [301, 64], values(301 * 64, 21).map((v) => v * 50));  // 77 KB, 602 blocks
      const q = w.quantize('q8_0', 'k');
      const x = fc.constant(['t', 'k'], [3, 64], values(192, 22));
      return {
        q: q.to('f32'),                                         // the cpu's bytes, in pieces of block pairs
        odd: w.narrow('o', 0, 299).permuteTo(['k', 'o']).quantize('q8_0', 'k').to('f32'),  // strided, 598 blocks
        ternary: x.dotTernarySte(w, 'k'),
        packed: x.dotPacked(fc.packRhs(w, 'k')),
        packedQ8: x.dotPacked(fc.packRhs(q, 'k')),
      };
    }, 1e-4);
  });

  test(`webgpu pieces (${variant}): softmax rows, losses and normalizations over one binding, as the cpu`, async () => {
    const fc = await smallDevice(variant, 65536);
    await compareOnBoth(fc, (fc) => {
      const logits = fc.variable(['n', 'c'], [200, 160], values(200 * 160, 13));  // 128 KB
      const labels = fc.constant(['n'], [200], Array.from({ length: 200 }, (_, i) => (i * 37) % 160), 'i64');
      const w = fc.variable(['c'], [160], values(160, 16)), b = fc.variable(['c'], [160], values(160, 17));
      const r = {
        ce: logits.crossEntropy(labels, 'c'),
        smooth: logits.crossEntropy(labels, 'c', { labelSmoothing: 0.1, reduction: 'sum' }),
        lsm: logits.logSoftmax('c'),
        sm: logits.softmax('c'),
        ln: logits.layerNorm('c', { weight: w, bias: b }),
        rms: logits.rmsNormMul('c', w),
        ext: logits.crossEntropyExt(labels, 'c', { labelSmoothing: 0.1, zLoss: 1e-3, weight: w.detach().abs() }),
      };
      r.ce.add(r.smooth).add(r.lsm.mul(r.sm).sumAll()).add(r.ln.mul(r.rms).sumAll()).add(r.ext).backward();
      return { ...r, glogits: logits.grad(), gw: w.grad(), gb: b.grad() };
    }, 1e-4);
  });

  test(`webgpu pieces (${variant}): the chunked heads' rows over one binding, as the cpu`, async () => {
    const fc = await smallDevice(variant, 65536);
    await compareOnBoth(fc, (fc) => {
      const x = fc.variable(['n', 'd'], [200, 8], values(200 * 8, 18));
      const w = fc.variable(['c', 'd'], [160, 8], values(160 * 8, 19));  // logits [200, 160]: 128 KB
      const teacher = fc.constant(['n', 'c'], [200, 160], values(200 * 160, 20));
      const labels = fc.constant(['n'], [200], Array.from({ length: 200 }, (_, i) => (i % 9 ? (i * 37) % 160 : -100)), 'i64');
      const r = {
        ce: x.linearCrossEntropyExt(w, labels, 'd', 'c', { chunkRows: 200, labelSmoothing: 0.1 }),
        kd: x.linearDistillExt(w, teacher, 'd', 'c', { temperature: 2, alpha: 0.4, labels, chunkRows: 200 }),
      };
      r.ce.add(r.kd).backward();
      return { ...r, gx: x.grad(), gw: w.grad() };
    }, 1e-4);
  });

  test(`webgpu pieces (${variant}): GPT-2 fine-tunes with its activations bound in pieces, to the cpu's losses`, async () => {
    const fc = await smallDevice(variant, 65536);
    const losses = {};
    for (const device of ['cpu', 'webgpu']) {
      fc.defaultDevice = 'cpu';
      const model = fc.nn.Gpt2.load(new Uint8Array(read('model.safetensors')), JSON.parse(read('config.json')), { checkpointBlocks: true }).to(device);
      fc.defaultDevice = device;
      model.addLora({ rank: 2, alpha: 4, dropout: 0.1, targets: ['c_attn', 'c_proj', 'c_fc'], seed: 5 });
      const vocab = model.config.vocab_size;
      // 8 x 24 tokens: the logits (74 KB), the attention's probabilities (74 KB) and the MLP's
      // activations (197 KB) are each over the 64 KiB binding.
      const tokens = fc.constant(['batch', 't'], [8, 24], Array.from({ length: 192 }, (_, i) => (i * 7 + 3) % vocab), 'i32');
      const opt = fc.optim.adamw(model.parameters(), { lr: 5e-2 });
      losses[device] = [];
      const windowed = fc.memory().devices.webgpu.windowedDispatches;
      for (let step = 0; step < 2; ++step) {
        const l = fc.scope(() => {
          opt.zeroGrad();
          const loss = model.loss(tokens);
          loss.backward();
          opt.step();
          return loss.detach();
        });
        losses[device].push((await l.data())[0]);
        l.dispose();
      }
      const pieces = fc.memory().devices.webgpu.windowedDispatches - windowed;
      assert.ok(device === 'cpu' ? pieces === 0 : pieces > 100, `${pieces} dispatches bound windows on ${device}`);
      opt.dispose();
      model.dispose();
    }
    losses.webgpu.forEach((l, i) => assert.ok(Math.abs(l - losses.cpu[i]) <= 1e-4 * (1 + Math.abs(losses.cpu[i])),
      `loss ${i}: ${l} on the device, ${losses.cpu[i]} on the cpu`));
  });

  test(`webgpu pieces (${variant}): a kernel with no pieces over one binding is UnsupportedOnDevice, and leaks nothing`, async () => {
    const fc = await smallDevice(variant);
    const x = fc.constant(['r', 'c'], [64, 100], values(6400, 21));  // 25.6 KB
    const before = fc.memory().devices.webgpu;
    const e = throwsCode(() => x.sort('c'), 'UnsupportedOnDevice');
    assert.match(e.message, /maxStorageBufferBindingSize/);
    const after = fc.memory().devices.webgpu;
    assert.equal(after.liveBytes, before.liveBytes);
    assert.equal(after.liveBuffers, before.liveBuffers);
    assert.deepEqual(fc.memory().devices.webgpu.liveBytes, before.liveBytes);
    x.dispose();
  });
}
