// Llama-family models in JS: fc.nn.Llama (C++'s nn::Llama, bound) against tests/fixtures/llama
// (GQA, untied head, llama3 rope scaling, F32 file) and tests/fixtures/qwen2 (q/k/v biases, tied
// head, BF16 file), with the float64 PyTorch reference of tests/fixtures/llama_fixture.py: logits
// and loss per base dtype, full fine-tuning gradients, a PEFT adapter and its gradients; then
// loading tensor by tensor (shards, Blobs, the heap's peak), PEFT files out and back, generation,
// errors, and a short LoRA run.
import { describe, test } from 'node:test';
import { readFileSync } from 'node:fs';
import { VARIANTS, engine, values, assert, assertClose, throwsCode } from './helpers.mjs';

const read = (dir, name) => readFileSync(new URL(`../fixtures/${dir}/${name}`, import.meta.url));
const FIXTURES = Object.fromEntries(['llama', 'qwen2'].map((dir) => [dir, {
  bytes: new Uint8Array(read(dir, 'model.safetensors')),
  config: JSON.parse(read(dir, 'config.json')),
  ref: JSON.parse(read(dir, 'reference.json')),
}]));
const peftBytes = new Uint8Array(read('llama', 'adapter_model.safetensors'));
const peftConfig = JSON.parse(read('llama', 'adapter_config.json'));

const maxAbsDiff = (a, b) => a.reduce((m, x, i) => Math.max(m, Math.abs(x - b[i])), 0);
const tokensOf = (fc, ref) => fc.constant(['batch', 't'], [ref.tokens.length, ref.tokens[0].length], ref.tokens.flat(), 'i32');
const SEVEN = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'];

for (const variant of VARIANTS) {
  describe(variant, () => {
    test('load: llama and qwen2 logits and loss match the PyTorch reference for f32, f16, bf16 and q8_0 bases', async () => {
      const fc = await engine(variant);
      for (const [dir, { bytes, config, ref }] of Object.entries(FIXTURES)) {
        const tokens = tokensOf(fc, ref);
        for (const dtype of ['f32', 'f16', 'bf16', 'q8_0']) {
          const model = fc.nn.Llama.load(bytes, config, { dtype });
          assert.equal(model.dtype, dtype);
          fc.scope(() => {
            const logits = model.logits(tokens);
            assert.deepEqual([logits.tags, logits.shape], [['batch', 't', 'vocab'], [...tokens.shape, config.vocab_size]]);
            const got = values(logits);
            assertClose(got, ref.logits[dtype], `${dir} ${dtype} logits`);
            assertClose([model.loss(tokens).item()], [ref.loss[dtype]], `${dir} ${dtype} loss`);
            if (ref.max_abs_vs_f32[dtype] > 0) assert.ok(maxAbsDiff(got, ref.logits.f32) > 0.5 * ref.max_abs_vs_f32[dtype]);
          });
          model.dispose();
        }
        tokens.dispose();
      }
    });

    test('config, layers, namedTensors, and a model saved and loaded again', async () => {
      const fc = await engine(variant);
      const { bytes, config, ref } = FIXTURES.qwen2;
      const model = fc.nn.Llama.load(bytes, config, { dtype: 'bf16' });
      const c = model.config;
      for (const k of ['model_type', 'vocab_size', 'hidden_size', 'num_hidden_layers', 'num_attention_heads',
        'num_key_value_heads', 'intermediate_size', 'max_position_embeddings', 'rope_theta', 'tie_word_embeddings'])
        assert.equal(c[k], config[k], k);
      assert.equal(c.head_dim, 16);
      assert.deepEqual(model.layers(), [0, 1].flatMap((i) => SEVEN.map((p) => `layers.${i}.${p.endsWith('proj') && ['gate_proj', 'up_proj', 'down_proj'].includes(p) ? 'mlp' : 'self_attn'}.${p}`)));
      fc.scope(() => {
        const named = model.namedTensors();
        assert.equal(named['model.embed_tokens.weight'].dtype, 'bf16');
        assert.deepEqual(named['model.layers.0.self_attn.q_proj.weight'].tags, ['q', 'e']);
        assert.deepEqual(named['model.layers.0.self_attn.k_proj.bias'].tags, ['kv']);
        assert.equal(named['model.norm.weight'].dtype, 'f32');
        assert.ok(!('lm_head.weight' in named), 'the head is tied');
        const tokens = tokensOf(fc, ref);
        const again = fc.nn.Llama.load(model.save(), model.config, { dtype: 'bf16' });
        assert.deepEqual(values(again.logits(tokens)), values(model.logits(tokens)));
        again.dispose();
      });
      model.dispose();
    });

    test('full fine-tuning: the gradients match reference.grads', async () => {
      const fc = await engine(variant);
      for (const [dir, { bytes, config, ref }] of Object.entries(FIXTURES)) {
        const model = fc.nn.Llama.load(bytes, config, { trainable: true, checkpointBlocks: true });
        const params = model.namedTensors();
        assert.equal(model.parameters().length, Object.keys(params).length);
        fc.scope(() => {
          const loss = model.loss(tokensOf(fc, ref));
          assertClose([loss.item()], [ref.loss.f32], `${dir} loss`);
          loss.backward();
          for (const [name, want] of Object.entries(ref.grads)) assertClose(values(params[name].grad()), want, `${dir} d loss / d ${name}`);
        });
        Object.values(params).forEach((p) => p.dispose());
        model.dispose();
      }
    });

    test('PEFT: loadPeft reads PyTorch\'s adapter files and gives the reference logits, loss and gradients', async () => {
      const fc = await engine(variant);
      const { bytes, config, ref } = FIXTURES.llama;
      const model = fc.nn.Llama.load(bytes, config);
      fc.nn.loadPeft(model, peftBytes, peftConfig);
      const params = model.parameters();
      assert.equal(params.length, 2 * 7 * config.num_hidden_layers);
      const names = model.layers();
      fc.scope(() => {
        const tokens = tokensOf(fc, ref);
        assertClose(values(model.logits(tokens)), ref.lora.logits, 'LoRA logits');
        const loss = model.loss(tokens);
        assertClose([loss.item()], [ref.lora.loss], 'LoRA loss');
        loss.backward();
        for (const [key, want] of Object.entries(ref.lora.grads)) {
          const [, layer, which] = key.match(/^(.*)\.lora_([AB])$/);
          assertClose(values(params[2 * names.indexOf(layer) + (which === 'A' ? 0 : 1)].grad()), want, `d loss / d ${key}`);
        }
      });
      params.forEach((p) => p.dispose());
      model.dispose();
    });

    test('PEFT: exportPeft writes PEFT\'s names and adapter_config.json; loadPeft puts them on a fresh base', async () => {
      const fc = await engine(variant);
      const { bytes, config, ref } = FIXTURES.llama;
      const model = fc.nn.Llama.load(bytes, config, { dtype: 'q8_0' });
      const adapters = fc.nn.lora(model, { rank: 2, alpha: 4, targets: ['q_proj', 'v_proj', 'down_proj'], seed: 3 });
      const opt = fc.optim.adam(adapters, { lr: 1e-2 });  // two steps: B is no longer zero
      for (let step = 0; step < 2; ++step)
        fc.scope(() => {
          opt.zeroGrad();
          model.loss(tokensOf(fc, ref)).backward();
          opt.step();
        });
      opt.dispose();
      const peft = fc.nn.exportPeft(model);
      assert.ok(peft.safetensors instanceof Uint8Array);
      assert.deepEqual([peft.config.peft_type, peft.config.task_type, peft.config.r, peft.config.lora_alpha, peft.config.bias, peft.config.fan_in_fan_out],
        ['LORA', 'CAUSAL_LM', 2, 4, 'none', false]);
      assert.deepEqual(peft.config.target_modules, ['q_proj', 'v_proj', 'down_proj']);
      fc.scope(() => {
        const { tensors } = fc.decodeSafetensors(peft.safetensors);
        assert.equal(Object.keys(tensors).length, 2 * 3 * config.num_hidden_layers);
        assert.deepEqual(tensors['base_model.model.model.layers.1.mlp.down_proj.lora_A.weight'].shape, [2, config.intermediate_size]);
        assert.deepEqual(tensors['base_model.model.model.layers.1.mlp.down_proj.lora_B.weight'].shape, [config.hidden_size, 2]);
      });
      // JSON.stringify'd and parsed back, as files travel.
      const fresh = fc.nn.Llama.load(bytes, config, { dtype: 'q8_0' });
      fc.nn.loadPeft(fresh, peft.safetensors, JSON.parse(JSON.stringify(peft.config)));
      fc.scope(() => {
        const tokens = tokensOf(fc, ref);
        assert.deepEqual(values(fresh.logits(tokens)), values(model.logits(tokens)));
      });
      // target_modules as PEFT's regular expression over its module names, and as 'all-linear'.
      const byRegex = fc.nn.Llama.load(bytes, config, { dtype: 'q8_0' });
      fc.nn.loadPeft(byRegex, peft.safetensors, { ...peft.config, target_modules: String.raw`model\.layers\.\d+\.(self_attn\.[qv]|mlp\.down)_proj` });
      fc.scope(() => assert.deepEqual(values(byRegex.logits(tokensOf(fc, ref))), values(model.logits(tokensOf(fc, ref)))));
      throwsCode(() => fc.nn.loadPeft(fresh, peft.safetensors, { ...peft.config, target_modules: '(' }), 'InvalidArgument');
      throwsCode(() => fc.nn.loadPeft(fresh, peft.safetensors, { ...peft.config, target_modules: 'nothing' }), 'InvalidArgument');
      const all = fc.nn.Llama.load(bytes, config);
      fc.nn.loadPeft(all, peftBytes, { ...peftConfig, target_modules: 'all-linear' });
      assert.equal(all.parameters().length, 2 * 7 * config.num_hidden_layers);
      // GPT-2's adapters: PEFT's Conv1D names, fan_in_fan_out.
      const gpt2Bytes = new Uint8Array(read('gpt2', 'model.safetensors'));
      const gpt2 = fc.nn.Gpt2.load(gpt2Bytes, JSON.parse(read('gpt2', 'config.json')));
      const gpt2Adapters = fc.nn.lora(gpt2, { targets: ['c_attn'] });
      const gp = fc.nn.exportPeft(gpt2);
      assert.equal(gp.config.fan_in_fan_out, true);
      fc.scope(() => assert.ok('base_model.model.transformer.h.0.attn.c_attn.lora_A.weight' in fc.decodeSafetensors(gp.safetensors).tensors));
      for (const t of [...adapters, ...gpt2Adapters, ...fresh.parameters(), ...byRegex.parameters(), ...all.parameters()]) t.dispose();
      [model, fresh, gpt2, byRegex, all].forEach((m) => m.dispose());
    });

    test('loading tensor by tensor: shards, Blobs, and a heap that holds the model plus one tensor', async () => {
      const fc = await engine(variant);
      const { bytes, config, ref } = FIXTURES.llama;
      const tokens = tokensOf(fc, ref);
      const whole = fc.nn.Llama.load(bytes, config, { dtype: 'q8_0' });
      const want = fc.scope(() => values(whole.logits(tokens)));
      // Two shards (as model-0000N-of-00002.safetensors), and the same as Blobs.
      const shards = fc.scope(() => {
        const { tensors } = fc.decodeSafetensors(bytes);
        const names = Object.keys(tensors);
        const half = (part) => Object.fromEntries(names.filter((_, i) => (i % 2) === part).map((n) => [n, tensors[n]]));
        return [fc.encodeSafetensors(half(0)), fc.encodeSafetensors(half(1))];
      });
      const sharded = fc.nn.Llama.load(shards, config, { dtype: 'q8_0' });
      const blobs = await fc.nn.Llama.loadAsync(shards.map((s) => new Blob([s])), config, { dtype: 'q8_0' });
      fc.scope(() => {
        assert.deepEqual(values(sharded.logits(tokens)), want);
        assert.deepEqual(values(blobs.logits(tokens)), want);
      });
      // The heap's peak during a load: the model as stored, plus one file tensor and its widening.
      fc.trimCache();
      const before = fc.memory().liveBytes;
      fc.resetPeak();
      const loaded = fc.nn.Llama.load(bytes, config, { dtype: 'q8_0' });
      const { liveBytes, peakBytes } = fc.memory();
      const largest = config.vocab_size * config.hidden_size * 4;  // embed_tokens / lm_head in F32
      assert.ok(peakBytes - before <= liveBytes - before + 3 * largest, `peak ${peakBytes - before}, model ${liveBytes - before}`);
      assert.ok(liveBytes - before < bytes.length / 3, 'q8_0 keeps about a quarter of the F32 file');
      [whole, sharded, blobs, loaded].forEach((m) => m.dispose());
      tokens.dispose();
    });

    test('generate: seeded, greedy at temperature 0 (the argmax of full forwards), through the KV cache', async () => {
      const fc = await engine(variant);
      const { bytes, config } = FIXTURES.qwen2;
      const model = fc.nn.Llama.load(bytes, config, { dtype: 'q8_0' });
      const prompt = [5, 17, 3];
      const a = model.generate(prompt, { maxTokens: 6, seed: 9, topK: 20 });
      assert.deepEqual(model.generate(prompt, { maxTokens: 6, seed: 9, topK: 20 }), a);
      assert.equal(a.length, 6);
      const seen = [];
      const greedy = model.generate(prompt, { maxTokens: 5, temperature: 0, onToken: (id) => { seen.push(id); } });
      assert.deepEqual(seen, greedy);
      const ids = [...prompt];
      for (const next of greedy) {
        fc.scope(() => {
          const logits = model.logits(fc.constant(['batch', 't'], [1, ids.length], ids, 'i32'));
          assert.equal(logits.select('batch', 0).select('t', ids.length - 1).argmax('vocab').item(), next);
        });
        ids.push(next);
      }
      model.dispose();
    });

    test('bad configs, files, tokens and PEFT options are typed errors', async () => {
      const fc = await engine(variant);
      const { bytes, config } = FIXTURES.llama;
      for (const key of ['hidden_size', 'num_attention_heads', 'vocab_size', 'max_position_embeddings', 'model_type']) {
        const { [key]: _, ...missing } = config;
        throwsCode(() => fc.nn.Llama.load(bytes, missing), 'InvalidArgument');
      }
      throwsCode(() => fc.nn.Llama.load(bytes, { ...config, model_type: 'gpt2' }), 'InvalidArgument');
      throwsCode(() => fc.nn.Llama.load(bytes, { ...config, intermediate_size: 128 }), 'ShapeMismatch');
      throwsCode(() => fc.nn.Llama.load(bytes, { ...config, rope_scaling: { rope_type: 'yarn', factor: 4 } }), 'InvalidArgument');
      throwsCode(() => fc.nn.Llama.load(bytes.subarray(0, 100), config), 'InvalidArgument');
      throwsCode(() => fc.nn.Llama.load([], config), 'InvalidArgument');
      throwsCode(() => fc.nn.Llama.load(Array.from(bytes), config), 'InvalidArgument');
      throwsCode(() => fc.nn.Llama.load(bytes, config, { dtype: 'i32' }), 'InvalidArgument');
      throwsCode(() => fc.nn.Llama.load(bytes, config, { dtype: 'q8_0', trainable: true }), 'InvalidArgument');
      throwsCode(() => fc.nn.Llama.load(bytes, 'config.json'), 'InvalidArgument');
      await assert.rejects(fc.nn.Llama.loadAsync(bytes, config), (e) => e.code === 'InvalidArgument');
      const model = fc.nn.Llama.load(bytes, config);
      throwsCode(() => model.logits(fc.constant(['batch', 't'], [1, 2], [1, config.vocab_size], 'i32')), 'IndexOutOfRange');
      throwsCode(() => model.logits(fc.constant(['batch', 't'], [1, 2], [1, 2], 'f32')), 'DTypeMismatch');
      throwsCode(() => model.logits(fc.constant(['kv', 't'], [1, 2], [1, 2], 'i32')), 'ShapeMismatch');
      throwsCode(() => model.loss(fc.constant(['batch', 't'], [1, 1], [1], 'i32')), 'InvalidArgument');
      throwsCode(() => fc.nn.exportPeft(model), 'InvalidArgument');
      throwsCode(() => fc.nn.lora(model, { targets: ['c_attn'] }), 'InvalidArgument');
      throwsCode(() => fc.nn.exportPeft({}), 'InvalidArgument');
      for (const bad of [{ use_dora: true }, { peft_type: 'IA3' }, { bias: 'all' }, { rank_pattern: { q_proj: 8 } }, { r: 8 }, { target_modules: ['nothing'] }]) {
        assert.throws(() => fc.nn.loadPeft(model, peftBytes, { ...peftConfig, ...bad }), (e) => ['InvalidArgument', 'ShapeMismatch'].includes(e.code), JSON.stringify(bad));
        assert.deepEqual(model.parameters(), [], 'a refused file changes nothing');
      }
      throwsCode(() => fc.nn.loadPeft(model, peftBytes, '{}'), 'InvalidArgument');
      model.dispose();
      throwsCode(() => model.logits(fc.constant(['batch', 't'], [1, 1], [1], 'i32')), 'InvalidArgument');
    });

    test('LoRA fine-tuning of a frozen q8_0 base, checkpointed: the loss falls', async () => {
      const fc = await engine(variant);
      const { bytes, config, ref } = FIXTURES.qwen2;
      const model = fc.nn.Llama.load(bytes, config, { dtype: 'q8_0', checkpointBlocks: true });
      const adapters = fc.nn.lora(model, { rank: 4, alpha: 8, targets: SEVEN, seed: 1 });
      assert.equal(adapters.length, 2 * 7 * config.num_hidden_layers);
      const opt = fc.optim.adam(adapters, { lr: 1e-2 });
      const tokens = tokensOf(fc, ref);
      const losses = [];
      for (let step = 0; step < 30; ++step)
        losses.push(fc.scope(() => {
          opt.zeroGrad();
          const loss = model.loss(tokens);
          loss.backward();
          opt.step();
          return loss.item();
        }));
      assertClose([losses[0]], [ref.loss.q8_0], 'the first loss is the base\'s');
      assert.ok(losses.at(-1) < 0.2 * losses[0], `loss ${losses[0]} -> ${losses.at(-1)}`);
      opt.dispose();
      adapters.forEach((t) => t.dispose());
      model.dispose();
      tokens.dispose();
    });
  });
}
