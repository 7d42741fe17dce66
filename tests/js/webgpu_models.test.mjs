// The pretrained models on the webgpu device (gpu.mjs: Dawn over SwiftShader): fc.nn.Gpt2 and
// fc.nn.Llama moved there with model.to('webgpu'), their f16 and q8_0 bases read in place by the
// device's products, fine-tuned with LoRA (checkpointed) to the cpu's losses, generating the
// cpu's tokens with generateAsync (the KV cache on the device); what cannot run there says so.
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { VARIANTS, assert, throwsCode } from './helpers.mjs';
import { gpuEngine } from './gpu.mjs';

const read = (dir, name) => readFileSync(new URL(`../fixtures/${dir}/${name}`, import.meta.url));
const MODELS = {
  gpt2: { load: (fc, o) => fc.nn.Gpt2.load(new Uint8Array(read('gpt2', 'model.safetensors')), JSON.parse(read('gpt2', 'config.json')), o),
    targets: ['c_attn', 'c_proj', 'c_fc'] },
  llama: { load: (fc, o) => fc.nn.Llama.load(new Uint8Array(read('llama', 'model.safetensors')), JSON.parse(read('llama', 'config.json')), o),
    targets: ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'] },
  qwen2: { load: (fc, o) => fc.nn.Llama.load(new Uint8Array(read('qwen2', 'model.safetensors')), JSON.parse(read('qwen2', 'config.json')), o),
    targets: ['q_proj', 'v_proj', 'down_proj'] },
};

// Four LoRA steps of a model on device: the losses read back, and the adapters' last gradients.
async function fineTune(fc, name, device, dtype) {
  const { load, targets } = MODELS[name];
  fc.defaultDevice = 'cpu';
  const model = load(fc, { dtype, checkpointBlocks: true }).to(device);
  fc.defaultDevice = device;
  model.addLora({ rank: 2, alpha: 4, dropout: 0.1, targets, seed: 5 });
  assert.equal(model.device, device);
  assert.ok(model.parameters().every((p) => p.device === device && p.requiresGrad));
  const vocab = model.config.vocab_size;
  const tokens = fc.constant(['batch', 't'], [2, 6], Array.from({ length: 12 }, (_, i) => (i * 7 + 3) % vocab), 'i32');
  const opt = fc.optim.adamw(model.parameters(), { lr: 5e-2 });
  const losses = [];
  let grads = [];
  let uploaded = 0;
  for (let step = 0; step < 4; ++step) {
    if (step === 1 && device === 'webgpu') uploaded = fc.memory().devices.webgpu.uploadedBytes;
    const kept = fc.scope(() => {
      opt.zeroGrad();
      const l = model.loss(tokens);
      l.backward();
      const g = model.parameters().map((p) => p.grad());
      opt.step();
      return [l.detach(), ...g];
    });
    losses.push((await kept[0].data())[0]);
    grads = [];
    for (const g of kept.slice(1)) grads.push(...(await g.data()));
    kept.forEach((t) => t.dispose());
  }
  // A step after the first uploads nothing: the tokens were uploaded once, the rotary tables
  // are kept on the device (Note [Rotary tables kept]).
  if (device === 'webgpu') assert.equal(fc.memory().devices.webgpu.uploadedBytes, uploaded, `${name}: steps 2-4 upload nothing`);
  opt.dispose();
  return { model, losses, grads };
}

for (const variant of VARIANTS) {
  test(`webgpu (${variant}): Gpt2 and Llama fine-tune with LoRA on f16 and q8_0 bases on the device, to the cpu's losses`, async () => {
    const fc = await gpuEngine(variant);
    for (const [name, dtype] of [['gpt2', 'q8_0'], ['llama', 'q8_0'], ['llama', 'f16'], ['qwen2', 'bf16']]) {
      const cpu = await fineTune(fc, name, 'cpu', dtype);
      const gpu = await fineTune(fc, name, 'webgpu', dtype);
      const what = `${name} ${dtype}`;
      gpu.losses.forEach((l, i) => assert.ok(Math.abs(l - cpu.losses[i]) <= 1e-4 * (1 + Math.abs(cpu.losses[i])),
        `${what}: loss ${i} ${l} on the device, ${cpu.losses[i]} on the cpu`));
      assert.ok(cpu.losses[3] < cpu.losses[0], `${what}: the loss falls`);
      const scale = Math.max(...cpu.grads.map(Math.abs));
      gpu.grads.forEach((g, i) => assert.ok(Math.abs(g - cpu.grads[i]) <= 1e-3 * scale, `${what}: gradient ${i} ${g} vs ${cpu.grads[i]}`));
      if (name === 'llama') {  // the adapters trained there leave as PEFT's files
        fc.defaultDevice = 'cpu';  // the files are decoded on the host
        throwsCode(() => fc.nn.exportPeft(gpu.model), 'DeviceReadIsAsync');
        throwsCode(() => gpu.model.save(), 'DeviceReadIsAsync');
        const peft = await fc.nn.exportPeftAsync(gpu.model);
        assert.deepEqual(peft.config, fc.nn.exportPeft(cpu.model).config);
        const back = fc.decodeSafetensors(peft.safetensors).tensors, want = fc.decodeSafetensors(fc.nn.exportPeft(cpu.model).safetensors).tensors;
        assert.deepEqual(Object.keys(back), Object.keys(want));
        for (const [k, t] of Object.entries(back)) {
          const w = want[k].toArray(), g = t.toArray();
          g.forEach((v, i) => assert.ok(Math.abs(v - w[i]) <= 1e-3 * (1 + Math.abs(w[i])), `${what}: ${k}[${i}] ${v} vs ${w[i]}`));
        }
        [...Object.values(back), ...Object.values(want)].forEach((t) => t.dispose());
      }
      cpu.model.dispose();
      gpu.model.dispose();
    }
    fc.defaultDevice = 'webgpu';
  });

  test(`webgpu (${variant}): a model on the device takes tokens there; what it cannot do there says why`, async () => {
    const fc = await gpuEngine(variant);
    fc.defaultDevice = 'cpu';
    const model = MODELS.llama.load(fc, { dtype: 'q8_0' });
    const hostTokens = fc.constant(['batch', 't'], [1, 4], [1, 2, 3, 4], 'i32');
    const want = Array.from(model.logits(hostTokens).toArray());
    model.to('webgpu');
    assert.equal(model.device, 'webgpu');
    assert.equal(model.to('webgpu'), model, 'moving to where it is changes nothing');
    throwsCode(() => model.logits(hostTokens), 'DeviceMismatch');
    throwsCode(() => model.to('cpu'), 'DeviceReadIsAsync');
    throwsCode(() => model.generate([1, 2], { maxTokens: 2 }), 'DeviceReadIsAsync');  // generateAsync there
    throwsCode(() => model.to('tpu'), 'InvalidArgument');
    fc.defaultDevice = 'webgpu';
    const logits = model.logits(fc.constant(['batch', 't'], [1, 4], [1, 2, 3, 4], 'i32'));
    assert.equal(logits.device, 'webgpu');
    const got = Array.from(await logits.data());
    got.forEach((v, i) => assert.ok(Math.abs(v - want[i]) <= 1e-4 * (1 + Math.abs(want[i])), `logit ${i}: ${v} vs ${want[i]}`));
    const bad = model.logits(fc.constant(['batch', 't'], [1, 2], [1, 99999], 'i32'));  // checked on the device
    await assert.rejects(bad.data(), (e) => e.code === 'IndexOutOfRange');
    model.dispose();
    await assert.rejects(model.generateAsync([1]), (e) => e.code === 'InvalidArgument' && /disposed/.test(e.message));
  });

  test(`webgpu (${variant}): generateAsync draws generate's tokens from Gpt2 and Llama on the device, KV cache and past the positions`, async () => {
    const fc = await gpuEngine(variant);
    for (const name of ['gpt2', 'qwen2']) {
      fc.defaultDevice = 'cpu';
      const model = MODELS[name].load(fc, { dtype: 'q8_0' });
      const positions = model.config.n_positions ?? model.config.max_position_embeddings;
      // GPT-2's past its positions (the uncached steps too); the Qwen2's (64 positions) cached only
      const options = { maxTokens: name === 'gpt2' ? positions + 3 : 8, temperature: 0.8, topK: 5, seed: 3 };
      const want = model.generate([1, 2, 3], options);
      assert.deepEqual(await model.generateAsync([1, 2, 3], options), want, `${name}: generateAsync on the cpu`);
      const greedy = model.generate([4], { maxTokens: 6, temperature: 0 });
      model.to('webgpu');
      assert.deepEqual(await model.generateAsync([1, 2, 3], options), want, `${name}: the device's tokens`);
      const before = fc.memory().devices.webgpu.liveBytes;  // the model's rotary tables included
      const seen = [];
      assert.deepEqual(await model.generateAsync([4], { maxTokens: 6, temperature: 0, onToken: (id) => seen.push(id) < 3 }),
        greedy.slice(0, 3));
      await assert.rejects(model.generateAsync([4], { maxTokens: 3, onToken: () => { throw new Error('enough'); } }), /enough/);
      assert.ok(fc.memory().devices.webgpu.liveBytes <= before, `${name}: the caches and logits are released`);
      model.dispose();
    }
    fc.defaultDevice = 'webgpu';
  });
}
