// The Fine-tune demo's engine half, kept apart from the page and the worker so that Node runs it
// too (train_base.mjs, tests/js/finetune_demo.test.mjs): the tokenizer a base model needs, loading
// the base with its large matrices in a chosen dtype, LoRA adapters trained with AdamW on random
// windows of a text, sampling, and the memory accounting behind the page's panel. Nothing here
// imports the engine: the functions take a loaded `fc` (from `init()`).
import { makeRandom } from '../common/random.mjs';

export { makeRandom };  // train_base.mjs and the tests draw their windows with it

/** The base dtypes the page offers (fc.nn.Gpt2.load's `dtype`). */
export const DTYPES = ['f32', 'f16', 'q8_0'];
/** LoRA ranks the page offers. */
export const RANKS = [2, 4, 8, 16];
/** LoRA targets: a layer matches a name equal to, or ending in '.' + , one of these. 'c_proj'
 * matches both the attention's output projection and the MLP's. */
export const TARGETS = { attention: ['c_attn'], all: ['c_attn', 'c_proj', 'c_fc'] };

/** How the adapters train: random windows of `context` tokens (plus the one each last token
 * predicts), `batch` of them per step, AdamW with a short warm-up, gradients clipped. LoRA's
 * scale is alpha / rank = 2 at every rank, so changing the rank changes capacity, not step size. */
export const TRAINING = { context: 64, batch: 8, lr: 4e-3, warmupSteps: 10, weightDecay: 0, clip: 1, alphaPerRank: 2,
  dropout: 0, seed: 1 };

/** The samples before and after training: the same prompt, seed and settings, so the difference
 * is the adapters'. */
export const SAMPLING = { maxTokens: 120, temperature: 0.7, topK: 40, seed: 7 };

/** Smaller steps and samples for a real GPT-2 (124M parameters and up, 50257 tokens): each step
 * is a forward and backward pass through the whole base, and generate() reads every weight and
 * the 50257-row head once per token (one position, from its KV cache). Returns { training,
 * sampling } overrides for the base's config. */
export function budgetFor(config) {
  const large = config.n_embd * config.n_layer > 128 * 8 || config.vocab_size > 4096;
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

/**
 * The tokenizer for a base model's vocabulary:
 *   vocab_size 256     bytes are tokens (UTF-8), as in the shipped base;
 *   vocab_size 50257   GPT-2's byte-pair encoding, from js-tiktoken (imported only here, on first
 *                      use: Node finds it in node_modules, the page through its import map).
 * Returns { kind, vocab, encode(text) -> Int32Array, decode(ids) -> string, start }: `start` is the
 * token a generation starts from when the prompt is empty.
 */
export async function createTokenizer(vocabSize) {
  if (vocabSize === 256) {
    const encoder = new TextEncoder();
    return { kind: 'bytes', vocab: 256, start: 10,
      encode: (text) => Int32Array.from(encoder.encode(text)), decode: (ids) => showBytes(ids) };
  }
  if (vocabSize === 50257) {
    const [{ Tiktoken }, { default: ranks }] = await Promise.all([import('js-tiktoken/lite'), import('js-tiktoken/ranks/gpt2')]);
    const bpe = new Tiktoken(ranks);
    // '<|endoftext|>' in a text is GPT-2's document separator, so it is read as that token.
    return { kind: 'gpt2', vocab: 50257, start: 50256,
      encode: (text) => Int32Array.from(bpe.encode(text, 'all')),
      decode: (ids) => bpe.decode(Array.from(ids)).replace(/\uFFFD/g, '\u00b7') };
  }
  throw new Error(`no tokenizer for vocab_size ${vocabSize}: this demo reads 256 (bytes are tokens) or 50257 (GPT-2's BPE)`);
}

// ---------------------------------------------------------------- sizes a config implies

/** The sizes of a config.json object (GPT-2's field names; n_inner null means 4·n_embd). */
export function dims(config) {
  const d = config.n_embd;
  return { vocab: config.vocab_size, positions: config.n_positions ?? config.n_ctx, d, layers: config.n_layer,
    heads: config.n_head, inner: config.n_inner ?? 4 * d };
}

/** Elements of the base: `matrices` are the ones stored in the chosen dtype (wte, which is also the
 * tied head, and each block's four projections), `rest` the ones that stay f32 (wpe, the
 * LayerNorms, the biases). */
export function baseElements(config) {
  const { vocab, positions, d, layers, inner } = dims(config);
  const matrices = vocab * d + layers * (d * 3 * d + d * d + d * inner + inner * d);
  const rest = positions * d + layers * (2 * d + 3 * d + d + 2 * d + inner + d) + 2 * d;
  return { matrices, rest };
}

/** The bytes a frozen base should hold in `dtype`: { total, byDtype } as fc.memory() reports them. */
export function expectedFrozenBytes(config, dtype) {
  const { matrices, rest } = baseElements(config);
  const byDtype = { f32: 4 * rest };
  byDtype[dtype] = (byDtype[dtype] ?? 0) + matrices * BYTES_PER_ELEMENT[dtype];
  return { total: Object.values(byDtype).reduce((a, b) => a + b, 0), byDtype };
}

/** Adapter elements (A{rank, in} and B{out, rank} per adapted layer) for rank and a TARGETS key. */
export function adapterElements(config, rank, targets) {
  const { d, layers, inner } = dims(config);
  const perBlock = { c_attn: d + 3 * d, attn_c_proj: d + d, c_fc: d + inner, mlp_c_proj: inner + d };
  const adapted = targets === 'all' ? Object.values(perBlock) : [perBlock.c_attn];
  return layers * rank * adapted.reduce((a, b) => a + b, 0);
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
 * Loads a base and adapts it with LoRA, ready to train on `tokens` (an Int32Array: the text,
 * tokenized). Options: modelBytes (model.safetensors), config (config.json, parsed), dtype, rank,
 * targets ('attention' | 'all'), checkpointBlocks (recompute each block in backward: fewer
 * activations kept, a second forward pass), and any TRAINING field to override.
 *
 * Memory (fc.memory(), all in bytes; the panel's three parts):
 *   frozen       what loading the base added: its weights, in the dtype (split by dtype);
 *   state        what the adapters, their gradients and AdamW's two moments hold once a step has
 *                run (liveBytes after the latest step minus the frozen base and what lived before);
 *   activations  the most the latest step added while it ran (its peakBytes minus the liveBytes
 *                before it): the batch, the forward pass's saved tensors, the backward pass.
 */
export function createFineTuner(fc, { modelBytes, config, tokens, dtype = 'q8_0', rank = 8, targets = 'attention',
  checkpointBlocks = false, ...training } = {}) {
  const t = { ...TRAINING, ...budgetFor(config).training, ...training };
  if (!DTYPES.includes(dtype)) throw new Error(`dtype '${dtype}': one of ${DTYPES.join(', ')}`);
  if (!TARGETS[targets]) throw new Error(`targets '${targets}': one of ${Object.keys(TARGETS).join(', ')}`);
  const { positions } = dims(config);
  const baseline = fc.memory();
  const model = fc.nn.Gpt2.load(modelBytes, config, { dtype, checkpointBlocks });
  let adapters = [], opt = null;
  try {
    const frozen = grownSince(fc, baseline);
    adapters = fc.nn.lora(model, { rank, alpha: t.alphaPerRank * rank, dropout: t.dropout, targets: TARGETS[targets],
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

    const step = () => {
      const started = performance.now();
      opt.lr = steps < t.warmupSteps ? (t.lr * (steps + 1)) / t.warmupSteps : t.lr;
      const liveBefore = fc.memory().liveBytes;
      fc.resetPeak();
      const { loss, peakBytes } = fc.scope(() => {
        opt.zeroGrad();
        const batch = fc.constant(['batch', 't'], [t.batch, span], randomWindows(text, t.batch, span, random), 'i32');
        const l = model.loss(batch);
        l.backward();
        const peak = fc.memory().peakBytes;  // forward and backward: the step's high-water mark
        fc.optim.clipGradNorm(adapters, t.clip);
        opt.step();
        return { loss: l.item(), peakBytes: peak };
      });
      steps += 1;
      Object.assign(last, { liveBefore, peakBytes, liveAfter: fc.memory().liveBytes });
      return { step: steps, loss, ms: performance.now() - started, ...last };
    };

    return {
      config,
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
      /** The panel's figures (see above); state and activations are null before the first step. */
      memory() {
        return {
          frozen,
          expectedFrozen: expectedFrozenBytes(config, dtype),
          adapterCount,
          state: steps ? last.liveAfter - baseline.liveBytes - frozen.bytes : null,
          activations: steps ? last.peakBytes - last.liveBefore : null,
          peak: steps ? last.peakBytes - baseline.liveBytes : null,
        };
      },
      /** The prompt's ids continued by model.generate; onToken(id) sees each new token as it is
       * drawn. Returns the new ids. An empty prompt starts from `start`. */
      sample(promptIds, { start = 10, onToken, ...options } = {}) {
        const prompt = promptIds.length ? Array.from(promptIds) : [start];
        return model.generate(prompt, { ...SAMPLING, ...options, ...(onToken ? { onToken } : {}) });
      },
      /** The adapters as safetensors bytes (peft's layout; fc.nn.Gpt2's loadAdapters reads them back). */
      saveAdapters: () => model.saveAdapters(),
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
