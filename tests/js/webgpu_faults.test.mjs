// The webgpu device's faults (Note [Device limits] in docs/design-notes.md), in Node over Dawn
// (gpu.mjs): device memory exhausted, a budget's or the device's own, is OutOfMemory with nothing
// leaked; a device lost mid-training is DeviceLost, and training resumes on the cpu from the
// weights last read back. Each case makes its own engine (its own GPU, limits or faked driver).
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { init, assert, throwsCode, VARIANTS } from './helpers.mjs';
import { gpuWith, create, globals } from './gpu.mjs';

const threads = (variant) => (variant === 'simd' ? undefined : 2);
const live = (fc) => {
  const { liveBytes, liveBuffers } = fc.memory().devices.webgpu;
  return { liveBytes, liveBuffers };
};
const code = (c) => (e) => e?.code === c;

// A device whose next storage buffer, once armed, fails as WebGPU's createBuffer fails when the
// driver has no memory: it returns an invalid buffer, and a GPUOutOfMemoryError goes to the error
// scope around the call. The invalid buffer is made with a usage WebGPU refuses (MAP_READ with
// STORAGE), its own validation error kept in a scope of the fake's.
const STORAGE = 0x80, MAP_READ = 0x01;
function outOfMemoryOnce(device) {
  let failed = 0;  // the bytes of the buffer that failed, until its scope is popped
  const fake = {
    armed: false,
    createBuffer(descriptor) {
      if (!fake.armed || !(descriptor.usage & STORAGE)) return device.createBuffer(descriptor);
      fake.armed = false;
      failed = descriptor.size;
      device.pushErrorScope('validation');
      const invalid = device.createBuffer({ ...descriptor, usage: STORAGE | MAP_READ });
      device.popErrorScope();
      return invalid;
    },
    popErrorScope() {
      const popped = device.popErrorScope(), bytes = failed;
      if (!bytes) return popped;
      failed = 0;
      return popped.then(() => new globals.GPUOutOfMemoryError(`Out of memory allocating a buffer of ${bytes} bytes`));
    },
  };
  return new Proxy(device, {
    get: (d, k) => (k in fake ? fake[k] : typeof d[k] === 'function' ? d[k].bind(d) : d[k]),
    set: (d, k, v) => (k in fake ? (fake[k] = v, true) : Reflect.set(d, k, v)),
  });
}

for (const variant of VARIANTS) {
  test(`webgpu (${variant}): past deviceLimits.memory an op is OutOfMemory, nothing of it kept; the pool is emptied to make room`, async () => {
    const MiB = 1 << 20;
    const fc = await init({ variant, device: 'webgpu', gpu: create([]), deviceLimits: { memory: MiB }, threads: threads(variant) });
    const { limits } = fc.memory().devices.webgpu;
    assert.equal(limits.memory, MiB);
    assert.ok(limits.maxBufferSize > 0 && limits.maxStorageBufferBindingSize > 0);
    const big = fc.full(['i'], [160_000], 1);  // 640,000 bytes: a buffer of 655,360 (its size class)
    const before = live(fc);
    throwsCode(() => big.mul(big), 'OutOfMemory');  // a second one is past the budget
    throwsCode(() => fc.full(['j'], [100_000], 3), 'OutOfMemory');
    assert.deepEqual(live(fc), before);
    big.dispose();  // its buffer goes to the pool, which is device memory too
    assert.ok(fc.memory().devices.webgpu.pooledBytes >= 640_000);
    const small = fc.full(['j'], [100_000], 3);
    assert.equal(fc.memory().devices.webgpu.pooledBytes, 0, 'the pool was emptied to make room');
    assert.ok((await small.data()).every((v) => v === 3));
    small.dispose();

    // A training step whose forward fits and whose backward does not: OutOfMemory, and only the
    // weights and inputs stay.
    const w = fc.variable(['k', 'n'], [128, 128], new Float32Array(128 * 128).fill(0.01));
    const x = fc.full(['b', 'k'], [512, 128], 0.5);  // 256 KiB, and each activation as much
    const opt = fc.optim.adamw([w], { lr: 1e-3 });
    const held = live(fc);
    let reached = 'forward';
    throwsCode(() => fc.scope(() => {
      opt.zeroGrad();
      const l = x.dot(w, 'k').tanh().sumAll();
      reached = 'backward';
      l.backward();
      opt.step();
    }), 'OutOfMemory');
    assert.equal(reached, 'backward');
    assert.deepEqual(live(fc), held, 'nothing of the step is live');
    assert.equal(w.grad(), null);
    await fc.sync();  // nothing else to report
    [w, x].forEach((t) => t.dispose());
    opt.dispose();
  });

  test(`webgpu (${variant}): the device's own out of memory, reported late, is OutOfMemory at the next sync() or data(), once`, async () => {
    let device;
    const fc = await init({ variant, device: 'webgpu', gpu: gpuWith((d) => (device = outOfMemoryOnce(d))), threads: threads(variant) });
    assert.equal(fc.memory().devices.webgpu.limits.memory, undefined, 'no budget but the device');
    const a = fc.full(['i'], [1000], 2);
    await fc.sync();  // made: the batch of the failed buffer's uses is lost, what it held with them
    device.armed = true;
    const b = a.mul(a);  // its buffer is invalid: the device had no memory for it
    const c = b.add(a);  // uses it: WebGPU's validation errors follow, consequences not reported
    const oom = (e) => e?.code === 'OutOfMemory' && /a buffer of \d+ bytes/.test(e.message) && /not meaningful/.test(e.message);
    await assert.rejects(fc.sync(), oom);
    await fc.sync();  // reported once
    [c, b].forEach((t) => t.dispose());
    assert.deepEqual(Array.from(await a.data()), new Array(1000).fill(2), 'what was made before is intact');
    const d = a.mul(a);  // the pool hands out b's buffer id again (the last in): a buffer is made anew
    assert.deepEqual(Array.from(await d.data()), new Array(1000).fill(4));

    device.armed = true;
    const e = fc.full(['j'], [3000], 1);  // a size the pool has none of
    await assert.rejects(e.data(), oom);
    await fc.sync();
    e.dispose();
    assert.deepEqual(Array.from(await fc.full(['j'], [3000], 1).data()), new Array(3000).fill(1));
    [a, d].forEach((t) => t.dispose());
  });
}

// One variant: the model steps slowly on SwiftShader, and the lost device is not per variant.
test('webgpu (simd): a device lost mid-training is DeviceLost; the adapters last read back resume training on the cpu', async () => {
  const unhandled = [];
  const record = (e) => unhandled.push(e);
  process.on('unhandledRejection', record).on('uncaughtException', record);
  let device;
  const fc = await init({ variant: 'simd', device: 'webgpu', gpu: gpuWith((d) => (device = d)) });
  const read = (name) => readFileSync(new URL(`../fixtures/gpt2/${name}`, import.meta.url));
  const load = () => fc.nn.Gpt2.load(new Uint8Array(read('model.safetensors')), JSON.parse(read('config.json')), { dtype: 'q8_0' });
  const ids = Array.from({ length: 12 }, (_, i) => (i * 7 + 3) % 96);

  fc.defaultDevice = 'cpu';
  const model = load().to('webgpu');
  fc.defaultDevice = 'webgpu';
  model.addLora({ rank: 2, alpha: 4, dropout: 0, targets: ['c_attn', 'c_proj', 'c_fc'], seed: 5 });  // no dropout: losses recomputable
  const tokens = fc.constant(['batch', 't'], [2, 6], ids, 'i32');
  const opt = fc.optim.adamw(model.parameters(), { lr: 5e-2 });
  const step = (midway = () => {}) => fc.scope(() => {
    opt.zeroGrad();
    const l = model.loss(tokens);
    midway();
    l.backward();
    opt.step();
    return l.detach();
  });
  let saved, lossAt3;
  for (let s = 1; s <= 3; ++s) {
    const l = step();
    const value = (await l.data())[0];
    l.dispose();
    if (s === 2) saved = await fc.nn.exportPeftAsync(model);  // the weights last read back
    if (s === 3) lossAt3 = value;
  }
  await assert.rejects(async () => {
    const l = step(() => device.destroy());  // step 4: lost between forward and backward
    try {
      await l.data();
    } finally {
      l.dispose();
    }
  }, code('DeviceLost'));
  await assert.rejects(fc.sync(), code('DeviceLost'));
  assert.equal(fc.defaultDevice, 'cpu');
  await assert.rejects(model.parameters()[0].data(), code('DeviceLost'));
  throwsCode(() => model.loss(tokens), 'DeviceLost');
  opt.dispose();
  model.dispose();

  const resumed = load();  // on the cpu
  fc.nn.loadPeft(resumed, saved.safetensors, saved.config);
  const cpuTokens = fc.constant(['batch', 't'], [2, 6], ids, 'i32');
  const cpuOpt = fc.optim.adamw(resumed.parameters(), { lr: 5e-2 });
  const losses = [];
  for (let s = 0; s < 2; ++s) {
    losses.push(fc.scope(() => {
      cpuOpt.zeroGrad();
      const l = resumed.loss(cpuTokens);
      l.backward();
      cpuOpt.step();
      return l.item();
    }));
  }
  assert.ok(Math.abs(losses[0] - lossAt3) <= 1e-4 * (1 + Math.abs(lossAt3)), `the cpu's loss ${losses[0]}, the device's at step 3 ${lossAt3}`);
  assert.ok(losses[1] < losses[0], 'training goes on on the cpu');
  cpuOpt.dispose();
  resumed.dispose();
  cpuTokens.dispose();

  await new Promise((r) => setTimeout(r, 50));
  process.off('unhandledRejection', record).off('uncaughtException', record);
  assert.deepEqual(unhandled, [], 'nothing thrown out of Dawn after the device was destroyed');
});
