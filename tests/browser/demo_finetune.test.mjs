// The Fine-tune page (demos/web/finetune) with a Llama-family model from disk, in headless
// Chromium: the tiny Llama fixture (tests/fixtures/llama: model.safetensors, config.json, and the
// hand-made tokenizer.json and tokenizer_config.json described in tests/js/finetune_demo.test.mjs)
// picked in the page's file input, loaded in the worker by fc.nn.Llama.loadAsync, tokenized on
// the page by @huggingface/tokenizers; LoRA on q, k, v and o_proj (the Llama default) trains (the
// loss falls), the memory readout is the file's bytes, and the download gives PEFT's two files
// with the adapters the config implies. Then a GPT-2 dropped on the page (the shipped base's files)
// loads as one, and a config.json of a model_type fc.nn.Llama does not read is refused with the
// library's message, without a stack. Then the page with ?device=webgpu in a browser with WebGPU
// (over SwiftShader): the shipped base moves to the device and trains there a few steps, and the
// memory panel shows the device's figures.
//
// Run: node --test tests/browser/demo_finetune.test.mjs     Screenshot: test-output/demos/finetune-llama.png

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { startDemosServer } from '../../demos/web/server.mjs';
import { ROOT, skipReason, launchBrowser, openPage, assertRanOn } from './helpers.mjs';

const OUT = join(ROOT, 'test-output', 'demos');
const FIXTURE = join(ROOT, 'tests', 'fixtures', 'llama');
const FILES = ['model.safetensors', 'config.json', 'tokenizer.json', 'tokenizer_config.json'].map((f) => join(FIXTURE, f));
const TIMEOUT_MS = 60_000;

let server;
let browser;

before(async () => {
  server = await startDemosServer({ port: 0 });
  if (skipReason) return;
  mkdirSync(OUT, { recursive: true });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await server?.close();
});

/** window.__demo once ready(__demo) holds (or an error is shown). */
async function waitFor(page, problems, ready, timeout = TIMEOUT_MS) {
  try {
    await page.waitForFunction(`(${ready})(window.__demo) || window.__demo.errors.length > 0`, null,
      { timeout, polling: 100 });
  } catch (e) {
    throw new Error(`${e.message}\nconsole/page problems so far:\n${problems.join('\n') || '(none)'}`);
  }
  return page.evaluate(() => JSON.parse(JSON.stringify(window.__demo)));
}

/** The tensors of safetensors bytes: { [name]: { dtype, shape } }, every byte accounted for. */
function safetensorsTensors(bytes) {
  const n = Number(bytes.readBigUInt64LE(0));
  const header = JSON.parse(bytes.subarray(8, 8 + n).toString('utf8'));
  delete header.__metadata__;
  const end = Math.max(...Object.values(header).map((t) => t.data_offsets[1]));
  assert.equal(8 + n + end, bytes.length, 'the header and the tensors account for every byte');
  return Object.fromEntries(Object.entries(header).map(([k, t]) => [k, { dtype: t.dtype, shape: t.shape }]));
}

test('Fine-tune: a Llama-family model from disk trains with LoRA and downloads as PEFT files', { skip: skipReason }, async () => {
  const steps = 20, rank = 8;
  const config = JSON.parse(readFileSync(join(FIXTURE, 'config.json'), 'utf8'));
  // What the fixture implies, counted here from the file and the config (not from the page's code).
  const file = readFileSync(FILES[0]);
  const tensorBytes = file.length - 8 - Number(file.readBigUInt64LE(0));  // an F32 file: the f32 base
  const { hidden_size: d, num_attention_heads: H, num_key_value_heads: Hkv, head_dim: hd, num_hidden_layers: L } = config;
  const layers = { q_proj: [d, H * hd], k_proj: [d, Hkv * hd], v_proj: [d, Hkv * hd], o_proj: [H * hd, d] };
  const adapterCount = L * rank * Object.values(layers).reduce((n, [i, o]) => n + i + o, 0);
  // The rotary tables the model keeps once it has run (Note [Rotary tables kept]): cos and sin in
  // f32, hd / 2 wide, 64 rows at least and the positions at most: the fixture's 64.
  const rotaryBytes = 2 * 4 * (hd / 2) * Math.min(64, config.max_position_embeddings);

  const { context, page, problems } = await openPage(browser, { width: 1200, height: 1000 });
  try {
    await page.goto(`${server.url}demos/web/finetune/?dtype=f32&rank=${rank}&sampleTokens=12`, { waitUntil: 'load' });
    // The shipped base first (the page starts with it), then the fixture's four files, picked together.
    await waitFor(page, problems, (d) => d.samples.before !== undefined);
    await page.setInputFiles('#model-files', FILES);
    let demo = await waitFor(page, problems, (d) => d.info?.family === 'llama' && d.samples.before !== undefined);
    assert.deepEqual([demo.errors, problems], [[], []]);
    assert.deepEqual([demo.device, demo.memory.device, await page.textContent('#device-used')], ['cpu', 'cpu', 'cpu']);
    assert.equal(await page.textContent('#mem-source'), 'tensor bytes from fc.memory()');
    assert.deepEqual([demo.info.dtype, demo.info.rank, demo.info.targets], ['f32', rank, 'attention']);
    assert.equal(await page.textContent('#targets option:checked'), 'q, k, v, o_proj');
    assert.match(await page.textContent('#text-info'), /tokens \(tokenizer\.json\)/);
    assert.match(await page.textContent('#base-info'), /^llama · 2 blocks · d 64 · 4 heads \(2 kv\) · context 64 · vocab 80 · /);
    assert.equal(demo.info.adapterCount, adapterCount);
    assert.deepEqual(demo.memory.frozen, { bytes: tensorBytes, byDtype: { f32: tensorBytes } });
    assert.equal(demo.memory.expectedFrozen.total, tensorBytes);

    await page.evaluate((n) => window.__demo.run({}, n), steps);
    demo = await waitFor(page, problems, (d) => d.done);
    assert.deepEqual([demo.errors, problems], [[], []]);
    assert.equal(demo.losses.length, steps);
    assert.ok(demo.losses.every(Number.isFinite), `${demo.losses}`);
    const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
    const [first, last] = [mean(demo.losses.slice(0, 5)), mean(demo.losses.slice(-5))];
    assert.ok(last < 0.95 * first, `loss did not fall over ${steps} steps: ${first} -> ${last}`);
    assert.equal(demo.memory.state, 16 * adapterCount + rotaryBytes);
    assert.deepEqual(demo.runs.map((r) => r.label), ['f32 · r8 · q, k, v, o_proj']);
    assert.equal(demo.samples.after.step, steps);
    assert.ok(demo.samples.before.text.length > 0 && demo.samples.after.text !== demo.samples.before.text,
      JSON.stringify(demo.samples));

    // PEFT's two files, by the names PeftModel.from_pretrained reads.
    const downloads = [];
    page.on('download', (d) => downloads.push(d));
    await page.click('#download');
    await page.waitForFunction(() => window.__demo.download !== null, null, { timeout: TIMEOUT_MS });
    const deadline = Date.now() + 10_000;
    while (downloads.length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    const byName = Object.fromEntries(await Promise.all(downloads.map(async (d) =>
      [d.suggestedFilename(), readFileSync(await d.path())])));
    assert.deepEqual(Object.keys(byName).sort(), ['adapter_config.json', 'adapter_model.safetensors']);
    const peft = JSON.parse(byName['adapter_config.json'].toString('utf8'));
    assert.equal(peft.peft_type, 'LORA');
    assert.deepEqual([peft.r, peft.lora_alpha, peft.target_modules], [rank, 2 * rank, Object.keys(layers)]);
    const expected = {};
    for (let i = 0; i < L; ++i) {
      for (const [layer, [inputs, outputs]] of Object.entries(layers)) {
        const prefix = `base_model.model.model.layers.${i}.self_attn.${layer}`;
        expected[`${prefix}.lora_A.weight`] = { dtype: 'F32', shape: [rank, inputs] };
        expected[`${prefix}.lora_B.weight`] = { dtype: 'F32', shape: [outputs, rank] };
      }
    }
    assert.deepEqual(safetensorsTensors(byName['adapter_model.safetensors']), expected);
    assert.equal(await page.isHidden('#download-links'), false);
    await page.screenshot({ path: join(OUT, 'finetune-llama.png'), fullPage: true });

    // A GPT-2 from disk, dropped on the base card (the shipped base's two files): its family's
    // LoRA choices come back, at its default (every projection).
    const dropped = await page.evaluateHandle(async () => {
      const files = new DataTransfer();
      for (const name of ['model.safetensors', 'config.json'])
        files.items.add(new File([await (await fetch(`base/${name}`)).blob()], name));
      return files;
    });
    await page.dispatchEvent('#base-card', 'drop', { dataTransfer: dropped });
    demo = await waitFor(page, problems, (d) => d.info?.family === 'gpt2' && d.samples.before !== undefined);
    assert.deepEqual([demo.errors, problems], [[], []]);
    assert.deepEqual([demo.info.targets, await page.textContent('#targets option:checked')], ['all', 'all projections']);
    assert.match(await page.textContent('#base-info'), /^gpt2 · 4 blocks · d 128 · 4 heads · context 128 · vocab 256 · /);

    // Without tokenizer.json the page asks for it; a model_type fc.nn.Llama does not read is
    // refused by the library, whose message (not its stack) the page shows.
    await page.setInputFiles('#model-files', FILES.slice(0, 2));
    await page.waitForFunction(() => /tokenizer\.json: pick it too/.test(document.getElementById('base-info').textContent));
    const picked = (path, buffer = readFileSync(path)) => ({ name: basename(path), mimeType: 'application/octet-stream', buffer });
    const mistral = Buffer.from(JSON.stringify({ ...config, model_type: 'mistral' }));
    await page.setInputFiles('#model-files', [picked(FILES[0]), picked(FILES[1], mistral), picked(FILES[2])]);
    demo = await waitFor(page, problems, () => false);
    assert.deepEqual(demo.errors, ["InvalidArgument: Llama config.json: model_type 'mistral' is not supported (llama, qwen2)"]);
    assert.equal(await page.textContent('#status'), 'not loaded');
    assert.match(await page.textContent('#errors'), /model_type 'mistral' is not supported/);
  } catch (e) {
    await page.screenshot({ path: join(OUT, 'finetune-llama.png'), fullPage: true }).catch(() => {});
    throw new Error(`${e.message}\nconsole/page problems so far:\n${problems.join('\n') || '(none)'}`);
  } finally {
    await context.close();
  }
});

test('Fine-tune on webgpu: the shipped base trains on the device, and the memory panel is the device\'s', { skip: skipReason }, async () => {
  const steps = 2;  // SwiftShader runs the kernels on the CPU: a few small steps, short samples
  const gpuBrowser = await launchBrowser({ webgpu: true });
  const { page, problems } = await openPage(gpuBrowser, { width: 1200, height: 1000 });
  try {
    await page.goto(`${server.url}demos/web/finetune/?device=webgpu&autostart=1&steps=${steps}&sampleTokens=2&batch=2&context=16`, { waitUntil: 'load' });
    const demo = await waitFor(page, problems, (d) => d.done, 3 * TIMEOUT_MS);
    await page.screenshot({ path: join(OUT, 'finetune-webgpu.png'), fullPage: true });
    assert.deepEqual([demo.errors, problems], [[], []]);
    assert.equal(demo.webgpuMissing, '');
    await assertRanOn(page, demo);
    assert.equal(demo.losses.length, steps);
    assert.ok(demo.losses.every(Number.isFinite), `${demo.losses}`);
    assert.equal(demo.samples.after.step, steps);
    const m = demo.memory;
    assert.equal(m.device, 'webgpu');
    assert.equal(m.frozen.bytes, m.expectedFrozen.total, 'the device holds the base as the cpu loaded it');
    assert.equal(m.state, 16 * m.adapterCount);
    assert.ok(m.activations > 0 && m.peak >= m.frozen.bytes + m.state + m.activations, JSON.stringify(m));
    assert.match(await page.textContent('#mem-source'), /^tensor bytes on webgpu, from fc\.memory\(\)\.devices\.webgpu$/);
    assert.match(await page.textContent('#frozen-detail'), /^as loaded on the cpu: /);
    console.log(`Fine-tune, device webgpu: loss ${demo.losses.map((l) => l.toFixed(3)).join(' -> ')}, ` +
      `peak ${(m.peak / 2 ** 20).toFixed(1)} MiB on the device`);
  } catch (e) {
    throw new Error(`${e.message}\nconsole/page problems so far:\n${problems.join('\n') || '(none)'}`);
  } finally {
    await gpuBrowser.close();
  }
});
