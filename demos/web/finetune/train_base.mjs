// Trains the Fine-tune demo's base model: a GPT-2-layout transformer whose tokens are bytes
// (vocab_size 256), learned from scratch on the Tiny GPT demo's book of fables (../gpt/text.txt)
// with AdamW on random windows, in Node on the wasm engine. Writes base/model.safetensors (the
// Hugging Face layout, f32) and base/config.json, which the page loads as its default base.
//
//   npm run build      (once: the package in dist/)
//   node demos/web/finetune/train_base.mjs [--steps N] [--threads N] [--out DIR]
//
// --out writes the two files elsewhere (a quick check: --steps 5 --out /tmp/base).
//
// The same seeds give the same model on every run; it prints the loss every 100 steps, a sample at
// the end, and the figures worth quoting (steps, time, final loss, file size).

import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { init } from 'fucina';
import { makeRandom, randomWindows, showBytes, parameterCount } from './finetune.mjs';

// GPT-2's layout at a small size: 4 blocks of width 128, a context of 128 bytes (f32: 3.4 MB).
const CONFIG = {
  model_type: 'gpt2',
  vocab_size: 256,
  n_positions: 128,
  n_embd: 128,
  n_layer: 4,
  n_head: 4,
  n_inner: null,
  layer_norm_epsilon: 1e-5,
  activation_function: 'gelu_new',
  tie_word_embeddings: true,
};
const TRAINING = { steps: 2000, batch: 8, context: 128, lr: 3e-3, minLr: 3e-4, warmupSteps: 100, weightDecay: 0.01, clip: 1,
  seed: 20 };

const { values: args } = parseArgs({ options: {
  steps: { type: 'string', default: String(TRAINING.steps) },
  threads: { type: 'string' },
  out: { type: 'string' },
} });
const steps = Number(args.steps);
if (!Number.isInteger(steps) || steps < 1) throw new Error(`--steps ${args.steps}: a positive integer`);

const here = (p) => fileURLToPath(new URL(p, import.meta.url));
const text = new Int32Array(readFileSync(here('../gpt/text.txt')));
const fc = await init(args.threads ? { threads: Number(args.threads) } : {});
const t = TRAINING;
const model = new fc.nn.Gpt2(CONFIG, t.seed, { trainable: true });
const params = model.parameters();
const opt = fc.optim.adamw(params, { lr: t.lr, weightDecay: t.weightDecay });
const random = makeRandom(t.seed);
const span = t.context + 1;  // the loss predicts the last `context` bytes of each window from the ones before
// A linear warm-up, then a cosine decay from lr to minLr over the remaining steps.
const lrAt = (s) => (s < t.warmupSteps ? (t.lr * (s + 1)) / t.warmupSteps
  : t.minLr + 0.5 * (t.lr - t.minLr) * (1 + Math.cos((Math.PI * (s - t.warmupSteps)) / Math.max(1, steps - t.warmupSteps))));

console.log(`fucina ${fc.variant} (${fc.threads} threads): training the Fine-tune demo's base, ` +
  `${CONFIG.n_layer} blocks · d ${CONFIG.n_embd} · ${CONFIG.n_head} heads · context ${CONFIG.n_positions} · ` +
  `${parameterCount(CONFIG).toLocaleString('en')} parameters, on ${text.length.toLocaleString('en')} bytes of fables`);
console.log(`${steps} steps of ${t.batch} windows of ${t.context} bytes, AdamW lr ${t.lr} -> ${t.minLr} (cosine), ` +
  `warm-up ${t.warmupSteps}, weight decay ${t.weightDecay}, clip ${t.clip}`);

const started = performance.now();
let sum = 0, count = 0, finalLoss = NaN;
for (let s = 0; s < steps; ++s) {
  opt.lr = lrAt(s);
  const loss = fc.scope(() => {
    opt.zeroGrad();
    const l = model.loss(fc.constant(['batch', 't'], [t.batch, span], randomWindows(text, t.batch, span, random), 'i32'));
    l.backward();
    fc.optim.clipGradNorm(params, t.clip);
    opt.step();
    return l.item();
  });
  sum += loss;
  count += 1;
  if ((s + 1) % 100 === 0 || s + 1 === steps) {
    finalLoss = sum / count;
    const seconds = (performance.now() - started) / 1000;
    console.log(`step ${String(s + 1).padStart(5)}  loss ${finalLoss.toFixed(3)} (mean of the last ${count})  ` +
      `lr ${opt.lr.toExponential(2)}  ${seconds.toFixed(0)} s`);
    sum = count = 0;
  }
}
const seconds = (performance.now() - started) / 1000;

const prompt = Array.from(new TextEncoder().encode('The fox '));
const sample = model.generate(prompt, { maxTokens: 200, temperature: 0.7, topK: 40, seed: 1 });
console.log(`\nsample (temperature 0.7, top-40):\n${showBytes([...prompt, ...sample])}\n`);

const out = args.out ? `${args.out.replace(/\/$/, '')}/` : here('base/');
mkdirSync(out, { recursive: true });
writeFileSync(`${out}model.safetensors`, model.save());
writeFileSync(`${out}config.json`, `${JSON.stringify(model.config, null, 2)}\n`);
const size = statSync(`${out}model.safetensors`).size;
console.log(`${steps} steps in ${seconds.toFixed(0)} s (${((1000 * seconds) / steps).toFixed(0)} ms/step), ` +
  `final loss ${finalLoss.toFixed(3)} nats/byte; wrote ${out}model.safetensors (${(size / 1e6).toFixed(2)} MB) and ${out}config.json`);
opt.dispose();
params.forEach((p) => p.dispose());
model.dispose();
