// The browser demos (demos/web, served by `npm run demos`) in headless Chromium: the landing
// page, the dataset route, the Fashion-MNIST classifier (MLP, then briefly the CNN, in one page
// so the data loads once) on the cpu and then on webgpu (a second browser, WebGPU over
// SwiftShader), the Fine-tune page (f32, then q8_0) and the 2-D playground. Each page
// trains for a fixed number of steps through its test hook (?autostart=1&steps=N, window.__demo);
// the loss must fall, Fashion's test accuracy must beat chance, Fine-tune's memory readout must
// match the dtype, and nothing may be logged as an error.
//
// Run: node --test tests/browser/     Screenshots: test-output/demos/*.png

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { startDemosServer } from '../../demos/web/server.mjs';
import { ROOT, skipReason, launchBrowser, openPage, assertRanOn } from './helpers.mjs';

const OUT = join(ROOT, 'test-output', 'demos');
const TIMEOUT_MS = 120_000;
// SwiftShader runs WebGPU on the same two cores as everything else: its runs wait longer.
const SWIFTSHADER_TIMEOUT_MS = 360_000;

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

/** HEAD with the path sent as is (fetch would resolve '..' away): resolves to the status code. */
const statusOf = (path) => new Promise((resolve, reject) => {
  request({ host: '127.0.0.1', port: server.port, path, method: 'HEAD' }, (res) => { res.resume(); resolve(res.statusCode); })
    .on('error', reject).end();
});

test('the demos server serves the four Fashion-MNIST files and nothing else outside the repository', async () => {
  for (const f of ['train-images-idx3-ubyte.gz', 'train-labels-idx1-ubyte.gz', 't10k-images-idx3-ubyte.gz', 't10k-labels-idx1-ubyte.gz'])
    assert.equal(await statusOf(`/data/fashion-mnist/${f}`), 200, f);
  for (const path of ['/data/fashion-mnist/', '/data/fashion-mnist/README', '/data/fashion-mnist//t10k-labels-idx1-ubyte.gz',
    '/data/fashion-mnist/t10k-labels-idx1-ubyte.gz/', '/data/fashion-mnist/../../../etc/passwd', '/data/fashion-mnist/%2e%2e/x',
    '/data/fashion-mnist/..%2ft10k-labels-idx1-ubyte.gz', '/data/', '/../../etc/passwd'])
    assert.ok([403, 404].includes(await statusOf(path)), `${path} was served`);
  assert.equal(await statusOf('/'), 302);
});

/** Opens path, waits until window.__demo reports done (or an error); returns { page, demo, problems }. */
async function openDemo(path, viewport, inBrowser = browser, timeout = TIMEOUT_MS) {
  const opened = await openPage(inBrowser, viewport);
  await opened.page.goto(server.url + path, { waitUntil: 'load' });
  return { ...opened, demo: await waitDone(opened, timeout) };
}

async function waitDone({ page, problems }, timeout = TIMEOUT_MS) {
  try {
    // Poll on a timer: headless Chromium's rAF polling is unreliable with busy workers.
    await page.waitForFunction(() => window.__demo?.done || window.__demo?.errors.length > 0, null,
      { timeout, polling: 100 });
  } catch (e) {
    throw new Error(`${e.message}\nconsole/page problems so far:\n${problems.join('\n') || '(none)'}`);
  }
  return page.evaluate(() => JSON.parse(JSON.stringify(window.__demo)));
}

function assertClean(demo, problems) {
  assert.deepEqual(demo.errors, []);
  assert.deepEqual(problems, []);
}

/** The mean of the last few losses is below the mean of the first few (batch losses are noisy). */
function assertLossFell(losses, steps, factor) {
  assert.equal(losses.length > 0 && losses.every(Number.isFinite), true, `losses: ${losses}`);
  const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const k = Math.min(5, Math.floor(losses.length / 3));
  const [first, last] = [mean(losses.slice(0, k)), mean(losses.slice(-k))];
  assert.ok(last < factor * first, `loss did not fall enough over ${steps} steps: ${first} -> ${last}`);
}

test('landing page links the four demos', { skip: skipReason }, async () => {
  const { context, page, problems } = await openPage(browser, { width: 900, height: 560 });
  try {
    const response = await page.goto(server.url, { waitUntil: 'load' });
    assert.ok(response.url().endsWith('/demos/web/'), response.url());
    const links = await page.$$eval('a.card', (as) => as.map((a) => a.getAttribute('href')));
    assert.deepEqual(links, ['fashion/', 'gpt/', 'finetune/', 'playground/']);
    assert.equal(await page.evaluate(() => crossOriginIsolated), true);
    await page.screenshot({ path: join(OUT, 'index.png'), fullPage: true });
    assert.deepEqual(problems, []);
  } finally {
    await context.close();
  }
});

test('Fashion-MNIST: the MLP, then the CNN, train in the worker', { skip: skipReason }, async () => {
  const steps = 30;
  const opened = await openDemo(`demos/web/fashion/?autostart=1&steps=${steps}&eval=10`, { width: 900, height: 600 });
  const { context, page, problems } = opened;
  try {
    let { demo } = opened;
    assertClean(demo, problems);
    assert.equal(demo.variant, 'threaded-simd');
    assert.ok(demo.threads > 1, `threads ${demo.threads}`);
    assert.equal(demo.model, 'mlp');
    // The device selector: cpu, webgpu off in a browser without an adapter (--disable-gpu), saying why.
    assert.equal(demo.device, 'cpu');
    assert.equal(await page.textContent('#device-used'), 'cpu');
    assert.equal(await page.inputValue('#device'), 'cpu');
    assert.ok(demo.webgpuMissing, 'this browser has a WebGPU adapter');
    assert.equal(await page.isDisabled('#device option[value="webgpu"]'), true);
    assert.equal(await page.textContent('#device option[value="webgpu"]'), `webgpu: ${demo.webgpuMissing}`);
    assert.equal(demo.losses.length, steps);
    assertLossFell(demo.losses, steps, 0.6);
    assert.equal(demo.accuracies.length, 4);  // before training, and every 10 steps
    assert.ok(demo.accuracies.at(-1) > 0.5, `MLP test accuracy ${demo.accuracies.at(-1)} after ${steps} steps`);
    await page.screenshot({ path: join(OUT, 'fashion-mlp.png'), fullPage: true });

    const cnnSteps = 6;
    await page.evaluate((n) => window.__demo.run('cnn', n), cnnSteps);
    demo = await waitDone(opened);
    assertClean(demo, problems);
    assert.equal(demo.model, 'cnn');
    assert.equal(demo.losses.length, cnnSteps);
    assertLossFell(demo.losses, cnnSteps, 0.9);
    assert.ok(demo.accuracies.at(-1) > 0.2, `CNN test accuracy ${demo.accuracies.at(-1)} after ${cnnSteps} steps (chance is 0.1)`);
    await page.screenshot({ path: join(OUT, 'fashion-cnn.png'), fullPage: true });
  } finally {
    await context.close();
  }
});

test('Fashion-MNIST on webgpu: the MLP and the CNN train on the device',
  { skip: skipReason }, async () => {
    // SwiftShader runs the device on the CPU (a step of the MLP: about a second): few steps, and
    // an evaluation only at the start and the end.
    const steps = 8;
    const gpuBrowser = await launchBrowser({ webgpu: true });
    try {
      const opened = await openDemo(`demos/web/fashion/?device=webgpu&autostart=1&steps=${steps}&eval=${steps}`,
        { width: 900, height: 600 }, gpuBrowser, SWIFTSHADER_TIMEOUT_MS);
      const { page, problems } = opened;
      let { demo } = opened;
      assertClean(demo, problems);
      assert.equal(demo.webgpuMissing, '');
      await assertRanOn(page, demo);
      assert.equal(demo.losses.length, steps);
      assertLossFell(demo.losses, steps, 0.9);
      assert.equal(demo.accuracies.length, 2);
      await page.screenshot({ path: join(OUT, 'fashion-mlp-webgpu.png'), fullPage: true });

      const cnnSteps = 3;
      await page.evaluate((n) => window.__demo.run('cnn', n), cnnSteps);
      demo = await waitDone(opened, SWIFTSHADER_TIMEOUT_MS);
      assertClean(demo, problems);
      assert.equal(demo.model, 'cnn');
      await assertRanOn(page, demo);
      assert.equal(demo.losses.length, cnnSteps);
      assertLossFell(demo.losses, cnnSteps, 0.95);
      await page.screenshot({ path: join(OUT, 'fashion-cnn-webgpu.png'), fullPage: true });
      console.log(`Fashion-MNIST, device webgpu: the MLP on ${opened.demo.device}, loss ${opened.demo.losses[0].toFixed(3)} -> ` +
        `${opened.demo.losses.at(-1).toFixed(3)}; the CNN on ${demo.device}`);
    } finally {
      await gpuBrowser.close();
    }
  });

/** The header and tensor table of safetensors bytes: { [name]: { dtype, shape, data_offsets } }. */
function safetensorsHeader(bytes) {
  const n = Number(bytes.readBigUInt64LE(0));
  const header = JSON.parse(bytes.subarray(8, 8 + n).toString('utf8'));
  const tensors = Object.fromEntries(Object.entries(header).filter(([k]) => k !== '__metadata__'));
  const end = Math.max(...Object.values(tensors).map((t) => t.data_offsets[1]));
  assert.equal(8 + n + end, bytes.length, 'the header and the tensors account for every byte');
  return { tensors, metadata: header.__metadata__ ?? {} };
}

test('Fine-tune: LoRA on the shipped base trains, the memory readout follows the dtype, the adapters download',
  { skip: skipReason }, async () => {
    const steps = 20, rank = 4;
    // What the shipped config implies, counted here from GPT-2's layout (not from the page's code):
    // the matrices a dtype stores (wte, the tied head, and per block c_attn, attn.c_proj, c_fc,
    // mlp.c_proj), and the rest, always f32 (wpe, LayerNorms, biases).
    const config = JSON.parse(readFileSync(join(ROOT, 'demos/web/finetune/base/config.json'), 'utf8'));
    const { vocab_size: V, n_positions: P, n_embd: d, n_layer: L } = config;
    const inner = config.n_inner ?? 4 * d;
    const matrices = V * d + L * (3 * d * d + d * d + 2 * d * inner);
    const rest = P * d + L * (2 * d + 3 * d + d + 2 * d + inner + d) + 2 * d;
    // A{rank, in} and B{out, rank} on each of a block's four projections (the page's default targets).
    const layers = { 'attn.c_attn': [d, 3 * d], 'attn.c_proj': [d, d], 'mlp.c_fc': [d, inner], 'mlp.c_proj': [inner, d] };
    const adapterCount = L * rank * Object.values(layers).reduce((n, [i, o]) => n + i + o, 0);

    const opened = await openDemo(`demos/web/finetune/?autostart=1&steps=${steps}&dtype=f32&rank=${rank}&sampleTokens=48`,
      { width: 1200, height: 1000 });
    const { context, page, problems } = opened;
    try {
      const f32 = opened.demo;
      assertClean(f32, problems);
      assert.equal(f32.variant, 'threaded-simd');
      assert.deepEqual([f32.info.dtype, f32.info.rank, f32.info.targets], ['f32', rank, 'all']);
      assert.equal(f32.info.adapterCount, adapterCount);
      assert.equal(f32.losses.length, steps);
      assertLossFell(f32.losses, steps, 0.9);
      // f32: every weight 4 bytes; the adapters, their gradients and AdamW's m and v 4 bytes each.
      assert.deepEqual(f32.memory.frozen, { bytes: 4 * (matrices + rest), byDtype: { f32: 4 * (matrices + rest) } });
      assert.equal(f32.memory.state, 16 * adapterCount, `adapters + optimizer ${f32.memory.state} B`);
      assert.ok(f32.memory.activations > 0 && f32.memory.peak >= f32.memory.frozen.bytes + f32.memory.state + f32.memory.activations,
        JSON.stringify(f32.memory));
      assert.equal(f32.samples.before.step, 0);
      assert.equal(f32.samples.after.step, steps);
      assert.ok(f32.samples.before.text.length > 0 && f32.samples.after.text.length > 0, JSON.stringify(f32.samples));
      assert.notEqual(f32.samples.after.text, f32.samples.before.text, 'the same seed gave the same text after training');
      assert.ok(f32.liveTensors.slice(1).every((n) => n === f32.liveTensors[1]), `live tensors per step ${f32.liveTensors}`);
      // Stopped, the page shows the last rate it measured, not 0.
      assert.ok(Number(await page.textContent('#rate')) > 0, `steps/s after the stop: ${await page.textContent('#rate')}`);

      await page.evaluate((n) => window.__demo.run({ dtype: 'q8_0' }, n), steps);
      const q8 = await waitDone(opened);
      assertClean(q8, problems);
      assert.equal(q8.info.dtype, 'q8_0');
      assertLossFell(q8.losses, steps, 0.9);
      // q8_0: the matrices at 34 bytes per block of 32 (1.0625 B a value, 1.0625/4 of f32), the rest f32.
      assert.deepEqual(q8.memory.frozen.byDtype, { q8_0: (matrices / 32) * 34, f32: 4 * rest });
      // Measured against measured: the q8_0 matrices over the same matrices in the f32 run.
      assert.equal(q8.memory.frozen.byDtype.q8_0 / (f32.memory.frozen.bytes - q8.memory.frozen.byDtype.f32), 1.0625 / 4);
      assert.equal(q8.memory.state, 16 * adapterCount);
      assert.deepEqual(q8.runs.map((r) => r.label), ['f32 · r4 · all projections', 'q8_0 · r4 · all projections']);

      // Checkpointed blocks keep less for backward: the same base and adapters, fewer activations.
      await page.evaluate((n) => window.__demo.run({ checkpoint: true }, n), 4);
      const ckpt = await waitDone(opened);
      assertClean(ckpt, problems);
      assert.equal(ckpt.info.checkpointBlocks, true);
      assert.deepEqual([ckpt.memory.frozen, ckpt.memory.state], [q8.memory.frozen, q8.memory.state]);
      assert.ok(ckpt.memory.activations < 0.6 * q8.memory.activations,
        `activations with blocks checkpointed ${ckpt.memory.activations} B, without ${q8.memory.activations} B`);

      console.log(`Fine-tune memory, f32 then q8_0 (then checkpointed): frozen ${f32.memory.frozen.bytes} / ${q8.memory.frozen.bytes} B, ` +
        `adapters + AdamW ${q8.memory.state} B, activations ${f32.memory.activations} / ${q8.memory.activations} / ${ckpt.memory.activations} B; ` +
        `loss ${f32.losses[0].toFixed(3)} -> ${f32.losses.at(-1).toFixed(3)} (f32), ${q8.losses[0].toFixed(3)} -> ${q8.losses.at(-1).toFixed(3)} (q8_0)`);

      // The adapters as PEFT's two files (adapter_model.safetensors, adapter_config.json), both
      // downloaded by the one click.
      const downloads = [];
      page.on('download', (d) => downloads.push(d));
      await page.click('#download');
      const deadline = Date.now() + TIMEOUT_MS;
      while (downloads.length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      const files = Object.fromEntries(await Promise.all(downloads.map(async (d) => [d.suggestedFilename(), readFileSync(await d.path())])));
      assert.deepEqual(Object.keys(files).sort(), ['adapter_config.json', 'adapter_model.safetensors']);
      const { tensors } = safetensorsHeader(files['adapter_model.safetensors']);
      const expected = {};
      for (let i = 0; i < L; ++i) {
        for (const [layer, [inputs, outputs]] of Object.entries(layers)) {
          const prefix = `base_model.model.transformer.h.${i}.${layer}`;
          expected[`${prefix}.lora_A.weight`] = [rank, inputs];
          expected[`${prefix}.lora_B.weight`] = [outputs, rank];
        }
      }
      assert.deepEqual(Object.fromEntries(Object.entries(tensors).map(([k, t]) => [k, t.shape])), expected);
      assert.ok(Object.values(tensors).every((t) => t.dtype === 'F32'));
      const peft = JSON.parse(files['adapter_config.json'].toString('utf8'));
      assert.deepEqual([peft.peft_type, peft.r, peft.lora_alpha, peft.target_modules, peft.fan_in_fan_out],
        ['LORA', rank, 2 * rank, ['c_attn', 'c_proj', 'c_fc'], true]);
      await page.screenshot({ path: join(OUT, 'finetune.png'), fullPage: true });
    } catch (e) {
      await page.screenshot({ path: join(OUT, 'finetune.png'), fullPage: true }).catch(() => {});
      throw new Error(`${e.message}\nconsole/page problems so far:\n${problems.join('\n') || '(none)'}`);
    } finally {
      await context.close();
    }
  });

test('2-D playground: the MLP separates the spirals', { skip: skipReason }, async () => {
  const steps = 300;
  const { context, page, demo, problems } = await openDemo(`demos/web/playground/?autostart=1&steps=${steps}`,
    { width: 900, height: 560 });
  try {
    assertClean(demo, problems);
    assert.equal(demo.steps, steps);
    assertLossFell(demo.losses, steps, 0.5);
    assert.ok(demo.accuracy > 0.6, `train accuracy ${demo.accuracy}`);
    // Stopped, the page keeps showing the last rate it measured rather than 0.
    assert.ok(Number(await page.textContent('#rate')) > 0, `rate after the stop: ${await page.textContent('#rate')}`);
    await page.screenshot({ path: join(OUT, 'playground.png'), fullPage: true });
  } finally {
    await context.close();
  }
});

test('a demo page opened from a file says it needs the server instead of staying at "loading…"', { skip: skipReason }, async () => {
  const { context, page } = await openPage(browser);
  try {
    for (const demo of ['fashion', 'gpt', 'finetune', 'playground']) {
      await page.goto(`file://${join(ROOT, 'demos', 'web', demo, 'index.html')}`, { waitUntil: 'load' });
      assert.match(await page.textContent('#errors'), /needs a web server.*npm run demos/s, demo);
      assert.equal(await page.isHidden('#errors'), false, demo);
      assert.equal(await page.textContent('#variant'), 'not loaded (file://)', demo);
    }
  } finally {
    await context.close();
  }
});

test('npm run demos on a busy port says the port is taken and how to pick another', async () => {
  const { spawnSync } = await import('node:child_process');
  const r = spawnSync(process.execPath, [join(ROOT, 'demos', 'web', 'server.mjs'), String(server.port)], { encoding: 'utf8' });
  assert.equal(r.status, 1);
  assert.match(r.stderr, new RegExp(`port ${server.port} is taken.*npm run demos -- 9000`));
  assert.doesNotMatch(r.stderr, /at Server\.|EADDRINUSE/);
});
