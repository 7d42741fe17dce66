// The Fine-tune demo's engine half (demos/web/finetune/finetune.mjs) in Node, on the shipped base
// (demos/web/finetune/base/) and on the tiny Llama-family fixtures (tests/fixtures/llama, qwen2)
// with the hand-made tokenizer.json of tests/fixtures/llama: the tokenizers, the sizes a config
// implies, a few LoRA steps per dtype (the loss falls; the memory readout is what the dtype
// implies), sampling, and the downloaded PEFT files loading back onto a fresh base; the Llama
// fixture on the webgpu device (gpu.mjs) to the cpu's numbers. Also a quick run of train_base.mjs
// into a temporary folder.
//
// tests/fixtures/llama/tokenizer.json: a BPE of 72 tokens (ids below both fixtures' vocab_size:
// 80 and 96) for lowercased English: <unk>, <s>, </s>; a-z, 0-9, punctuation, a line break and
// SentencePiece's '▁' (a space); and 20 merges, the commonest pairs of demos/web/finetune/log.txt
// ('▁t', 'he', '▁the', ...). Hugging Face's layout: a Lowercase normalizer, a Metaspace
// pre-tokenizer and decoder, a TemplateProcessing post-processor that puts <s> first.
import { test } from 'node:test';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { assert, engine } from './helpers.mjs';
import { createTokenizer, createFineTuner, expectedFrozenBytes, adapterElements, baseElements, budgetFor, showBytes,
  randomWindows, makeRandom, parameterCount, familyOf, TRAINING, SAMPLING } from '../../demos/web/finetune/finetune.mjs';
import { gpuEngine } from './gpu.mjs';

const DIR = fileURLToPath(new URL('../../demos/web/finetune/', import.meta.url));
const FIXTURES = fileURLToPath(new URL('../fixtures/', import.meta.url));
const modelBytes = new Uint8Array(readFileSync(join(DIR, 'base/model.safetensors')));
const config = JSON.parse(readFileSync(join(DIR, 'base/config.json'), 'utf8'));
const text = readFileSync(join(DIR, 'log.txt'), 'utf8');
const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
const json = (path) => JSON.parse(readFileSync(path, 'utf8'));
// The rotary tables a Llama-family model keeps once it has run `span` positions (Note [Rotary
// tables kept]): cos and sin, f32, head_dim / 2 wide, rows to the next power of two (64 at least,
// the positions at most).
const rotaryBytes = (cfg, span) => {
  const headDim = cfg.head_dim ?? cfg.hidden_size / cfg.num_attention_heads;
  const rows = Math.min(cfg.max_position_embeddings, Math.max(64, 2 ** Math.ceil(Math.log2(span))));
  return 2 * 4 * (headDim / 2) * rows;
};
const tokenizerFiles = { tokenizerJson: json(join(FIXTURES, 'llama/tokenizer.json')),
  tokenizerConfig: json(join(FIXTURES, 'llama/tokenizer_config.json')) };

test('the shipped base: a byte-level GPT-2 within 5 MB whose file matches its config', () => {
  assert.equal(config.vocab_size, 256);
  assert.ok(modelBytes.length <= 5e6, `model.safetensors is ${modelBytes.length} bytes`);
  const { matrices, rest } = baseElements(config);
  const n = Number(new DataView(modelBytes.buffer, modelBytes.byteOffset).getBigUint64(0, true));
  assert.equal(modelBytes.length, 8 + n + 4 * (matrices + rest), 'an F32 file of exactly the parameters the config implies');
});

test('GPT-2 tokenizers: bytes for 256, GPT-2 BPE (js-tiktoken) for 50257, a clear error otherwise', async () => {
  const gpt2 = (vocab) => createTokenizer({ model_type: 'gpt2', vocab_size: vocab });
  const bytes = await gpt2(256);
  assert.deepEqual(Array.from(bytes.encode('Day 1. é')), [68, 97, 121, 32, 49, 46, 32, 0xc3, 0xa9]);
  assert.equal(bytes.decode(bytes.encode('Day 1. é\n')), 'Day 1. é\n');
  assert.equal(bytes.decode([72, 1, 0xff, 105]), 'H··i');  // a control byte and invalid UTF-8 show as '·'
  const bpe = await gpt2(50257);
  const ids = bpe.encode('Day 21. Wind SW, light.<|endoftext|>');
  assert.ok(ids instanceof Int32Array && ids.length < 15 && ids.at(-1) === 50256, `${ids}`);
  assert.equal(bpe.decode(ids), 'Day 21. Wind SW, light.<|endoftext|>');
  assert.equal(bpe.continuation(bpe.encode('Day 21.'), bpe.encode(' Wind SW')), ' Wind SW');
  await assert.rejects(gpt2(96), /no tokenizer for a GPT-2 of vocab_size 96/);
  assert.equal(showBytes([0xe2, 0x82, 0xac]), '€');
});

test("a Llama-family model's tokenizer: its tokenizer.json through @huggingface/tokenizers", async () => {
  const llama = json(join(FIXTURES, 'llama/config.json'));
  assert.equal(familyOf(llama), 'llama');
  assert.equal(familyOf({ model_type: 'mistral' }), 'llama', 'fc.nn.Llama says which model_types it reads');
  const tok = await createTokenizer(llama, tokenizerFiles);
  assert.equal(tok.kind, 'huggingface');
  const ids = tok.encode(text);
  assert.ok(ids instanceof Int32Array && ids.length < 0.8 * text.length, `${ids.length} tokens for ${text.length} characters`);
  assert.equal(ids[0], 1, '<s> first');
  assert.ok(ids.every((id) => id >= 0 && id < llama.vocab_size));
  assert.equal(tok.decode(ids), `<s> ${text.toLowerCase()}`);  // Metaspace: the space before the first word shows after <s>
  assert.equal(tok.start, 1);
  // A continuation keeps the space its first token's '▁' stands for (decoded alone, it would lose it).
  const prompt = tok.encode('Day 21.');
  assert.equal(tok.continuation(prompt, tok.encode(' the wind').slice(1)), ' the wind');
  // The same without tokenizer_config.json.
  const alone = await createTokenizer(llama, { tokenizerJson: tokenizerFiles.tokenizerJson });
  assert.deepEqual(alone.encode('Day 1.'), tok.encode('Day 1.'));
  await assert.rejects(createTokenizer(llama), /a Llama-family model needs its tokenizer.json/);
  const small = await createTokenizer({ ...llama, vocab_size: 40 }, tokenizerFiles);
  assert.throws(() => small.encode('wind'), /tokenizer.json gives token id \d+, beyond the model's vocab_size 40/);
});

test('sizes and budgets a config implies', () => {
  const gpt2 = { model_type: 'gpt2', vocab_size: 50257, n_positions: 1024, n_embd: 768, n_layer: 12, n_head: 12, n_inner: null };
  const { matrices, rest } = baseElements(gpt2);
  assert.equal(matrices + rest, 124_439_808);  // GPT-2 small
  assert.deepEqual(expectedFrozenBytes(gpt2, 'q8_0').byDtype, { f32: 4 * rest, q8_0: (matrices / 32) * 34 });
  assert.equal(adapterElements(gpt2, 8, 'attention'), 12 * 8 * (768 + 3 * 768));  // peft's 294,912 for r=8 on c_attn
  assert.deepEqual(budgetFor(gpt2).training, { batch: 2, context: 32 });
  assert.deepEqual(budgetFor(config), { training: {}, sampling: {} });
  // Llama-family sizes, checked against published parameter counts: SmolLM2-135M (a tied head,
  // grouped-query attention) and Qwen2.5-0.5B (q/k/v biases).
  const smol = { model_type: 'llama', vocab_size: 49152, hidden_size: 576, num_hidden_layers: 30, num_attention_heads: 9,
    num_key_value_heads: 3, intermediate_size: 1536, max_position_embeddings: 8192, tie_word_embeddings: true };
  assert.equal(parameterCount(smol), 134_515_008);
  assert.equal(adapterElements(smol, 8, 'attention'), 30 * 8 * ((576 + 576) * 2 + (576 + 192) * 2));
  assert.deepEqual(budgetFor(smol).training, { batch: 2, context: 32 });
  const qwen = { model_type: 'qwen2', vocab_size: 151936, hidden_size: 896, num_hidden_layers: 24, num_attention_heads: 14,
    num_key_value_heads: 2, intermediate_size: 4864, max_position_embeddings: 32768, tie_word_embeddings: true };
  assert.equal(parameterCount(qwen), 494_032_768);
  const windows = randomWindows(Int32Array.from({ length: 10 }, (_, i) => i), 3, 4, makeRandom(1));
  for (let b = 0; b < 3; ++b) for (let i = 1; i < 4; ++i) assert.equal(windows[4 * b + i], windows[4 * b] + i);
});

for (const [dtype, targets] of [['f32', 'attention'], ['f16', 'all'], ['q8_0', 'all']]) {
  test(`LoRA (${targets}) on the shipped base in ${dtype}: the loss falls, and the memory is what ${dtype} implies`, async () => {
    const fc = await engine('threaded-simd');
    const tokenizer = await createTokenizer(config);
    const before = fc.memory().liveTensors;
    const rank = 4;
    const tuner = await createFineTuner(fc, { weights: modelBytes, config, tokens: tokenizer.encode(text), dtype, rank, targets });
    try {
      const expected = expectedFrozenBytes(config, dtype);
      assert.deepEqual(tuner.frozen, { bytes: expected.total, byDtype: expected.byDtype });
      assert.equal(tuner.adapterCount, adapterElements(config, rank, targets));
      assert.equal(tuner.memory().state, null);
      assert.equal(tuner.span, TRAINING.context + 1);
      const promptIds = tokenizer.encode('Day 21. ');
      const streamed = [];
      const first = await tuner.sample(promptIds, { maxTokens: 24, onToken: (id) => { streamed.push(id); } });
      assert.equal(first.length, 24);
      assert.deepEqual(first, streamed);
      assert.deepEqual(first, tuner.model.generate(promptIds, { ...SAMPLING, maxTokens: 24 }), "generateAsync draws generate's tokens");
      const losses = [];
      for (let i = 0; i < 25; ++i) losses.push((await tuner.step()).loss);
      assert.ok(losses.every(Number.isFinite), `${losses}`);
      assert.ok(mean(losses.slice(-5)) < 0.9 * mean(losses.slice(0, 5)), `loss did not fall: ${losses.map((l) => l.toFixed(3))}`);
      const m = tuner.memory();
      // The adapters, their gradients and AdamW's m and v: four f32 values per adapter parameter.
      assert.equal(m.state, 16 * tuner.adapterCount);
      assert.ok(m.activations > 0 && m.peak >= m.frozen.bytes + m.state + m.activations, JSON.stringify(m));
      const after = await tuner.sample(promptIds, { maxTokens: 24 });
      assert.notDeepEqual(after, first, 'the same seed gave the same tokens after training');

      await assertPeftReloads(fc, tuner, fc.nn.Gpt2.load(modelBytes, config, { dtype }), tokenizer.encode('Day 3. Wind W, '));
    } finally {
      tuner.dispose();
    }
    assert.equal(fc.memory().liveTensors, before, 'dispose frees everything the fine-tuner made');
  });
}

/** The adapters as the page downloads them (PEFT's two files), loaded onto `fresh` (the same base
 * on the cpu, without adapters; disposed here) and moved to the tuner's device: the same loss on
 * probe (token ids). */
async function assertPeftReloads(fc, tuner, fresh, probe) {
  try {
    const { safetensors, config: adapterConfig } = await tuner.exportPeft();
    assert.ok(safetensors instanceof Uint8Array);
    assert.equal(adapterConfig.peft_type, 'LORA');
    assert.equal(adapterConfig.r, tuner.rank);
    const was = fc.defaultDevice;
    let losses;
    try {
      fc.defaultDevice = 'cpu';
      fc.nn.loadPeft(fresh, safetensors, JSON.parse(JSON.stringify(adapterConfig)));  // as adapter_config.json reads back
      fresh.to(tuner.device);
      fc.defaultDevice = tuner.device;  // the probe goes where the models are
      losses = fc.scope(() => fc.noGrad(() => {
        const tokens = fc.constant(['batch', 't'], [1, probe.length], probe, 'i32');
        return [tuner.model.loss(tokens), fresh.loss(tokens)];
      }));
    } finally {
      fc.defaultDevice = was;
    }
    const [[a], [b]] = await Promise.all(losses.map((l) => l.data()));
    losses.forEach((l) => l.dispose());
    assert.equal(b, a);
  } finally {
    fresh.dispose();
  }
}

// The Llama family as the page loads it: the fixture's file as a Blob (the page's File) through
// fc.nn.Llama.loadAsync, or as bytes through fc.nn.Llama.load.
for (const [fixture, dtype, targets, asBlob] of [['llama', 'f32', 'all', true], ['qwen2', 'q8_0', 'attention', false]]) {
  test(`LoRA (${targets}) on the ${fixture} fixture in ${dtype}, loaded from ${asBlob ? 'a Blob' : 'bytes'}: the loss falls, ` +
    'the memory is what the config implies, the PEFT files reload', async () => {
    const fc = await engine('threaded-simd');
    const cfg = json(join(FIXTURES, fixture, 'config.json'));
    const file = readFileSync(join(FIXTURES, fixture, 'model.safetensors'));
    const tokenizer = await createTokenizer(cfg, tokenizerFiles);
    const before = fc.memory().liveTensors;
    const rank = 4;
    const weights = asBlob ? new Blob([file]) : new Uint8Array(file);
    const tuner = await createFineTuner(fc, { weights, config: cfg, tokens: tokenizer.encode(text), dtype, rank, targets });
    try {
      const expected = expectedFrozenBytes(cfg, dtype);
      assert.deepEqual(tuner.frozen, { bytes: expected.total, byDtype: expected.byDtype });
      assert.equal(tuner.adapterCount, adapterElements(cfg, rank, targets));
      assert.equal(tuner.span, cfg.max_position_embeddings, 'a window as long as the model reads');
      const losses = [];
      for (let i = 0; i < 20; ++i) losses.push((await tuner.step()).loss);
      assert.ok(losses.every(Number.isFinite), `${losses}`);
      assert.ok(mean(losses.slice(-5)) < 0.95 * mean(losses.slice(0, 5)), `loss did not fall: ${losses.map((l) => l.toFixed(3))}`);
      assert.equal(tuner.memory().state, 16 * tuner.adapterCount + rotaryBytes(cfg, tuner.span));
      const prompt = tokenizer.encode('Day 21. ');
      const sample = await tuner.sample(prompt, { maxTokens: 12 });
      assert.equal(sample.length, 12);
      assert.equal(typeof tokenizer.continuation(prompt, sample), 'string');
      await assertPeftReloads(fc, tuner, fc.nn.Llama.load(new Uint8Array(file), cfg, { dtype }), tokenizer.encode('Day 3. Wind W, '));
    } finally {
      tuner.dispose();
    }
    assert.equal(fc.memory().liveTensors, before, 'dispose frees everything the fine-tuner made');
  });
}

test('on the webgpu device (Dawn over SwiftShader): the llama fixture moves there and trains to the cpu\'s losses and ' +
  "samples, its PEFT files reload, and the memory panel is the device's", async () => {
  const fc = await gpuEngine('simd');
  const cfg = json(join(FIXTURES, 'llama/config.json'));
  const file = new Uint8Array(readFileSync(join(FIXTURES, 'llama/model.safetensors')));
  const tokenizer = await createTokenizer(cfg, tokenizerFiles);
  // The smallest base, small batches, a few steps: SwiftShader runs the kernels on the CPU.
  const options = { weights: file, config: cfg, tokens: tokenizer.encode(text), dtype: 'q8_0', rank: 4, targets: 'all', batch: 2,
    context: 16 };
  const prompt = tokenizer.encode('Day 21. ');
  const deviceBefore = fc.memory().devices.webgpu.liveBytes;
  const run = async (device) => {
    fc.defaultDevice = device;
    const tuner = await createFineTuner(fc, options);
    const losses = [];
    for (let i = 0; i < 3; ++i) losses.push((await tuner.step()).loss);
    return { tuner, losses, sample: await tuner.sample(prompt, { maxTokens: 4 }) };
  };
  let cpu, gpu;
  try {
    cpu = await run('cpu');
    gpu = await run('webgpu');
    assert.deepEqual([gpu.tuner.device, gpu.tuner.model.device], ['webgpu', 'webgpu']);
    gpu.losses.forEach((l, i) => assert.ok(Math.abs(l - cpu.losses[i]) <= 1e-4 * Math.abs(cpu.losses[i]),
      `loss ${i}: ${l} on the device, ${cpu.losses[i]} on the cpu`));
    assert.deepEqual(gpu.sample, cpu.sample);
    const m = gpu.tuner.memory();
    assert.equal(m.device, 'webgpu');
    // The device holds the base as the cpu loaded it (q8_0 blocks read in place), byte for byte.
    const expected = expectedFrozenBytes(cfg, 'q8_0');
    assert.deepEqual(m.frozen, { bytes: expected.total, byDtype: expected.byDtype });
    assert.equal(m.state, 16 * gpu.tuner.adapterCount + rotaryBytes(cfg, gpu.tuner.span));
    assert.ok(m.activations > 0 && m.peak >= m.frozen.bytes + m.state + m.activations, JSON.stringify(m));
    fc.defaultDevice = 'cpu';
    await assertPeftReloads(fc, gpu.tuner, fc.nn.Llama.load(file, cfg, { dtype: 'q8_0' }), tokenizer.encode('Day 3. Wind W, '));
  } finally {
    cpu?.tuner.dispose();
    gpu?.tuner.dispose();
    fc.defaultDevice = 'webgpu';
  }
  assert.equal(fc.memory().devices.webgpu.liveBytes, deviceBefore, 'dispose frees what the fine-tuner put on the device');
});

test('train_base.mjs trains a few steps and writes a base that loads', async () => {
  const out = mkdtempSync(join(tmpdir(), 'fucina-base-'));
  try {
    const log = execFileSync(process.execPath, [join(DIR, 'train_base.mjs'), '--steps', '3', '--out', out], { encoding: 'utf8' });
    assert.match(log, /3 steps in \d+ s .*final loss \d+\.\d+/);
    const written = JSON.parse(readFileSync(join(out, 'config.json'), 'utf8'));
    for (const key of ['vocab_size', 'n_positions', 'n_embd', 'n_layer', 'n_head']) assert.equal(written[key], config[key], key);
    const fc = await engine('threaded-simd');
    const model = fc.nn.Gpt2.load(new Uint8Array(readFileSync(join(out, 'model.safetensors'))), written, { dtype: 'q8_0' });
    model.dispose();
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
});
