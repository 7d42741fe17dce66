// The Fine-tune demo's engine half (demos/web/finetune/finetune.mjs) in Node, on the shipped base
// (demos/web/finetune/base/): the tokenizers, the sizes a config implies, a few LoRA steps per
// dtype (the loss falls; the memory readout is what the dtype implies), sampling, and the
// downloaded adapters loading back onto a fresh base. Also a quick run of train_base.mjs into a
// temporary folder.
import { test } from 'node:test';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { assert, engine } from './helpers.mjs';
import { createTokenizer, createFineTuner, expectedFrozenBytes, adapterElements, baseElements, budgetFor, showBytes,
  randomWindows, makeRandom, TRAINING } from '../../demos/web/finetune/finetune.mjs';

const DIR = fileURLToPath(new URL('../../demos/web/finetune/', import.meta.url));
const modelBytes = new Uint8Array(readFileSync(join(DIR, 'base/model.safetensors')));
const config = JSON.parse(readFileSync(join(DIR, 'base/config.json'), 'utf8'));
const text = readFileSync(join(DIR, 'log.txt'), 'utf8');
const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;

test('the shipped base: a byte-level GPT-2 within 5 MB whose file matches its config', () => {
  assert.equal(config.vocab_size, 256);
  assert.ok(modelBytes.length <= 5e6, `model.safetensors is ${modelBytes.length} bytes`);
  const { matrices, rest } = baseElements(config);
  const n = Number(new DataView(modelBytes.buffer, modelBytes.byteOffset).getBigUint64(0, true));
  assert.equal(modelBytes.length, 8 + n + 4 * (matrices + rest), 'an F32 file of exactly the parameters the config implies');
});

test('tokenizers: bytes for 256, GPT-2 BPE (js-tiktoken) for 50257, a clear error otherwise', async () => {
  const bytes = await createTokenizer(256);
  assert.deepEqual(Array.from(bytes.encode('Day 1. é')), [68, 97, 121, 32, 49, 46, 32, 0xc3, 0xa9]);
  assert.equal(bytes.decode(bytes.encode('Day 1. é\n')), 'Day 1. é\n');
  assert.equal(bytes.decode([72, 1, 0xff, 105]), 'H··i');  // a control byte and invalid UTF-8 show as '·'
  const bpe = await createTokenizer(50257);
  const ids = bpe.encode('Day 21. Wind SW, light.<|endoftext|>');
  assert.ok(ids instanceof Int32Array && ids.length < 15 && ids.at(-1) === 50256, `${ids}`);
  assert.equal(bpe.decode(ids), 'Day 21. Wind SW, light.<|endoftext|>');
  await assert.rejects(createTokenizer(96), /no tokenizer for vocab_size 96/);
  assert.equal(showBytes([0xe2, 0x82, 0xac]), '€');
});

test('sizes and budgets a config implies', () => {
  const gpt2 = { vocab_size: 50257, n_positions: 1024, n_embd: 768, n_layer: 12, n_head: 12, n_inner: null };
  const { matrices, rest } = baseElements(gpt2);
  assert.equal(matrices + rest, 124_439_808);  // GPT-2 small
  assert.deepEqual(expectedFrozenBytes(gpt2, 'q8_0').byDtype, { f32: 4 * rest, q8_0: (matrices / 32) * 34 });
  assert.equal(adapterElements(gpt2, 8, 'attention'), 12 * 8 * (768 + 3 * 768));  // peft's 294,912 for r=8 on c_attn
  assert.deepEqual(budgetFor(gpt2).training, { batch: 2, context: 32 });
  assert.deepEqual(budgetFor(config), { training: {}, sampling: {} });
  const windows = randomWindows(Int32Array.from({ length: 10 }, (_, i) => i), 3, 4, makeRandom(1));
  for (let b = 0; b < 3; ++b) for (let i = 1; i < 4; ++i) assert.equal(windows[4 * b + i], windows[4 * b] + i);
});

for (const [dtype, targets] of [['f32', 'attention'], ['f16', 'all'], ['q8_0', 'all']]) {
  test(`LoRA (${targets}) on the shipped base in ${dtype}: the loss falls, and the memory is what ${dtype} implies`, async () => {
    const fc = await engine('threaded-simd');
    const tokenizer = await createTokenizer(config.vocab_size);
    const before = fc.memory().liveTensors;
    const rank = 4;
    const tuner = createFineTuner(fc, { modelBytes, config, tokens: tokenizer.encode(text), dtype, rank, targets });
    try {
      const expected = expectedFrozenBytes(config, dtype);
      assert.deepEqual(tuner.frozen, { bytes: expected.total, byDtype: expected.byDtype });
      assert.equal(tuner.adapterCount, adapterElements(config, rank, targets));
      assert.equal(tuner.memory().state, null);
      assert.equal(tuner.span, TRAINING.context + 1);
      const promptIds = tokenizer.encode('Day 21. ');
      const streamed = [];
      const first = tuner.sample(promptIds, { maxTokens: 24, onToken: (id) => { streamed.push(id); } });
      assert.equal(first.length, 24);
      assert.deepEqual(first, streamed);
      const losses = [];
      for (let i = 0; i < 25; ++i) losses.push(tuner.step().loss);
      assert.ok(losses.every(Number.isFinite), `${losses}`);
      assert.ok(mean(losses.slice(-5)) < 0.9 * mean(losses.slice(0, 5)), `loss did not fall: ${losses.map((l) => l.toFixed(3))}`);
      const m = tuner.memory();
      // The adapters, their gradients and AdamW's m and v: four f32 values per adapter parameter.
      assert.equal(m.state, 16 * tuner.adapterCount);
      assert.ok(m.activations > 0 && m.peak >= m.frozen.bytes + m.state + m.activations, JSON.stringify(m));
      const after = tuner.sample(promptIds, { maxTokens: 24 });
      assert.notDeepEqual(after, first, 'the same seed gave the same tokens after training');

      // The adapters as the page downloads them, loaded onto a fresh base: the same logits.
      const adapters = tuner.saveAdapters();
      const fresh = fc.nn.Gpt2.load(modelBytes, config, { dtype });
      try {
        fresh.loadAdapters(adapters);
        const [a, b] = fc.scope(() => fc.noGrad(() => {
          const probe = fc.constant(['batch', 't'], [1, 15], tokenizer.encode('Day 3. Wind W, '), 'i32');
          return [tuner.model.loss(probe).item(), fresh.loss(probe).item()];
        }));
        assert.equal(b, a);
      } finally {
        fresh.dispose();
      }
    } finally {
      tuner.dispose();
    }
    assert.equal(fc.memory().liveTensors, before, 'dispose frees everything the fine-tuner made');
  });
}

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
