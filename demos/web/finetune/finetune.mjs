// The Fine-tune demo's engine half, kept apart from the page and the worker so that Node runs it
// too (train_base.mjs, tests/js/finetune_demo.test.mjs): the tokenizer a base model needs, loading
// the base (a GPT-2, or a Llama-family model: llama, qwen2) with its large matrices in a chosen
// dtype, LoRA adapters trained with AdamW on random windows of a text, sampling, PEFT's adapter
// files, and the memory accounting behind the page's panel. Nothing here imports the engine: the
// functions take a loaded `fc` (from `init()`).
import { makeRandom } from '../common/random.mjs';

export { makeRandom };  // train_base.mjs and the tests draw their windows with it

/** The base dtypes the page offers (the `dtype` of fc.nn.Gpt2.load and fc.nn.Llama.loadAsync). */
export const DTYPES = ['f32', 'f16', 'q8_0'];
/** LoRA ranks the page offers. */
export const RANKS = [2, 4, 8, 16];

/**
 * The model families, by config.json's model_type: 'gpt2' is GPT-2; anything else goes to
 * fc.nn.Llama, which reads 'llama' and 'qwen2' and refuses the rest with an InvalidArgument that
 * names them (so the page shows the library's own message).
 *   targets   the page's two LoRA choices (`attention`, `all`) as layer names: a layer matches a
 *             name equal to, or ending in '.' + , one of them (GPT-2's 'c_proj' matches both the
 *             attention's output projection and the MLP's)
 *   labels    how the page names each choice
 *   defaultTargets  the choice a newly picked base starts with
 */
export const FAMILIES = {
  gpt2: {
    name: 'GPT-2',
    targets: { attention: ['c_attn'], all: ['c_attn', 'c_proj', 'c_fc'] },
    labels: { attention: 'c_attn', all: 'all projections' },
    defaultTargets: 'all',
  },
  llama: {
    name: 'Llama family',
    targets: { attention: ['q_proj', 'k_proj', 'v_proj', 'o_proj'],
      all: ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'] },
    labels: { attention: 'q, k, v, o_proj', all: 'all projections' },
    defaultTargets: 'attention',
  },
};
/** The page's LoRA choices (FAMILIES[f].targets keys). */
export const TARGET_CHOICES = ['attention', 'all'];

/** 'gpt2' or 'llama': which of FAMILIES a config.json (parsed) belongs to. */
export const familyOf = (config) => (config.model_type === 'gpt2' ? 'gpt2' : 'llama');

/** How the adapters train: random windows of `context` tokens (plus the one each last token
 * predicts), `batch` of them per step, AdamW with a short warm-up, gradients clipped. LoRA's
 * scale is alpha / rank = 2 at every rank, so changing the rank changes capacity, not step size. */
export const TRAINING = { context: 64, batch: 8, lr: 4e-3, warmupSteps: 10, weightDecay: 0, clip: 1, alphaPerRank: 2,
  dropout: 0, seed: 1 };

/** The samples before and after training: the same prompt, seed and settings, so the difference
 * is the adapters'. */
export const SAMPLING = { maxTokens: 120, temperature: 0.7, topK: 40, seed: 7 };

/** Smaller steps and samples for a real model (GPT-2's 124M parameters and up, SmolLM2's 135M,
 * vocabularies of 50,000 tokens and more): each step is a forward and backward pass through the
 * whole base, and generate() reads every weight and the whole head once per token (one position,
 * from its KV cache). Returns { training, sampling } overrides for the base's config. */
export function budgetFor(config) {
  const { d, layers, vocab } = dims(config);
  const large = d * layers > 128 * 8 || vocab > 4096;
  return large ? { training: { batch: 2, context: 32 }, sampling: { maxTokens: 32 } } : { training: {}, sampling: {} };
}

/** Bytes per element of the large matrices in each dtype (q8_0: blocks of 32 values as 32 int8
 * and one f16 scale, 34 bytes). Everything else stays f32. */
export const BYTES_PER_ELEMENT = { f32: 4, f16: 2, bf16: 2, q8_0: 34 / 32 };

/** `batch` windows of `span` consecutive tokens at random places in `tokens`, row after row (an
 * Int32Array of batch·span ids, for a tokens{batch, t} tensor). */
export function randomWindows(tokens, batch, span, random) {
  if (tokens.length < span) throw new Error(`${tokens.length} tokens is fewer than a window of ${span}`);
  const ids = new Int32Array(batch * span);
  for (let b = 0; b < batch; ++b) {
    const start = Math.floor(random() * (tokens.length - span + 1));
    ids.set(tokens.subarray(start, start + span), b * span);
  }
  return ids;
}

// ---------------------------------------------------------------- tokenizers

/** UTF-8 bytes as text: what decodes is shown as it is, a byte that is not part of valid UTF-8 and
 * any control character but a line break or tab as '·' (an untrained byte model emits all 256). */
export function showBytes(ids) {
  const text = new TextDecoder().decode(Uint8Array.from(ids));
  return text.replace(/[\uFFFD\u0000-\u0008\u000B-\u001F\u007F]/g, '\u00b7');
}

/** The text `ids` add after `promptIds`: the decoding of both minus that of the prompt, since a
 * tokenizer may decode a token differently at the start of a text (SentencePiece's '▁word' loses
 * its space there). */
function continuationOf(decode) {
  return (promptIds, ids) => {
    const head = decode(Array.from(promptIds)), whole = decode([...promptIds, ...ids]);
    return whole.startsWith(head) ? whole.slice(head.length) : decode(Array.from(ids));
  };
}

/**
 * The tokenizer for a base model (config: its config.json, parsed):
 *   GPT-2, vocab_size 256     bytes are tokens (UTF-8), as in the shipped base;
 *   GPT-2, vocab_size 50257   GPT-2's byte-pair encoding, from js-tiktoken;
 *   Llama family              the model's own tokenizer.json (with its tokenizer_config.json when
 *                             given; both parsed) through Hugging Face's @huggingface/tokenizers.
 * The packages are imported only here, on first use: Node finds them in node_modules, the page
 * through its import map. Returns { kind, label, vocab, encode(text) -> Int32Array,
 * decode(ids) -> string, continuation(promptIds, ids) -> string, start }: `start` is the token a
 * generation starts from when the prompt is empty.
 */
export async function createTokenizer(config, { tokenizerJson, tokenizerConfig } = {}) {
  const vocab = config.vocab_size;
  if (familyOf(config) === 'llama') return huggingFaceTokenizer(vocab, tokenizerJson, tokenizerConfig);
  if (vocab === 256) {
    const encoder = new TextEncoder();
    const decode = (ids) => showBytes(ids);
    return { kind: 'bytes', label: 'bytes are tokens', vocab, start: 10, encode: (text) => Int32Array.from(encoder.encode(text)),
      decode, continuation: continuationOf(decode) };
  }
  if (vocab === 50257) {
    const [{ Tiktoken }, { default: ranks }] = await Promise.all([import('js-tiktoken/lite'), import('js-tiktoken/ranks/gpt2')]);
    const bpe = new Tiktoken(ranks);
    const decode = (ids) => bpe.decode(Array.from(ids)).replace(/\uFFFD/g, '\u00b7');
    // '<|endoftext|>' in a text is GPT-2's document separator, so it is read as that token.
    return { kind: 'gpt2', label: "GPT-2's BPE", vocab, start: 50256, encode: (text) => Int32Array.from(bpe.encode(text, 'all')),
      decode, continuation: continuationOf(decode) };
  }
  throw new Error(`no tokenizer for a GPT-2 of vocab_size ${vocab}: this demo reads 256 (bytes are tokens) or 50257 (GPT-2's BPE)`);
}

// A Llama-family model's tokenizer.json. Its ids must fall below the model's vocab_size (a
// tokenizer from another model would fail in the engine, far from the cause).
async function huggingFaceTokenizer(vocab, json, config) {
  if (!json) throw new Error('a Llama-family model needs its tokenizer.json: pick it with model.safetensors and config.json');
  const { Tokenizer } = await import('@huggingface/tokenizers');
  let tokenizer;
  try {
    tokenizer = new Tokenizer(json, config ?? {});
  } catch (e) {
    throw new Error(`tokenizer.json is not a tokenizer @huggingface/tokenizers reads: ${e?.message ?? e}`);
  }
  const encode = (text) => {
    const ids = Int32Array.from(tokenizer.encode(text).ids);
    const bad = ids.find((id) => id >= vocab);
    if (bad !== undefined)
      throw new Error(`tokenizer.json gives token id ${bad}, beyond the model's vocab_size ${vocab}: are they from the same model?`);
    return ids;
  };
  const decode = (ids) => tokenizer.decode(Array.from(ids)).replace(/\uFFFD/g, '\u00b7');
  // An empty prompt starts from what the tokenizer puts before a text (Llama's <s>), else from the
  // end-of-text token (Qwen's, which also separates documents), else from token 0.
  const eosName = typeof config?.eos_token === 'string' ? config.eos_token : config?.eos_token?.content;
  const eos = eosName ? tokenizer.token_to_id(eosName) : undefined;
  const start = encode('')[0] ?? (eos < vocab ? eos : 0);
  return { kind: 'huggingface', label: 'tokenizer.json', vocab, start, encode, decode, continuation: continuationOf(decode) };
}

// ---------------------------------------------------------------- sizes a config implies

/** The sizes of a config.json object in either family's names (GPT-2: n_inner null means 4·n_embd,
 * the head is wte; Llama: num_key_value_heads defaults to the heads, head_dim to
 * hidden_size / heads). */
export function dims(config) {
  if (familyOf(config) === 'gpt2') {
    const d = config.n_embd;
    return { family: 'gpt2', vocab: config.vocab_size, positions: config.n_positions ?? config.n_ctx, d, layers: config.n_layer,
      heads: config.n_head, kvHeads: config.n_head, headDim: d / config.n_head, inner: config.n_inner ?? 4 * d, tied: true };
  }
  const heads = config.num_attention_heads;
  return { family: 'llama', vocab: config.vocab_size, positions: config.max_position_embeddings, d: config.hidden_size,
    layers: config.num_hidden_layers, heads, kvHeads: config.num_key_value_heads ?? heads,
    headDim: config.head_dim ?? config.hidden_size / heads, inner: config.intermediate_size,
    tied: config.tie_word_embeddings ?? false };
}

/** A block's linear layers, { name: [inputs, outputs] }, named as in model.layers() after the
 * block's prefix ('h.N.', 'layers.N.'). */
export function blockLayers(config) {
  const { family, d, heads, kvHeads, headDim, inner } = dims(config);
  if (family === 'gpt2') return { 'attn.c_attn': [d, 3 * d], 'attn.c_proj': [d, d], 'mlp.c_fc': [d, inner], 'mlp.c_proj': [inner, d] };
  const q = heads * headDim, kv = kvHeads * headDim;
  return { 'self_attn.q_proj': [d, q], 'self_attn.k_proj': [d, kv], 'self_attn.v_proj': [d, kv], 'self_attn.o_proj': [q, d],
    'mlp.gate_proj': [d, inner], 'mlp.up_proj': [d, inner], 'mlp.down_proj': [inner, d] };
}

// The block layers with a bias: all of GPT-2's; qwen2's q, k and v; llama's as attention_bias and
// mlp_bias say.
function biasedLayers(config) {
  const names = Object.keys(blockLayers(config));
  if (familyOf(config) === 'gpt2') return names;
  if (config.model_type === 'qwen2') return names.filter((n) => /[qkv]_proj$/.test(n));
  return names.filter((n) => (n.startsWith('self_attn.') ? config.attention_bias : config.mlp_bias));
}

/** Elements of the base: `matrices` are the ones stored in the chosen dtype (the embeddings, the
 * head unless tied, and each block's projections), `rest` the ones that stay f32 (GPT-2's
 * position embeddings, the norms, the biases). */
export function baseElements(config) {
  const { family, vocab, positions, d, layers, tied } = dims(config);
  const linears = blockLayers(config);
  const matrices = vocab * d * (tied ? 1 : 2) + layers * Object.values(linears).reduce((n, [i, o]) => n + i * o, 0);
  const biases = biasedLayers(config).reduce((n, name) => n + linears[name][1], 0);
  // GPT-2: two LayerNorms (weight and bias) a block and a final one, and wpe; Llama: two RMSNorms
  // (a weight) a block and a final one.
  const rest = family === 'gpt2' ? positions * d + layers * (4 * d + biases) + 2 * d : layers * (2 * d + biases) + d;
  return { matrices, rest };
}

/** The bytes a frozen base should hold in `dtype`: { total, byDtype } as fc.memory() reports them. */
export function expectedFrozenBytes(config, dtype) {
  const { matrices, rest } = baseElements(config);
  const byDtype = { f32: 4 * rest };
  byDtype[dtype] = (byDtype[dtype] ?? 0) + matrices * BYTES_PER_ELEMENT[dtype];
  return { total: Object.values(byDtype).reduce((a, b) => a + b, 0), byDtype };
}

/** Adapter elements (A{rank, in} and B{out, rank} per adapted layer) for rank and a target choice
 * ('attention' | 'all'). */
export function adapterElements(config, rank, targets) {
  const names = FAMILIES[familyOf(config)].targets[targets];
  const adapted = Object.entries(blockLayers(config)).filter(([name]) => names.includes(name.split('.').at(-1)));
  return dims(config).layers * rank * adapted.reduce((n, [, [i, o]]) => n + i + o, 0);
}

/** Parameter count of a base (for captions). */
export function parameterCount(config) {
  const { matrices, rest } = baseElements(config);
  return matrices + rest;
}

// ---------------------------------------------------------------- the fine-tuner

/** liveBytes and bytesByDtype of fc.memory(), minus those of `before`. */
function grownSince(fc, before) {
  const now = fc.memory();
  const byDtype = {};
  for (const [k, v] of Object.entries(now.bytesByDtype)) {
    const grown = v - (before.bytesByDtype[k] ?? 0);
    if (grown !== 0) byDtype[k] = grown;
  }
  return { bytes: now.liveBytes - before.liveBytes, byDtype };
}

/**
 * Loads a base: `weights` is model.safetensors as a Uint8Array or a Blob (a File from the page's
 * picker), or an array of them (a sharded checkpoint, Llama family only); options as the models'
 * load take them ({ dtype, checkpointBlocks }). A Llama-family base from Blobs goes through
 * loadAsync, which reads one tensor at a time, so the file is never whole in memory; a GPT-2 is
 * read whole (fc.nn.Gpt2.load takes bytes).
 */
export async function loadBase(fc, weights, config, options) {
  const files = [weights].flat();
  if (familyOf(config) === 'llama') {
    const bytes = files.every((f) => f instanceof Uint8Array);
    return bytes ? fc.nn.Llama.load(files, config, options) : fc.nn.Llama.loadAsync(files, config, options);
  }
  if (files.length !== 1) throw new Error(`a GPT-2 loads from one model.safetensors, got ${files.length} files`);
  const bytes = files[0] instanceof Uint8Array ? files[0] : new Uint8Array(await files[0].arrayBuffer());
  return fc.nn.Gpt2.load(bytes, config, options);
}

/**
 * Loads a base (loadBase) and adapts it with LoRA, ready to train on `tokens` (an Int32Array: the
 * text, tokenized). Options: weights (model.safetensors: bytes or Blobs, as loadBase takes them),
 * config (config.json, parsed), dtype, rank, targets ('attention' | 'all', FAMILIES), checkpointBlocks
 * (recompute each block in backward: fewer activations kept, a second forward pass), and any
 * TRAINING field to override.
 *
 * It trains on fc.defaultDevice: on a device the base loads on the cpu (quantizing is the host's),
 * moves there with model.to, and the adapters, AdamW and the batches are made there. step, sample
 * and exportPeft are async (a device's values are read with await).
 *
 * Memory (the training device's counters: fc.memory(), or fc.memory().devices[device]; all in
 * bytes; the panel's three parts):
 *   frozen       what loading the base added: its weights, in the dtype (split by dtype, as the
 *                cpu counted it on loading: a device counts no dtypes, and holds the same bytes);
 *   state        what the adapters, their gradients and AdamW's two moments hold once a step has
 *                run, with the rotary tables a Llama-family model keeps for the positions it ran
 *                (liveBytes after the latest step minus the frozen base and what lived before);
 *   activations  the most the latest step added while it ran (its peakBytes minus the liveBytes
 *                before it): the batch, the forward pass's saved tensors, the backward pass.
 */
export async function createFineTuner(fc, { weights, config, tokens, dtype = 'q8_0', rank = 8, targets = 'attention',
  checkpointBlocks = false, ...training } = {}) {
  const family = FAMILIES[familyOf(config)];
  const t = { ...TRAINING, ...budgetFor(config).training, ...training };
  if (!DTYPES.includes(dtype)) throw new Error(`dtype '${dtype}': one of ${DTYPES.join(', ')}`);
  if (!family.targets[targets]) throw new Error(`targets '${targets}': one of ${TARGET_CHOICES.join(', ')}`);
  const device = fc.defaultDevice;
  const counters = (m = fc.memory()) => (device === 'cpu' ? m : m.devices[device]);
  const hostBefore = fc.memory();
  const baseline = counters(hostBefore);
  fc.defaultDevice = 'cpu';
  let model;
  try {
    model = await loadBase(fc, weights, config, { dtype, checkpointBlocks });
  } finally {
    fc.defaultDevice = device;
  }
  const { positions } = dims(config);
  let adapters = [], opt = null;
  try {
    const loaded = grownSince(fc, hostBefore);
    if (device !== 'cpu') model.to(device);
    const frozen = { bytes: counters().liveBytes - baseline.liveBytes, byDtype: loaded.byDtype };
    adapters = fc.nn.lora(model, { rank, alpha: t.alphaPerRank * rank, dropout: t.dropout, targets: family.targets[targets],
      seed: t.seed });
    opt = fc.optim.adamw(adapters, { lr: t.lr, weightDecay: t.weightDecay });
    const adapterCount = adapters.reduce((n, p) => n + p.shape.reduce((a, b) => a * b, 1), 0);
    const random = makeRandom(t.seed);
    let text = tokens;
    let span = 0;
    const setTokens = (ids) => {
      if (!(ids instanceof Int32Array)) throw new Error('tokens must be an Int32Array');
      if (ids.length < 2) throw new Error(`the text is too short to train on (${ids.length} tokens)`);
      // A window of context + 1 tokens (the last one is only predicted), shorter for a short text.
      span = Math.min(t.context + 1, positions, ids.length);
      text = ids;
    };
    setTokens(tokens);
    let steps = 0;
    const last = { liveBefore: 0, liveAfter: 0, peakBytes: 0 };

    const step = async () => {
      const started = performance.now();
      opt.lr = steps < t.warmupSteps ? (t.lr * (steps + 1)) / t.warmupSteps : t.lr;
      const liveBefore = counters().liveBytes;
      fc.resetPeak();
      const { loss, peakBytes } = fc.scope(() => {
        opt.zeroGrad();
        const batch = fc.constant(['batch', 't'], [t.batch, span], randomWindows(text, t.batch, span, random), 'i32');
        const l = model.loss(batch);
        l.backward();
        const peak = counters().peakBytes;  // forward and backward: the step's high-water mark
        // clipGradNorm reads the norm back, which a device cannot do synchronously.
        if (device === 'cpu') fc.optim.clipGradNorm(adapters, t.clip);
        else fc.optim.clipGradNormTensor(adapters, t.clip);
        opt.step();
        return { loss: l.detach(), peakBytes: peak };
      });
      let value;
      try {
        [value] = await loss.data();
      } finally {
        loss.dispose();
      }
      steps += 1;
      Object.assign(last, { liveBefore, peakBytes, liveAfter: counters().liveBytes });
      return { step: steps, loss: value, ms: performance.now() - started, ...last };
    };

    return {
      config,
      device,
      dtype,
      rank,
      targets,
      checkpointBlocks,
      training: t,
      model,
      frozen,
      adapterCount,
      get steps() { return steps; },
      get span() { return span; },
      setTokens,
      step,
      /** The panel's figures (see above), of `device`; state and activations are null before the
       * first step. */
      memory() {
        return {
          device,
          frozen,
          expectedFrozen: expectedFrozenBytes(config, dtype),
          adapterCount,
          state: steps ? last.liveAfter - baseline.liveBytes - frozen.bytes : null,
          activations: steps ? last.peakBytes - last.liveBefore : null,
          peak: steps ? last.peakBytes - baseline.liveBytes : null,
        };
      },
      /** The prompt's ids continued by model.generateAsync (generate's tokens, on any device);
       * onToken(id) sees each new token as it is drawn. Resolves to the new ids. An empty prompt
       * starts from `start`. */
      sample(promptIds, { start = 10, onToken, ...options } = {}) {
        const prompt = promptIds.length ? Array.from(promptIds) : [start];
        return model.generateAsync(prompt, { ...SAMPLING, ...options, ...(onToken ? { onToken } : {}) });
      },
      /** The adapters as PEFT's two files: resolves to { safetensors (adapter_model.safetensors
       * bytes), config (adapter_config.json, an object) }; fc.nn.loadPeft and PyTorch's peft read
       * them back. */
      exportPeft: () => fc.nn.exportPeftAsync(model),
      dispose() {
        opt?.dispose();
        adapters.forEach((p) => p.dispose());
        model.dispose();
      },
    };
  } catch (e) {
    opt?.dispose();
    adapters.forEach((p) => p.dispose());
    model.dispose();
    throw e;
  }
}
