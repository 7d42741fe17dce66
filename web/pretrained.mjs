// The pretrained models (fc.nn.Gpt2, fc.nn.Llama), LoRA (fc.nn.LoraLinear, fc.nn.lora) and PEFT's
// adapter files (fc.nn.exportPeft, fc.nn.loadPeft): thin wrappers of C++'s nn::Gpt2, nn::Llama and
// nn::LoraLinear (nn/model.h), bound in web/bindings.cpp. Every argument is checked here first, so
// that a mistake is reported in the model's terms.
import { FucinaError, checkInt, checkOptions, invalid, isPlainObject, typeName } from './errors.mjs';

const BASE_DTYPES = ['f32', 'f16', 'bf16', 'q8_0'];
const INT32_MAX = 2 ** 31 - 1;
const quoted = (v) => (typeof v === 'string' ? `'${v}'` : typeName(v));
// A token id outside the vocabulary: the engine's code for it (C++'s Gpt2::generate says the same).
const outOfRange = (message) => new FucinaError('IndexOutOfRange', `IndexOutOfRange: ${message}`);

function checkBool(v, what) {
  if (typeof v !== 'boolean') throw invalid(`${what} must be a boolean, got ${typeName(v)}`);
  return v;
}

function checkBytes(bytes, what) {
  if (!(bytes instanceof Uint8Array)) throw invalid(`${what} must be a Uint8Array (safetensors bytes), got ${typeName(bytes)}`);
  return bytes;
}

/** A pretrained model's options: [dtype, trainable, checkpointBlocks], checked. */
function modelOptions(options, what) {
  const { dtype = 'f32', trainable = false, checkpointBlocks = false } =
    checkOptions(options, ['dtype', 'trainable', 'checkpointBlocks'], what);
  if (!BASE_DTYPES.includes(dtype)) throw invalid(`${what}: dtype is 'f32', 'f16', 'bf16' or 'q8_0', got ${quoted(dtype)}`);
  checkBool(trainable, `${what}: trainable`);
  checkBool(checkpointBlocks, `${what}: checkpointBlocks`);
  if (trainable && dtype !== 'f32')
    throw invalid(`${what}: trainable needs dtype 'f32' (a ${dtype} base is frozen: train LoRA adapters on it, fc.nn.lora)`);
  return [dtype, trainable, checkpointBlocks];
}

/** config.json as a parsed object -> the JSON text C++'s *Config::fromJson reads. */
function configJson(config, what) {
  if (!isPlainObject(config)) throw invalid(`${what}: config must be a config.json object (parsed), got ${typeName(config)}`);
  try {
    return JSON.stringify(config);
  } catch (e) {
    throw invalid(`${what}: config is not JSON (${e?.message ?? e})`);
  }
}

/** LoraOptions (nn/lora.h), defaults filled in and checked. */
function loraOptions(options, what) {
  const { rank = 8, alpha = 8, dropout = 0, targets = ['c_attn'], seed = 0 } =
    checkOptions(options, ['rank', 'alpha', 'dropout', 'targets', 'seed'], what);
  checkInt(rank, `${what}: rank`, 1, INT32_MAX);
  if (typeof alpha !== 'number' || !Number.isFinite(alpha) || alpha < 0)
    throw invalid(`${what}: alpha must be a finite number >= 0, got ${typeName(alpha)}`);
  if (typeof dropout !== 'number' || !(dropout >= 0 && dropout < 1))
    throw invalid(`${what}: dropout must be a number in [0, 1), got ${typeName(dropout)}`);
  if (!Array.isArray(targets) || targets.length === 0 || !targets.every((t) => typeof t === 'string' && t !== ''))
    throw invalid(`${what}: targets must be a non-empty array of layer names ('c_attn', 'h.0.mlp.c_fc', ...), got ${typeName(targets)}`);
  checkInt(seed, `${what}: seed`, 0);
  return { rank, alpha, dropout, targets: [...targets], seed };
}

/** A prompt (an array or typed array of token ids) as the Int32Array the binding takes. */
function promptIds(prompt, vocab, what) {
  if (!Array.isArray(prompt) && !(ArrayBuffer.isView(prompt) && !(prompt instanceof DataView)))
    throw invalid(`${what}: prompt must be an array or Int32Array of token ids, got ${typeName(prompt)}`);
  if (prompt.length === 0) throw invalid(`${what}: prompt must hold at least one token`);
  for (let i = 0; i < prompt.length; ++i) {
    const id = prompt[i];
    if (!Number.isInteger(id)) throw invalid(`${what}: prompt[${i}] must be an integer token id, got ${typeName(id)}`);
    if (id < 0 || id >= vocab) throw outOfRange(`${what}: prompt[${i}] = ${id} is not a token id in [0, ${vocab}) (vocab_size ${vocab})`);
  }
  return Int32Array.from(prompt);
}

/** generate's arguments for the model `what` ('nn.Gpt.generate'), checked, defaults filled in;
 * the prompt as an Int32Array. */
export function generateArgs(prompt, options, vocab, what) {
  const { maxTokens = 32, temperature = 1, topK = 0, seed = 0, onToken } =
    checkOptions(options, ['maxTokens', 'temperature', 'topK', 'seed', 'onToken'], what);
  const ids = promptIds(prompt, vocab, what);
  checkInt(maxTokens, `${what}: maxTokens`, 0, INT32_MAX);
  if (typeof temperature !== 'number' || !Number.isFinite(temperature) || temperature < 0)
    throw invalid(`${what}: temperature must be a finite number >= 0 (0: greedy), got ${typeName(temperature)}`);
  checkInt(topK, `${what}: topK`, 0);
  checkInt(seed, `${what}: seed`, 0);
  if (onToken !== undefined && typeof onToken !== 'function')
    throw invalid(`${what}: onToken must be a function (id) => boolean | void, got ${typeName(onToken)}`);
  return { ids, maxTokens, temperature, topK, seed, onToken };
}

// The axes each model makes itself: a tokens tensor must not have them.
// module: what PEFT's module names put before a layer's name.
const GPT2 = { name: 'Gpt2', axes: ['vocab', 'e', 'qkv', 'ao', 'mlp', 'part', 'head', 'hd', 'rank'], positions: 'n_positions',
  module: 'transformer.' };
const LLAMA = { name: 'Llama', axes: ['vocab', 'e', 'q', 'kv', 'mlp', 'head', 'hd', 'rank'], positions: 'max_position_embeddings',
  module: 'model.' };

const SAFETENSORS_DTYPES = { F32: 'f32', F16: 'f16', BF16: 'bf16' };

/** The tensors of a safetensors file (its header, checked against the file): name, dtype, shape
 * and the byte range of each, without reading them. */
function safetensorsEntries(bytes, what) {
  if (bytes.length < 8) throw invalid(`${what}: not a safetensors file (shorter than its 8-byte header length)`);
  const n = Number(new DataView(bytes.buffer, bytes.byteOffset, 8).getBigUint64(0, true));
  if (n > bytes.length - 8) throw invalid(`${what}: header length ${n} exceeds the file (${bytes.length} bytes)`);
  return entriesOf(bytes.subarray(8, 8 + n), 8 + n, bytes.length - 8 - n, what);
}

// header: the JSON bytes; body: where the data starts; size: the data's length.
function entriesOf(header, body, size, what) {
  let doc;
  try {
    doc = JSON.parse(new TextDecoder().decode(header));
  } catch (e) {
    throw invalid(`${what}: the header is not JSON (${e?.message ?? e})`);
  }
  if (!isPlainObject(doc)) throw invalid(`${what}: the header is not a JSON object`);
  const entries = [];
  for (const [name, e] of Object.entries(doc)) {
    if (name === '__metadata__') continue;
    const offsets = e?.data_offsets;
    if (!isPlainObject(e) || !Array.isArray(e.shape) || !e.shape.every((x) => Number.isSafeInteger(x) && x >= 0) ||
        !Array.isArray(offsets) || offsets.length !== 2 || !offsets.every(Number.isSafeInteger) ||
        offsets[0] < 0 || offsets[0] > offsets[1] || offsets[1] > size)
      throw invalid(`${what}: the entry of '${name}' is malformed (dtype, shape, data_offsets within the data)`);
    const dtype = SAFETENSORS_DTYPES[e.dtype];
    if (!dtype) throw invalid(`${what}: '${name}' is ${typeof e.dtype === 'string' ? e.dtype : '?'}; F32, F16 or BF16 expected`);
    entries.push({ name, dtype, shape: e.shape, begin: body + offsets[0], end: body + offsets[1] });
  }
  return entries;
}

export function makePretrained(fc, input) {
  const adopt = Symbol('a bound model');
  let internals;  // PretrainedModel's private methods, for lora, exportPeft and loadPeft

  /** What nn.Gpt2 and nn.Llama share (C++'s nn::Model): a frozen base in a chosen dtype, layers
   * LoRA adapts, adapters saved and loaded, generation. */
  class PretrainedModel {
    #kind;         // GPT2 or LLAMA
    #h;            // the bound model; null once disposed
    #config;       // the config.json text of the model
    #generating = 0;  // generate calls running (onToken may call in again)
    #doomed = null;   // a model disposed from generate's onToken: deleted when generate returns

    constructor(kind, h) {
      this.#kind = kind;
      try {
        this.#config = fc._call(() => h.config());
      } catch (e) {
        h.delete();
        throw e;
      }
      this.#h = h;
    }

    #call(method, fn) {
      if (!this.#h) throw invalid(`nn.${this.#kind.name}.${method}: this model was disposed`);
      return fc._call(() => fn(this.#h));
    }

    // Checks tokens{batch..., t} (i32/i64 ids below vocab_size) for method: at least min
    // positions, and no more than the model reads (one more for loss's targets).
    #tokens(tokens, method, min) {
      const { name, axes, positions: key } = this.#kind;
      if (!this.#h) throw invalid(`nn.${name}.${method}: this model was disposed`);
      input(tokens, `${name}.${method}`, 'tokens', { axes: { t: null }, dtypes: ['i32', 'i64'], forbid: axes });
      const { vocab_size: vocab, [key]: positions } = this.config;
      const t = tokens.shape[tokens.tags.indexOf('t')];
      const max = positions + min - 1;
      if (t < min || t > max)
        throw invalid(`nn.${name}.${method}: tokens hold ${t} positions along 't'; ${method} takes ${min} to ${max} (${key} ${positions})`);
      const device = this.device;
      if (tokens.device !== device)
        throw new FucinaError('DeviceMismatch', `DeviceMismatch: nn.${name}.${method}: the tokens are on ${tokens.device}, the model on ${device} (make them there, or move them with tokens.to('${device}'))`);
      if (device !== 'cpu') return tokens._handle;  // ids out of range are found on the device, reported by the next read
      const ids = tokens.toArray();
      const bad = ids.findIndex((id) => id < 0 || id >= vocab);
      if (bad >= 0)
        throw outOfRange(`nn.${name}.${method}: tokens hold ${ids[bad]} (element ${bad}), not a token id in [0, ${vocab}) (vocab_size ${vocab})`);
      return tokens._handle;
    }

    /** The config.json fields of the model (a fresh object each time). */
    get config() {
      if (!this.#h) throw invalid(`nn.${this.#kind.name}.config: this model was disposed`);
      return JSON.parse(this.#config);
    }
    /** The dtype of the base's large matrices. */
    get dtype() { return this.#call('dtype', (h) => h.dtype()); }
    /** Where the model's tensors are: 'cpu', or the device to() moved them to. */
    get device() { return this.#call('device', (h) => h.device()); }
    /** Moves the model's tensors to device (its frozen base as stored, its adapters, or every
     * parameter when trainable, as new leaves there): make the optimizer afterwards. Returns the model. */
    to(device) {
      if (device !== 'cpu' && device !== 'webgpu')
        throw invalid(`nn.${this.#kind.name}.to: device must be 'cpu' or 'webgpu', got ${typeName(device)}`);
      this.#call('to', (h) => h.to(device));
      return this;
    }
    /** Whether each block is recomputed in backward (activation checkpointing). */
    get checkpointBlocks() { return this.#call('checkpointBlocks', (h) => h.checkpointBlocks()); }
    set checkpointBlocks(on) {
      checkBool(on, `nn.${this.#kind.name}.checkpointBlocks`);
      this.#call('checkpointBlocks', (h) => h.setCheckpointBlocks(on));
    }
    get isDisposed() { return this.#h === null; }

    /** logits{batch..., t, vocab} of tokens{batch..., t}. */
    logits(tokens) {
      const raw = this.#tokens(tokens, 'logits', 1);
      return fc._wrap(this.#call('logits', (h) => h.logits(raw)));
    }
    /** Mean next-token cross-entropy of tokens[.., :-1] predicting tokens[.., 1:]. */
    loss(tokens) {
      const raw = this.#tokens(tokens, 'loss', 2);
      return fc._wrap(this.#call('loss', (h) => h.loss(raw)));
    }
    /** The trainable tensors (every parameter when trainable, else the LoRA adapters, else none):
     * new handles, valid until disposed. */
    parameters() { return this.#call('parameters', (h) => h.parameters()).map((raw) => fc._wrap(raw)); }
    /** The base's tensors by Hugging Face name, in the file's order, as stored (new handles). */
    namedTensors() {
      const { names, tensors } = this.#call('namedTensors', (h) => h.namedTensors());
      return Object.fromEntries(names.map((n, i) => [n, fc._wrap(tensors[i])]));
    }
    /** The layers LoRA can adapt, by dotted name, in model order. */
    layers() { return this.#call('layers', (h) => h.layers()); }
    /** The base as Hugging Face safetensors bytes (adapters not included). */
    save() { return this.#call('save', (h) => h.save()); }

    /** Samples up to maxTokens tokens after prompt; returns them. */
    generate(prompt, options) {
      const what = `nn.${this.#kind.name}.generate`;
      if (!this.#h) throw invalid(`${what}: this model was disposed`);
      if (this.device !== 'cpu')
        throw new FucinaError('DeviceReadIsAsync', `DeviceReadIsAsync: ${what}: each token is read from the logits synchronously, which the ${this.device} device cannot: await generateAsync() instead`);
      const { ids, maxTokens, temperature, topK, seed, onToken } =
        generateArgs(prompt, options, this.config.vocab_size, what);
      const h = this.#h;
      ++this.#generating;
      try {
        return Array.from(fc._call((M) => {
          // Nothing is thrown back into C++: what onToken throws is parked for _call to rethrow.
          const callback = onToken === undefined ? null : (id) => {
            try {
              return onToken(id) !== false;
            } catch (e) {
              M.pending ??= { error: e };
              return null;
            }
          };
          return h.generate(ids, maxTokens, temperature, topK, seed, callback);
        }));
      } finally {
        if (--this.#generating === 0 && this.#doomed) {
          this.#doomed.delete();
          this.#doomed = null;
        }
      }
    }

    /** generate for a model on any device: the same loop, KV cache and sampler (the same tokens),
     * each step's last logits read with await data() and the token drawn on the cpu. */
    async generateAsync(prompt, options) {
      const what = `nn.${this.#kind.name}.generateAsync`;
      if (!this.#h) throw invalid(`${what}: this model was disposed`);
      const { ids, maxTokens, temperature, topK, seed, onToken } =
        generateArgs(prompt, options, this.config.vocab_size, what);
      const positions = this.config[this.#kind.positions];
      const device = this.device;
      const context = Array.from(ids);
      const out = [];
      let cache = fc._call((M) => new M.KvCache());
      try {
        for (let step = 0; step < maxTokens; ++step) {
          // All of the context the first time, then the newest token; once the context outgrows
          // the positions, its last `positions` tokens, uncached (nn::generate's loop).
          const full = context.length > positions;
          const run = full ? positions : cache.length() === 0 ? context.length : 1;
          const last = fc._unscoped(() => fc.noGrad(() => fc.scope(() => {
            const before = fc.defaultDevice;
            fc.defaultDevice = device;
            let tokens;
            try {
              tokens = fc.constant(['batch', 't'], [1, run], context.slice(-run), 'i32');
            } finally {
              fc.defaultDevice = before;
            }
            const logits = fc._wrap(this.#call('generateAsync', (h) => (full ? h.logits(tokens._handle) : h.logitsCached(tokens._handle, cache))));
            return logits.select('batch', 0).select('t', run - 1).contiguous();
          })));
          if (full) {  // never used again: the context only grows
            cache.delete();
            cache = fc._call((M) => new M.KvCache());
          }
          let values;
          try {
            values = await last.data();
          } finally {
            last.dispose();
          }
          const id = fc.scope(() => {
            const before = fc.defaultDevice;
            fc.defaultDevice = 'cpu';
            try {
              const row = fc.constant(['vocab'], [values.length], values);
              return fc._call((M) => M.sampleToken(row._handle, temperature, topK, seed, step));
            } finally {
              fc.defaultDevice = before;
            }
          });
          out.push(id);
          context.push(id);
          if (onToken !== undefined && onToken(id) === false) break;
        }
        return out;
      } finally {
        cache.delete();
      }
    }

    /** Adds LoRA adapters to the layers options.targets names; returns them (A, B per layer). */
    addLora(options) { return this.#addLora(options, `nn.${this.#kind.name}.addLora`); }
    #addLora(options, what) {
      const o = loraOptions(options, what);
      return this.#call('addLora', (h) => h.addLora(o)).map((raw) => fc._wrap(raw));
    }
    /** The adapters alone as safetensors bytes (PEFT's names, fucina's options in the metadata). */
    saveAdapters() { return this.#call('saveAdapters', (h) => h.saveAdapters()); }
    /** Loads saveAdapters' bytes (or a PEFT file, with options); adds the adapters first if needed. */
    loadAdapters(bytes, options) {
      const what = `nn.${this.#kind.name}.loadAdapters`;
      checkBytes(bytes, `${what}: bytes`);
      const o = options === undefined ? null : loraOptions(options, what);
      this.#call('loadAdapters', (h) => h.loadAdapters(bytes, o));
    }
    // values: null, or the adapters' values as host tensors (exportPeftAsync).
    #exportPeft(values = null) {
      const { safetensors, config } = this.#call('exportPeft', (h) => h.exportPeft(values && values.map((t) => t._handle)));
      return { safetensors, config: JSON.parse(config) };
    }
    // The adapters read back from the model's device into host tensors of the same axes.
    async #exportPeftAsync() {
      // Unscoped: they outlive a scope this call's first part ran in, and are disposed here.
      const adapters = fc._unscoped(() => this.#call('exportPeftAsync', (h) => h.adapters()).map((raw) => fc._wrap(raw)));
      const host = [];
      try {
        for (const t of adapters) {
          const v = await t.data();
          host.push(fc._unscoped(() => {
            const before = fc.defaultDevice;
            fc.defaultDevice = 'cpu';
            try {
              return fc.constant(t.tags, t.shape, v);
            } finally {
              fc.defaultDevice = before;
            }
          }));
        }
        return this.#exportPeft(host);
      } finally {
        for (const t of [...adapters, ...host]) t.dispose();
      }
    }
    // config: adapter_config.json, parsed. A regular-expression target_modules (a string other
    // than 'all-linear') is PEFT's re.fullmatch over its module names: resolved here to the layers
    // it matches, the list C++'s loadPeft takes.
    #loadPeft(bytes, config) {
      let targets = config.target_modules;
      if (typeof targets === 'string' && targets !== 'all-linear') {
        let pattern;
        try {
          pattern = new RegExp(`^(?:${targets})$`);
        } catch (e) {
          throw invalid(`nn.loadPeft: target_modules '${targets}' is not a regular expression (${e?.message ?? e})`);
        }
        targets = this.layers().filter((n) => pattern.test(this.#kind.module + n));
        if (targets.length === 0) throw invalid(`nn.loadPeft: target_modules '${config.target_modules}' matches none of the model's layers`);
      }
      const json = configJson({ ...config, target_modules: targets }, 'nn.loadPeft');
      this.#call('loadPeft', (h) => h.loadPeft(bytes, json));
    }

    static {
      internals = {
        addLora: (m, options, what) => m.#addLora(options, what),
        exportPeft: (m) => m.#exportPeft(),
        exportPeftAsync: (m) => m.#exportPeftAsync(),
        loadPeft: (m, bytes, config) => m.#loadPeft(bytes, config),
      };
    }
    /** Folds every adapter into its weight (then f32); the adapters are gone. */
    mergeAdapters() { this.#call('mergeAdapters', (h) => h.mergeAdapters()); }
    /** Frees the model (tensors from parameters() stay valid until they are disposed). */
    dispose() {
      if (!this.#h) return;
      if (this.#generating) this.#doomed = this.#h;
      else this.#h.delete();
      this.#h = null;
    }
  }

  /** GPT-2 in the Hugging Face layout (C++'s nn::Gpt2): tokens{batch..., "t"} -> logits{..., "t", "vocab"}. */
  class Gpt2 extends PretrainedModel {
    constructor(config, seed = 0, options) {
      if (config === adopt) {
        super(GPT2, seed);
        return;
      }
      const json = configJson(config, 'nn.Gpt2');
      checkInt(seed, 'nn.Gpt2: seed', 0);
      const [dtype, trainable, checkpointBlocks] = modelOptions(options, 'nn.Gpt2');
      super(GPT2, fc._call((M) => M.gpt2New(json, seed, dtype, trainable, checkpointBlocks)));
    }

    /** Loads model.safetensors bytes with their config.json (a parsed object). */
    static load(bytes, config, options) {
      checkBytes(bytes, 'nn.Gpt2.load: bytes');
      const json = configJson(config, 'nn.Gpt2.load');
      const [dtype, trainable, checkpointBlocks] = modelOptions(options, 'nn.Gpt2.load');
      return new Gpt2(adopt, fc._call((M) => M.gpt2Load(bytes, json, dtype, trainable, checkpointBlocks)));
    }
  }

  /** A Llama-family model in the Hugging Face layout (C++'s nn::Llama: llama and qwen2
   * checkpoints): tokens{batch..., "t"} -> logits{..., "t", "vocab"}. */
  class Llama extends PretrainedModel {
    constructor(config, seed = 0, options) {
      if (config === adopt) {
        super(LLAMA, seed);
        return;
      }
      const json = configJson(config, 'nn.Llama');
      checkInt(seed, 'nn.Llama: seed', 0);
      const [dtype, trainable, checkpointBlocks] = modelOptions(options, 'nn.Llama');
      super(LLAMA, fc._call((M) => M.llamaNew(json, seed, dtype, trainable, checkpointBlocks)));
    }

    /** Loads model.safetensors (a Uint8Array, or an array of them for a sharded checkpoint) with
     * its config.json, tensor by tensor: each goes into the wasm heap alone and is stored (converted
     * to the model's dtype) before the next, so the heap holds the model plus one tensor. */
    static load(bytes, config, options) {
      const what = 'nn.Llama.load';
      const files = Array.isArray(bytes) ? bytes : [bytes];
      if (files.length === 0) throw invalid(`${what}: bytes is an empty array (give model.safetensors)`);
      files.forEach((f, i) => checkBytes(f, `${what}: bytes${Array.isArray(bytes) ? `[${i}]` : ''}`));
      const loader = Llama.#loader(config, options, what);
      try {
        for (const file of files)
          for (const e of safetensorsEntries(file, what))
            fc._call(() => loader.add(e.name, e.dtype, e.shape, file.subarray(e.begin, e.end)));
        return new Llama(adopt, fc._call(() => loader.finish()));
      } finally {
        loader.delete();
      }
    }

    /** The same from Blobs or Files (the browser's file picker): only the header and one tensor
     * at a time are read into memory, so neither the JS heap nor the wasm heap holds the file. */
    static async loadAsync(blobs, config, options) {
      const what = 'nn.Llama.loadAsync';
      const files = Array.isArray(blobs) ? blobs : [blobs];
      if (files.length === 0) throw invalid(`${what}: blobs is an empty array (give model.safetensors)`);
      if (!files.every((f) => typeof Blob !== 'undefined' && f instanceof Blob))
        throw invalid(`${what}: blobs must be a Blob or File (or an array of them), got ${typeName(blobs)}`);
      const read = async (f, begin, end) => new Uint8Array(await f.slice(begin, end).arrayBuffer());
      const loader = Llama.#loader(config, options, what);
      try {
        for (const file of files) {
          if (file.size < 8) throw invalid(`${what}: not a safetensors file (shorter than its 8-byte header length)`);
          const n = Number(new DataView((await read(file, 0, 8)).buffer).getBigUint64(0, true));
          if (n > file.size - 8) throw invalid(`${what}: header length ${n} exceeds the file (${file.size} bytes)`);
          for (const e of entriesOf(await read(file, 8, 8 + n), 8 + n, file.size - 8 - n, what)) {
            const tensor = await read(file, e.begin, e.end);
            fc._call(() => loader.add(e.name, e.dtype, e.shape, tensor));
          }
        }
        return new Llama(adopt, fc._call(() => loader.finish()));
      } finally {
        loader.delete();
      }
    }

    static #loader(config, options, what) {
      const json = configJson(config, what);
      const [dtype, trainable, checkpointBlocks] = modelOptions(options, what);
      return fc._call((M) => M.llamaLoader(json, dtype, trainable, checkpointBlocks));
    }
  }

  /** A frozen linear map with an optional LoRA adapter (C++'s nn::LoraLinear). */
  class LoraLinear {
    #h;
    #in;
    #out;
    #inExtent;
    #weight = null;
    #bias = null;
    #a = null;
    #b = null;

    constructor(weight, bias, inAxis, outAxis) {
      const what = 'nn.LoraLinear';
      for (const [k, v] of [['inAxis', inAxis], ['outAxis', outAxis]])
        if (typeof v !== 'string' || v === '') throw invalid(`${what}: ${k} must be an axis name, got ${typeName(v)}`);
      if (inAxis === outAxis) throw invalid(`${what}: inAxis and outAxis are both '${inAxis}'`);
      input(weight, 'LoraLinear', 'weight', { axes: { [inAxis]: null, [outAxis]: null }, dtypes: BASE_DTYPES });
      if (weight.tags.length !== 2) throw invalid(`${what}: weight must have exactly the axes '${inAxis}' and '${outAxis}', got {${weight.tags.join(', ')}}`);
      const outExtent = weight.shape[weight.tags.indexOf(outAxis)];
      if (bias !== null && bias !== undefined) {
        input(bias, 'LoraLinear', 'bias', { axes: { [outAxis]: outExtent } });
        if (bias.tags.length !== 1) throw invalid(`${what}: bias must have the one axis '${outAxis}', got {${bias.tags.join(', ')}}`);
      }
      const b = bias ?? null;
      const h = fc._call((M) => M.loraLinearNew(weight._handle, b?._handle ?? null, inAxis, outAxis));
      this.#h = h;
      this.#in = inAxis;
      this.#out = outAxis;
      this.#inExtent = weight.shape[weight.tags.indexOf(inAxis)];
      try {
        this.#weight = fc._wrap(fc._call(() => h.weight()));
        const raw = fc._call(() => h.bias());
        this.#bias = raw === null ? null : fc._wrap(raw);
      } catch (e) {
        this.dispose();
        throw e;
      }
    }

    #call(method, fn) {
      if (!this.#h) throw invalid(`nn.LoraLinear.${method}: this layer was disposed`);
      return fc._call(() => fn(this.#h));
    }

    /** Adds (or replaces) the adapter: A{rank, in} ~ U(±1/sqrt(in)) from seed, B{out, rank} zero. */
    adapt(options) {
      const what = 'nn.LoraLinear.adapt';
      const { rank = 8, alpha = 8, dropout = 0, seed = 0 } = checkOptions(options, ['rank', 'alpha', 'dropout', 'seed'], what);
      const o = loraOptions({ rank, alpha, dropout, seed }, what);
      this.#call('adapt', (h) => h.adapt(o.rank, o.alpha, o.dropout, o.seed));
      const [a, b] = this.#call('adapt', (h) => [h.a(), h.b()]);
      this.#a?.dispose();
      this.#b?.dispose();
      this.#a = fc._wrap(a);
      this.#b = fc._wrap(b);
    }
    /** x{..., in} -> {..., out}; with a dropoutSeed (training), the adapter's input goes
     * through dropout with the mask that seed chooses; without one, x is read as it is. */
    forward(x, dropoutSeed) {
      if (!this.#h) throw invalid('nn.LoraLinear.forward: this layer was disposed');
      input(x, 'LoraLinear.forward', 'x', { axes: { [this.#in]: this.#inExtent }, forbid: [this.#out, 'rank'] });
      if (dropoutSeed !== undefined) checkInt(dropoutSeed, 'nn.LoraLinear.forward: dropoutSeed', 0);
      return fc._wrap(this.#call('forward', (h) => h.forward(x._handle, dropoutSeed ?? null)));
    }
    /** W + scale·(B·A) as a new f32 constant with W's axes (W alone when not adapted). */
    merge() { return fc._wrap(this.#call('merge', (h) => h.merge())); }
    /** [a, b] when adapted, else []. */
    parameters() { return this.#a ? [this.#a, this.#b] : []; }
    get weight() { return this.#weight; }
    get bias() { return this.#bias; }
    get a() { return this.#a; }
    get b() { return this.#b; }
    get in() { return this.#in; }
    get out() { return this.#out; }
    /** alpha / rank (0 when not adapted). */
    get scale() { return this.#call('scale', (h) => h.scale()); }
    get isDisposed() { return this.#h === null; }
    /** Frees the layer and its tensors (weight, bias, a, b as this layer holds them). */
    dispose() {
      for (const t of [this.#weight, this.#bias, this.#a, this.#b]) t?.dispose();
      this.#weight = this.#bias = this.#a = this.#b = null;
      if (this.#h) this.#h.delete();
      this.#h = null;
    }
  }

  const model = (m, what) => {
    if (!(m instanceof PretrainedModel)) throw invalid(`${what}: model must be an nn.Gpt2 or nn.Llama, got ${typeName(m)}`);
    return m;
  };

  /** LoRA adapters on model's layers (C++'s nn::lora): returns them (A, B per layer). */
  function lora(m, options) { return internals.addLora(model(m, 'nn.lora'), options, 'nn.lora'); }

  /** The model's adapters as PEFT's files: adapter_model.safetensors bytes and adapter_config.json
   * (an object: write it with JSON.stringify). PyTorch's peft loads them onto the same base. */
  function exportPeft(m) { return internals.exportPeft(model(m, 'nn.exportPeft')); }
  /** exportPeft for a model on any device: the adapters read back with await data() first. */
  async function exportPeftAsync(m) { return internals.exportPeftAsync(model(m, 'nn.exportPeftAsync')); }

  /** Reads PEFT's files (adapter_model.safetensors bytes, adapter_config.json parsed) into model:
   * it gets the adapters when it has none. */
  function loadPeft(m, bytes, config) {
    model(m, 'nn.loadPeft');
    checkBytes(bytes, 'nn.loadPeft: bytes');
    configJson(config, 'nn.loadPeft');  // a JSON object
    internals.loadPeft(m, bytes, config);
  }

  return { Gpt2, Llama, LoraLinear, lora, exportPeft, exportPeftAsync, loadPeft };
}
