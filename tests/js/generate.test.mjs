// Generation with a KV cache: fc.nn.Gpt.generate (its loop and cache in JS, C++'s
// sampler) and fc.nn.Gpt2.generate (C++'s nn::Gpt2::generate, bound) against uncached reference
// loops of full forwards, across the context limit; seeds, onToken, noGrad, memory and errors.
import { describe, test } from 'node:test';
import { readFileSync } from 'node:fs';
import { VARIANTS, engine, values, assert, throwsCode } from './helpers.mjs';

// The sizes of tests/cpp/generate_tests.cpp's Gpt: a context of 7, heads of 4 dims.
const SMALL = { vocab: 29, context: 7, dModel: 12, heads: 3, layers: 2, mlp: 20 };
// What C++'s Gpt with these sizes and seed 4 draws after [4, 1, 6] with { maxTokens: 12,
// temperature: 0.8, topK: 5, seed: 3 } (pinned in tests/cpp/generate_tests.cpp too).
const CPP_TOKENS = [11, 11, 11, 5, 11, 5, 23, 6, 15, 5, 23, 11];
const fixture = (name) => new URL(`../fixtures/gpt2/${name}`, import.meta.url);

// A pseudo-random prompt of n ids below vocab.
const promptOf = (n, vocab) => Array.from({ length: n }, (_, i) => ((i * 7 + 3) * (i + 5)) % vocab);

// Greedy decoding without a cache: each step a full forward over the last `positions` tokens of
// the context, the argmax of its last position.
function greedyReference(fc, logitsOf, vocab, prompt, maxTokens, positions) {
  const context = [...prompt], out = [];
  for (let step = 0; step < maxTokens; ++step) {
    const window = context.slice(-positions);
    const last = fc.scope(() => values(logitsOf(fc.constant(['batch', 't'], [1, window.length], window, 'i32'))))
      .slice(-vocab);
    const id = last.indexOf(Math.max(...last));
    out.push(id);
    context.push(id);
  }
  return out;
}

for (const variant of VARIANTS) {
  describe(variant, () => {
    test('Gpt.generate: greedy equals the uncached loop for prompts of 1 to past the context', async () => {
      const fc = await engine(variant);
      const model = new fc.nn.Gpt(SMALL, 4);
      const logitsOf = (t) => model.forward(t);
      for (const n of [1, 2, SMALL.context - 1, SMALL.context, SMALL.context + 4]) {
        const prompt = promptOf(n, SMALL.vocab);
        const maxTokens = SMALL.context + 2;  // crosses the context limit
        assert.deepEqual(model.generate(prompt, { maxTokens, temperature: 0 }),
          greedyReference(fc, logitsOf, SMALL.vocab, prompt, maxTokens, SMALL.context), `prompt of ${n}`);
      }
      assert.deepEqual(model.generate([1, 2], { maxTokens: 5, topK: 1, seed: 3 }),
        model.generate([1, 2], { maxTokens: 5, temperature: 0 }), 'topK 1 is greedy');
      assert.deepEqual(model.generate([1], { maxTokens: 0 }), []);
    });

    test('Gpt.generate: seeded, the same sampler and tokens as C++', async () => {
      const fc = await engine(variant);
      const model = new fc.nn.Gpt(SMALL, 4);
      const options = { maxTokens: 12, temperature: 0.8, topK: 5, seed: 3 };
      const a = model.generate([4, 1, 6], options);
      assert.equal(a.length, 12);
      assert.ok(a.every((id) => Number.isInteger(id) && id >= 0 && id < SMALL.vocab), a.join());
      assert.deepEqual(model.generate(Int32Array.of(4, 1, 6), options), a, 'deterministic for a seed');
      // tests/cpp/generate_tests.cpp pins the same tokens for C++'s Gpt with this seed.
      assert.deepEqual(a, CPP_TOKENS);
      const seeds = new Set([1, 2, 3, 4].map((seed) => model.generate([1, 2], { maxTokens: 12, temperature: 2, seed }).join()));
      assert.ok(seeds.size > 1, 'the seed changes the samples');
    });

    test('Gpt.generate: onToken sees each token and stops it; noGrad; what it throws; no tensor left', async () => {
      const fc = await engine(variant);
      const model = new fc.nn.Gpt(SMALL, 4);
      const live = fc.memory().liveTensors;
      const all = model.generate([4, 1, 6], { maxTokens: 10, seed: 5 });
      const seen = [];
      let recording;
      const stopped = model.generate([4, 1, 6], { maxTokens: 10, seed: 5, onToken: (id) => {
        recording = fc.isGradEnabled();
        seen.push(id);
        return seen.length < 3;
      } });
      assert.deepEqual(stopped, all.slice(0, 3));
      assert.deepEqual(seen, stopped);
      assert.equal(recording, false);
      assert.equal(fc.isGradEnabled(), true);
      const boom = new Error('stop here');
      assert.throws(() => model.generate([1, 2, 3], { maxTokens: 9, onToken: (id) => { if (id >= 0) throw boom; } }),
        (e) => e === boom);
      assert.equal(fc.isGradEnabled(), true);
      assert.equal(fc.memory().liveTensors, live, 'the cache is freed, also after a throw');
      fc.scope(() => model.generate([1, 2], { maxTokens: 9 }));  // inside a scope too
      assert.equal(fc.memory().liveTensors, live);
    });

    test('Gpt.generate refuses bad arguments as Gpt2.generate does', async () => {
      const fc = await engine(variant);
      const model = new fc.nn.Gpt(SMALL, 4);
      throwsCode(() => model.generate([], {}), 'InvalidArgument');
      throwsCode(() => model.generate([1, SMALL.vocab]), 'IndexOutOfRange');
      throwsCode(() => model.generate([-1]), 'IndexOutOfRange');
      throwsCode(() => model.generate('abc'), 'InvalidArgument');
      throwsCode(() => model.generate([1], { maxTokens: -1 }), 'InvalidArgument');
      throwsCode(() => model.generate([1], { temperature: -0.5 }), 'InvalidArgument');
      throwsCode(() => model.generate([1], { temperature: NaN }), 'InvalidArgument');
      throwsCode(() => model.generate([1], { topK: 1.5 }), 'InvalidArgument');
      throwsCode(() => model.generate([1], { seed: -1 }), 'InvalidArgument');
      throwsCode(() => model.generate([1], { onToken: 'print' }), 'InvalidArgument');
      const e = throwsCode(() => model.generate([1], { max: 3 }), 'InvalidArgument');
      assert.match(e.message, /nn\.Gpt\.generate: unknown option 'max'/);
    });

    test('Gpt2.generate: greedy equals the uncached loop across n_positions', async () => {
      const fc = await engine(variant);
      const config = JSON.parse(readFileSync(fixture('config.json'), 'utf8'));
      const model = fc.nn.Gpt2.load(new Uint8Array(readFileSync(fixture('model.safetensors'))), config);
      const positions = config.n_positions;
      const logitsOf = (t) => model.logits(t);
      for (const n of [1, positions - 2, positions]) {
        const prompt = promptOf(n, config.vocab_size);
        assert.deepEqual(model.generate(prompt, { maxTokens: 5, temperature: 0 }),
          greedyReference(fc, logitsOf, config.vocab_size, prompt, 5, positions), `prompt of ${n}`);
      }
      model.dispose();
    });
  });
}
