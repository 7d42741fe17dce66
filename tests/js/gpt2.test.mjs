// GPT-2 and LoRA in JS: fc.nn.Gpt2 and fc.nn.LoraLinear (the C++ nn::Gpt2 / nn::LoraLinear, bound)
// against tests/fixtures/gpt2/, a 2-layer GPT-2-shaped checkpoint in the Hugging Face layout with
// the float64 PyTorch reference of tests/fixtures/gpt2_fixture.py: logits and loss per base
// dtype, full fine-tuning gradients, the LoRA case, adapter files, merging, generation,
// checkpointing, memory, and a short LoRA training run.
import { describe, test } from 'node:test';
import { readFileSync } from 'node:fs';
import { VARIANTS, engine, values, assert, assertClose, throwsCode } from './helpers.mjs';

const fixture = (name) => new URL(`../fixtures/gpt2/${name}`, import.meta.url);
const modelBytes = new Uint8Array(readFileSync(fixture('model.safetensors')));
const adapterBytes = new Uint8Array(readFileSync(fixture('adapters.safetensors')));
const config = JSON.parse(readFileSync(fixture('config.json'), 'utf8'));
const ref = JSON.parse(readFileSync(fixture('reference.json'), 'utf8'));
const [BATCH, T] = [ref.tokens.length, ref.tokens[0].length];
const VOCAB = config.vocab_size;

const maxAbsDiff = (a, b) => a.reduce((m, x, i) => Math.max(m, Math.abs(x - b[i])), 0);
const tokensOf = (fc) => fc.constant(['batch', 't'], [BATCH, T], ref.tokens.flat(), 'i32');

// The layers options.targets adapts, in model order (the order of parameters(): A, B per layer).
const adapted = (model, targets) => model.layers().filter((n) => targets.some((t) => n === t || n.endsWith(`.${t}`)));

for (const variant of VARIANTS) {
  describe(variant, () => {
    test('load: logits and loss match the PyTorch reference for an f32, f16, bf16 and q8_0 base', async () => {
      const fc = await engine(variant);
      const tokens = tokensOf(fc);
      for (const dtype of ['f32', 'f16', 'bf16', 'q8_0']) {
        const model = fc.nn.Gpt2.load(modelBytes, config, { dtype });
        assert.equal(model.dtype, dtype);
        fc.scope(() => {
          const logits = model.logits(tokens);
          assert.deepEqual([logits.tags, logits.shape, logits.dtype], [['batch', 't', 'vocab'], [BATCH, T, VOCAB], 'f32']);
          const got = values(logits);
          assertClose(got, ref.logits[dtype], `${dtype} logits`);
          assertClose([model.loss(tokens).item()], [ref.loss[dtype]], `${dtype} loss`);
          // The base really is stored in dtype: its logits are as far from the f32 ones as the reference's.
          if (dtype !== 'f32') assert.ok(maxAbsDiff(got, ref.logits.f32) > 0.5 * ref.max_abs_vs_f32[dtype], dtype);
        });
        model.dispose();
      }
      tokens.dispose();
    });

    test('config, layers, and an f32 base saved and loaded again', async () => {
      const fc = await engine(variant);
      const model = fc.nn.Gpt2.load(modelBytes, config);
      const c = model.config;
      for (const k of ['vocab_size', 'n_positions', 'n_embd', 'n_layer', 'n_head', 'layer_norm_epsilon', 'activation_function'])
        assert.equal(c[k], config[k], k);
      assert.equal(c.n_inner, 4 * config.n_embd);
      c.n_layer = 99;  // a copy
      assert.equal(model.config.n_layer, config.n_layer);
      assert.deepEqual(model.layers(), [0, 1].flatMap((i) => ['attn.c_attn', 'attn.c_proj', 'mlp.c_fc', 'mlp.c_proj'].map((l) => `h.${i}.${l}`)));
      assert.deepEqual(model.parameters(), [], 'a frozen base has nothing to train');
      assert.equal(model.checkpointBlocks, false);
      fc.scope(() => {
        const tokens = tokensOf(fc);
        const again = fc.nn.Gpt2.load(model.save(), model.config);
        assert.deepEqual(values(again.logits(tokens)), values(model.logits(tokens)));
        again.dispose();
        // A 16-bit base saves as stored.
        const half = fc.nn.Gpt2.load(modelBytes, config, { dtype: 'bf16' });
        const { tensors } = fc.decodeSafetensors(half.save());
        assert.equal(tensors['wte.weight'].dtype, 'bf16');
        assert.equal(tensors['wpe.weight'].dtype, 'f32');
        assert.deepEqual(values(fc.nn.Gpt2.load(half.save(), config, { dtype: 'bf16' }).logits(tokens)), values(half.logits(tokens)));
        half.dispose();
      });
      model.dispose();
    });

    test('full fine-tuning: the gradients match reference.grads', async () => {
      const fc = await engine(variant);
      const model = fc.nn.Gpt2.load(modelBytes, config, { trainable: true });
      const params = model.namedTensors();
      assert.equal(Object.keys(params).length, 4 + 12 * config.n_layer);
      fc.scope(() => {
        // The leaves themselves, in parameters()' order, holding the file's values.
        const { tensors: file } = fc.decodeSafetensors(modelBytes);
        const order = model.parameters();
        Object.entries(params).forEach(([name, p], i) => {
          assert.ok(p.requiresGrad, name);
          assert.deepEqual(values(p), values(file[name]), name);
          assert.deepEqual(values(order[i]), values(p), name);
        });
        assert.deepEqual(params['h.0.attn.c_attn.weight'].tags, ['e', 'qkv']);
        assert.deepEqual(params['wte.weight'].tags, ['vocab', 'e']);
      });
      fc.scope(() => {
        const loss = model.loss(tokensOf(fc));
        assertClose([loss.item()], [ref.loss.f32], 'loss');
        loss.backward();
        for (const [name, want] of Object.entries(ref.grads)) assertClose(values(params[name].grad()), want, `d loss / d ${name}`);
      });
      Object.values(params).forEach((p) => p.dispose());
      model.dispose();
    });

    test('LoRA: a peft adapter file loaded with its options gives the reference logits, loss and gradients', async () => {
      const fc = await engine(variant);
      const { options: lora } = ref.lora;
      const model = fc.nn.Gpt2.load(modelBytes, config);
      model.loadAdapters(adapterBytes, lora);
      const names = adapted(model, lora.targets);
      assert.deepEqual(names, ['h.0.attn.c_attn', 'h.0.attn.c_proj', 'h.0.mlp.c_proj', 'h.1.attn.c_attn', 'h.1.attn.c_proj', 'h.1.mlp.c_proj']);
      const params = model.parameters();
      assert.equal(params.length, 2 * names.length);
      // A{rank, in} and B{out, rank} hold the file's values.
      fc.scope(() => {
        const { tensors } = fc.decodeSafetensors(adapterBytes);
        names.forEach((n, i) => {
          const [a, b] = [params[2 * i], params[2 * i + 1]];
          assert.equal(a.tags[0], 'rank');
          assert.equal(b.tags[1], 'rank');
          assert.deepEqual(values(a), values(tensors[`base_model.model.transformer.${n}.lora_A.weight`]), n);
          assert.deepEqual(values(b), values(tensors[`base_model.model.transformer.${n}.lora_B.weight`]), n);
          assert.ok(a.requiresGrad && b.requiresGrad);
        });
      });
      fc.scope(() => {
        const tokens = tokensOf(fc);
        assertClose(values(model.logits(tokens)), ref.lora.logits, 'LoRA logits');
        const loss = model.loss(tokens);
        assertClose([loss.item()], [ref.lora.loss], 'LoRA loss');
        loss.backward();
        for (const [key, want] of Object.entries(ref.lora.grads)) {
          const [, layer, which] = key.match(/^(.*)\.lora_([AB])$/);
          const p = params[2 * names.indexOf(layer) + (which === 'A' ? 0 : 1)];
          assertClose(values(p.grad()), want, `d loss / d ${key}`);
        }
      });
      params.forEach((p) => p.dispose());
      model.dispose();
    });

    test('adapters: saveAdapters -> loadAdapters on a fresh base, the peft layout, and mergeAdapters', async () => {
      const fc = await engine(variant);
      const model = fc.nn.Gpt2.load(modelBytes, config);
      model.loadAdapters(adapterBytes, ref.lora.options);
      const saved = model.saveAdapters();
      fc.scope(() => {
        const { tensors, metadata } = fc.decodeSafetensors(saved);
        const names = Object.keys(tensors).sort();
        assert.equal(names.length, 12);
        assert.ok(names.every((n) => /^base_model\.model\.transformer\.h\.\d\.(attn\.c_attn|attn\.c_proj|mlp\.c_proj)\.lora_[AB]\.weight$/.test(n)), names.join());
        const note = JSON.parse(metadata['fucina.lora']);
        assert.deepEqual([note.rank, note.alpha, note.dropout, note.targets], [4, 8, 0, ['c_attn', 'c_proj']]);
      });
      const tokens = tokensOf(fc);
      const want = fc.scope(() => values(model.logits(tokens)));
      // The metadata rebuilds the adapters: no options needed.
      const fresh = fc.nn.Gpt2.load(modelBytes, config);
      fresh.loadAdapters(saved);
      assert.equal(fresh.parameters().map((p) => p.dispose()).length, 12);
      fc.scope(() => assert.deepEqual(values(fresh.logits(tokens)), want));
      // Loading again into a model that has the adapters copies the values in place.
      fresh.loadAdapters(saved);
      fc.scope(() => assert.deepEqual(values(fresh.logits(tokens)), want));
      // A peft file without its options is refused, and leaves the model without adapters.
      const bare = fc.nn.Gpt2.load(modelBytes, config);
      throwsCode(() => bare.loadAdapters(adapterBytes), 'InvalidArgument');
      assert.deepEqual(bare.parameters(), []);
      bare.dispose();
      // Merged: the same logits from plain f32 weights; no adapters left.
      model.mergeAdapters();
      assert.deepEqual(model.parameters(), []);
      throwsCode(() => model.saveAdapters(), 'InvalidArgument');
      fc.scope(() => {
        assertClose(values(model.logits(tokens)), want, 'merged logits', { atol: 1e-5, rtol: 1e-5 });
        assertClose(values(model.logits(tokens)), ref.lora.logits, 'merged logits vs PyTorch');
        // save() then exports the fine-tuned model.
        const exported = fc.nn.Gpt2.load(model.save(), config);
        assert.deepEqual(values(exported.logits(tokens)), values(model.logits(tokens)));
        exported.dispose();
      });
      // A merged q8_0 base: the adapted layers become f32, the rest stays q8_0.
      const q8 = fc.nn.Gpt2.load(modelBytes, config, { dtype: 'q8_0' });
      q8.loadAdapters(saved);
      const before = fc.scope(() => values(q8.logits(tokens)));
      const q8Bytes = fc.memory().bytesByDtype.q8_0;
      q8.mergeAdapters();
      assert.ok(fc.memory().bytesByDtype.q8_0 < q8Bytes, 'merged weights leave q8_0');
      fc.scope(() => assertClose(values(q8.logits(tokens)), before, 'merged q8_0 logits', { atol: 1e-5, rtol: 1e-5 }));
      [model, fresh, q8].forEach((m) => m.dispose());
      tokens.dispose();
    });

    test('generate: seeded, greedy at temperature 0 and with topK 1, stopped by onToken', async () => {
      const fc = await engine(variant);
      const base = fc.memory().liveTensors;
      const model = fc.nn.Gpt2.load(modelBytes, config);
      const prompt = ref.tokens[0].slice(0, 5);
      const a = model.generate(prompt, { maxTokens: 8, seed: 1 });
      assert.ok(Array.isArray(a));
      assert.equal(a.length, 8);
      assert.ok(a.every((id) => Number.isInteger(id) && id >= 0 && id < VOCAB), a.join());
      assert.deepEqual(model.generate(Int32Array.from(prompt), { maxTokens: 8, seed: 1 }), a, 'deterministic for a seed');
      const seeds = new Set([1, 2, 3, 4].map((seed) => model.generate(prompt, { maxTokens: 8, seed }).join()));
      assert.ok(seeds.size > 1, 'the seed changes the samples');

      // Greedy: each token is the argmax of the logits at the last position.
      const greedy = model.generate(prompt, { maxTokens: 6, temperature: 0 });
      const context = [...prompt];
      for (const token of greedy) {
        const last = fc.scope(() => values(model.logits(fc.constant(['batch', 't'], [1, context.length], context, 'i32')))
          .slice((context.length - 1) * VOCAB));
        assert.equal(token, last.indexOf(Math.max(...last)));
        context.push(token);
      }
      assert.deepEqual(model.generate(prompt, { maxTokens: 6, topK: 1, seed: 9 }), greedy, 'topK 1 is greedy');
      assert.deepEqual(model.generate(prompt, { maxTokens: 0 }), []);

      // onToken sees every token in order; returning false stops after that token.
      const seen = [];
      assert.deepEqual(model.generate(prompt, { maxTokens: 8, seed: 1, onToken: (id) => { seen.push(id); } }), a);
      assert.deepEqual(seen, a);
      let n = 0;
      assert.deepEqual(model.generate(prompt, { maxTokens: 8, seed: 1, onToken: () => ++n < 3 }), a.slice(0, 3));

      // A prompt longer than n_positions: the last n_positions tokens are the context.
      const long = Array.from({ length: config.n_positions + 7 }, (_, i) => (i * 7) % VOCAB);
      assert.deepEqual(model.generate(long, { maxTokens: 3, temperature: 0 }),
        model.generate(long.slice(-config.n_positions), { maxTokens: 3, temperature: 0 }));

      // What onToken throws comes out as thrown, and nothing leaks.
      const live = fc.memory().liveTensors;
      const boom = new Error('stop here');
      assert.throws(() => model.generate(prompt, { onToken: () => { throw boom; } }), (e) => e === boom);
      assert.equal(fc.memory().liveTensors, live);
      // Gradients are off while generating, and back on afterwards.
      let recording;
      model.generate(prompt, { maxTokens: 1, onToken: () => { recording = fc.isGradEnabled(); } });
      assert.equal(recording, false);
      assert.equal(fc.isGradEnabled(), true);
      throwsCode(() => model.generate([VOCAB], {}), 'IndexOutOfRange');
      throwsCode(() => model.generate([], {}), 'InvalidArgument');

      // Disposed from its own onToken: generate finishes, then the model is freed.
      const doomed = fc.nn.Gpt2.load(modelBytes, config);
      const out = doomed.generate(prompt, { maxTokens: 3, seed: 1, onToken: () => doomed.dispose() });
      assert.deepEqual(out, a.slice(0, 3));
      assert.ok(doomed.isDisposed);
      throwsCode(() => doomed.generate(prompt), 'InvalidArgument');
      model.dispose();
      assert.equal(fc.memory().liveTensors, base, 'both models freed');
    });

    test('checkpointBlocks gives the same loss and gradients (full and LoRA)', async () => {
      const fc = await engine(variant);
      const run = (model) => fc.scope(() => {
        const params = model.parameters();
        params.forEach((p) => p.zeroGrad());
        const loss = model.loss(tokensOf(fc));
        loss.backward();
        return [loss.item(), ...params.map((p) => values(p.grad()))];
      });
      for (const [what, make] of [
        ['full', () => fc.nn.Gpt2.load(modelBytes, config, { trainable: true })],
        ['LoRA with dropout', () => {
          const m = fc.nn.Gpt2.load(modelBytes, config);
          m.loadAdapters(adapterBytes, { ...ref.lora.options, dropout: 0.25 });
          return m;
        }],
      ]) {
        const plain = make();
        const checkpointed = make();
        checkpointed.checkpointBlocks = true;
        assert.equal(checkpointed.checkpointBlocks, true);
        const [want, got] = [run(plain), run(checkpointed)];
        assert.equal(got[0], want[0], `${what}: loss`);
        if (what.includes('dropout')) assert.ok(Math.abs(want[0] - ref.lora.loss) > 1e-3, 'the dropout is on');
        for (let i = 1; i < want.length; ++i) assertClose(got[i], want[i], `${what}: gradient ${i - 1}`, { atol: 1e-6, rtol: 1e-5 });
        plain.dispose();
        checkpointed.dispose();
      }
      // A checkpointed model loaded as such.
      const m = fc.nn.Gpt2.load(modelBytes, config, { checkpointBlocks: true, trainable: true });
      assert.equal(m.checkpointBlocks, true);
      m.dispose();
    });

    test('memory: dispose frees the model, parameters() handles live until disposed, q8_0 counts its blocks', async () => {
      const fc = await engine(variant);
      const tokens = tokensOf(fc);
      const base = fc.memory();
      const model = fc.nn.Gpt2.load(modelBytes, config, { dtype: 'q8_0' });
      const loaded = fc.memory();
      // wte and the four projections of each block, 34 bytes per 32 values.
      const { n_embd: d, n_layer: layers } = config;
      const q8Values = VOCAB * d + layers * (d * 3 * d + d * d + 2 * d * 4 * d);
      assert.equal(loaded.bytesByDtype.q8_0 - base.bytesByDtype.q8_0, (q8Values / 32) * 34);
      // The rest stays f32: wpe, the LayerNorms and the biases.
      const f32Values = config.n_positions * d + 2 * d + layers * (4 * d + 3 * d + d + 4 * d + d);
      assert.equal(loaded.bytesByDtype.f32 - base.bytesByDtype.f32, f32Values * 4);
      const adapters = fc.nn.lora(model, { rank: 4, targets: ['c_attn'] });
      fc.scope(() => model.loss(tokens).backward());
      model.dispose();
      assert.ok(fc.memory().liveTensors > base.liveTensors, 'the adapters are alive in their handles');
      adapters.forEach((t) => {
        const g = t.grad();
        assert.ok(g !== null);
        g.dispose();
        t.dispose();
      });
      assert.equal(fc.memory().liveTensors, base.liveTensors);
      assert.equal(fc.memory().liveBytes, base.liveBytes);
      model.dispose();  // twice is nothing
      throwsCode(() => model.logits(tokens), 'InvalidArgument');
      tokens.dispose();
    });

    test('a fresh model: Hugging Face initialisation from a seed, trainable or frozen', async () => {
      const fc = await engine(variant);
      const small = { n_embd: 32, n_layer: 1, n_head: 2, n_positions: 8, vocab_size: 16 };
      const a = new fc.nn.Gpt2(small, 5, { trainable: true });
      const b = new fc.nn.Gpt2(small, 5, { trainable: true });
      const c = new fc.nn.Gpt2(small, 6, { trainable: true });
      const [pa, pb, pc] = [a, b, c].map((m) => m.parameters());
      assert.equal(pa.length, 16);
      assert.deepEqual(pa.map(values), pb.map(values), 'the same seed, the same weights');
      assert.notDeepEqual(values(pa[0]), values(pc[0]));
      const wte = values(pa[0]);
      const std = Math.sqrt(wte.reduce((s, x) => s + x * x, 0) / wte.length);
      assert.ok(Math.abs(std - 0.02) < 0.002, `wte std ${std}`);
      fc.scope(() => {
        const tokens = fc.constant(['batch', 't'], [2, 8], Array.from({ length: 16 }, (_, i) => i), 'i32');
        assert.ok(Math.abs(a.loss(tokens).item() - Math.log(16)) < 0.05, 'small weights: about ln(vocab)');
        const frozen = new fc.nn.Gpt2(small, 5, { dtype: 'q8_0' });
        assert.deepEqual(frozen.parameters(), []);
        // The same weights, quantized: the logits (about ±0.1) within q8_0's error of the f32 ones.
        assertClose(values(frozen.logits(tokens)), values(a.logits(tokens)), 'q8_0 vs f32 fresh logits', { atol: 1e-2, rtol: 0 });
        assert.equal(frozen.namedTensors()['h.0.mlp.c_fc.weight'].dtype, 'q8_0');
        frozen.dispose();
      });
      [...pa, ...pb, ...pc].forEach((p) => p.dispose());
      [a, b, c].forEach((m) => m.dispose());
    });

    test('tokens are checked up front, naming the method', async () => {
      const fc = await engine(variant);
      const model = fc.nn.Gpt2.load(modelBytes, config);
      fc.scope(() => {
        const e = throwsCode(() => model.logits(fc.constant(['batch', 't'], [1, 2], [3, VOCAB], 'i32')), 'IndexOutOfRange');
        assert.match(e.message, /nn\.Gpt2\.logits: tokens hold 96 .*vocab_size 96/);
        assert.match(throwsCode(() => model.logits(fc.zeros(['t'], [2])), 'DTypeMismatch').message, /nn\.Gpt2\.logits: tokens must be an i32 or i64/);
        assert.match(throwsCode(() => model.loss(fc.zeros(['t'], [1], 'i32')), 'InvalidArgument').message, /loss takes 2 to 33/);
        assert.match(throwsCode(() => model.logits(fc.zeros(['t'], [33], 'i32')), 'InvalidArgument').message, /logits takes 1 to 32/);
        assert.match(throwsCode(() => model.logits(fc.zeros(['vocab', 't'], [1, 2], 'i32')), 'ShapeMismatch').message, /must not have 'vocab'/);
        // Any batch axes: none, or several; i64 too.
        const one = values(model.logits(fc.constant(['t'], [3], [1, 2, 3], 'i64')));
        const many = values(model.logits(fc.constant(['x', 'y', 't'], [2, 1, 3], [1, 2, 3, 1, 2, 3], 'i32')));
        assert.deepEqual(many, [...one, ...one]);
        throwsCode(() => new fc.nn.Gpt2({ ...config, n_head: 5 }), 'InvalidArgument');
        throwsCode(() => fc.nn.Gpt2.load(modelBytes, { ...config, n_embd: 32 }), 'ShapeMismatch');
        throwsCode(() => fc.nn.Gpt2.load(modelBytes, config, { dtype: 'f16', trainable: true }), 'InvalidArgument');
      });
      model.dispose();
    });

    test('LoraLinear: a frozen layer of any dtype with a low-rank adapter', async () => {
      const fc = await engine(variant);
      const live = fc.memory().liveTensors;
      fc.scope(() => {
        const [IN, OUT] = [32, 6];
        const w = fc.normal(['in', 'out'], [IN, OUT], 0, 0.3, 1);
        const bias = fc.normal(['out'], [OUT], 0, 0.1, 2);
        const x = fc.normal(['batch', 'in'], [3, IN], 0, 1, 3);
        const layer = new fc.nn.LoraLinear(fc.variable(w), bias, 'in', 'out');
        assert.deepEqual([layer.in, layer.out, layer.a, layer.b, layer.scale], ['in', 'out', null, null, 0]);
        assert.equal(layer.weight.requiresGrad, false, 'a leaf given is detached: the base is frozen');
        assert.deepEqual(layer.parameters(), []);
        const plain = values(x.addDot(w, 'in', bias));
        assertClose(values(layer.forward(x)), plain, 'frozen forward', { atol: 1e-6, rtol: 1e-6 });

        layer.adapt({ rank: 4, alpha: 2, seed: 7 });
        assert.deepEqual([layer.a.tags, layer.a.shape, layer.b.tags, layer.b.shape], [['rank', 'in'], [4, IN], ['out', 'rank'], [OUT, 4]]);
        assert.equal(layer.scale, 0.5);
        assert.deepEqual(layer.parameters(), [layer.a, layer.b]);
        assert.ok(values(layer.b).every((v) => v === 0), 'B starts at zero');
        const bound = 1 / Math.sqrt(IN);
        assert.ok(values(layer.a).every((v) => Math.abs(v) <= bound));
        assertClose(values(layer.forward(x)), plain, 'a fresh adapter changes nothing', { atol: 1e-6, rtol: 1e-6 });

        // One SGD step moves B; forward is then x·W + b + scale·(x·Aᵀ)·Bᵀ, and merge folds it in.
        const opt = fc.optim.sgd(layer.parameters(), { lr: 0.5 });
        layer.forward(x).sumAll().backward();
        assert.ok(layer.a.grad() !== null && layer.b.grad() !== null);
        opt.step();
        opt.dispose();
        const delta = layer.b.dot(layer.a, 'rank').scale(0.5);  // {out, in}
        const want = values(x.addDot(w, 'in', bias).add(x.dot(delta, 'in')));
        assertClose(values(layer.forward(x)), want, 'adapted forward', { atol: 1e-5, rtol: 1e-5 });
        const merged = layer.merge();
        assert.deepEqual([merged.tags, merged.dtype, merged.requiresGrad], [['in', 'out'], 'f32', false]);
        assertClose(values(merged), values(w.add(delta)), 'merge', { atol: 1e-6, rtol: 1e-6 });

        // A q8_0 base {out, in} with blocks along in, and no bias.
        const q = w.permuteTo(['out', 'in']).contiguous().quantize('q8_0', 'in');
        const q8 = new fc.nn.LoraLinear(q, null, 'in', 'out');
        q8.adapt({ rank: 2 });
        assertClose(values(q8.forward(x)), values(x.dot(q.to('f32'), 'in')), 'q8_0 forward', { atol: 1e-5, rtol: 1e-5 });
        assert.deepEqual(q8.merge().tags, ['out', 'in']);

        // Dropout on the adapter's input: a mask per seed given (training), none without one.
        const drop = new fc.nn.LoraLinear(w, null, 'in', 'out');
        drop.adapt({ rank: 2, alpha: 2, dropout: 0.5 });
        fc.nn.loadParameters([drop.b], fc.nn.saveParameters([fc.ones(['out', 'rank'], [OUT, 2])]));
        const [s1, s1again, s2] = [1, 1, 2].map((s) => values(drop.forward(x, s)));
        assert.deepEqual(s1, s1again);
        assert.notDeepEqual(s1, s2);
        const full = values(x.dot(w, 'in').add(x.dot(drop.a, 'in').dot(drop.b, 'rank')));
        assertClose(values(drop.forward(x)), full, 'no dropout without a seed', { atol: 1e-5, rtol: 1e-5 });
        assert.notDeepEqual(s1, values(drop.forward(x)));

        throwsCode(() => layer.forward(fc.ones(['batch', 'in'], [1, 3])), 'ShapeMismatch');
        throwsCode(() => new fc.nn.LoraLinear(w, fc.ones(['out'], [5]), 'in', 'out'), 'ShapeMismatch');
        throwsCode(() => layer.adapt({ rank: 0 }), 'InvalidArgument');
        for (const l of [layer, q8, drop]) l.dispose();
        assert.equal(layer.a, null);
        throwsCode(() => layer.forward(x), 'InvalidArgument');
      });
      assert.equal(fc.memory().liveTensors, live);
    });

    test('LoRA fine-tuning of a frozen q8_0 base: the loss falls', async () => {
      const fc = await engine(variant);
      const model = fc.nn.Gpt2.load(modelBytes, config, { dtype: 'q8_0', checkpointBlocks: true });
      const adapters = fc.nn.lora(model, { rank: 4, alpha: 8, targets: ['c_attn', 'c_proj', 'c_fc'], seed: 1 });
      assert.equal(adapters.length, 2 * 4 * config.n_layer, 'c_proj is the attention\'s and the MLP\'s');
      const opt = fc.optim.adam(adapters, { lr: 1e-2 });
      const tokens = tokensOf(fc);
      const losses = [];
      for (let step = 0; step < 30; ++step) {
        losses.push(fc.scope(() => {
          opt.zeroGrad();
          const loss = model.loss(tokens);
          loss.backward();
          opt.step();
          return loss.item();
        }));
      }
      assertClose([losses[0]], [ref.loss.q8_0], 'the first loss is the base\'s');
      assert.ok(losses.every(Number.isFinite));
      assert.ok(losses.at(-1) < 0.1 * losses[0], `loss ${losses[0]} -> ${losses.at(-1)}`);
      // The adapters alone carry what was learnt.
      const fresh = fc.nn.Gpt2.load(modelBytes, config, { dtype: 'q8_0' });
      fresh.loadAdapters(model.saveAdapters());
      fc.scope(() => assertClose([fresh.loss(tokens).item()], [model.loss(tokens).item()], 'reloaded adapters', { atol: 1e-6, rtol: 1e-6 }));
      opt.dispose();
      adapters.forEach((t) => t.dispose());
      fresh.parameters().forEach((t) => t.dispose());
      [model, fresh].forEach((m) => m.dispose());
      tokens.dispose();
    });
  });
}
