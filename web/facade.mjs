// The fucina JavaScript facade: loads the best wasm variant and wraps the Embind binding in a
// small typed API (ops named as in C++, the context implicit). Everything here runs in Node and in
// browsers alike: what differs (finding and loading the wasm files, thread counts, reading files) is
// a platform object from platform.node.mjs or platform.browser.mjs, chosen by the package's exports
// conditions (index.node.mjs / index.browser.mjs), so a browser bundle never reaches a Node built-in.
// Browsers should run the engine in a Web Worker, since Emscripten busy-waits on the main thread.

import { GpuShim } from './webgpu.mjs';
import { FucinaError, invalid, typeName, isPlainObject, checkInt, checkOptions, pair } from './errors.mjs';
import { makeNn } from './nn.mjs';
import { OPS, ENUMS, conv2dOptions, tensor as tensorArg } from './ops.table.mjs';

export { FucinaError };

const VARIANTS = ['threaded-simd', 'simd', 'relaxed-simd'];

// The smallest module with relaxed SIMD's f32x4.relaxed_madd (final opcode 0xfd 0x105): a function
// (v128, v128, v128) -> v128 returning relaxed_madd of its arguments. An engine that validates it
// can compile the relaxed-simd variant; one that does not would fail on it (docs/relaxed-simd.md).
const RELAXED_PROBE = new Uint8Array([0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
  0x01, 0x08, 0x01, 0x60, 0x03, 0x7b, 0x7b, 0x7b, 0x01, 0x7b,  // type: (v128 v128 v128) -> v128
  0x03, 0x02, 0x01, 0x00,  // function 0 has type 0
  0x0a, 0x0d, 0x01, 0x0b, 0x00, 0x20, 0x00, 0x20, 0x01, 0x20, 0x02, 0xfd, 0x85, 0x02, 0x0b]);

/** Whether this engine runs relaxed SIMD (Chrome >= 114, Node >= 22; Node 20 with --experimental-wasm-relaxed-simd). */
export function relaxedSimdSupported() {
  try {
    return WebAssembly.validate(RELAXED_PROBE);
  } catch {
    return false;
  }
}

// auto: threaded-simd where threads are possible and more than one may run; else the one-thread
// build, relaxed-simd where the engine validates relaxed SIMD, simd elsewhere.
function chooseVariant(requested, platform, threads) {
  const threadsPossible = typeof SharedArrayBuffer !== 'undefined' && platform.threadsPossible();
  if (requested === undefined || requested === 'auto') {
    if (threadsPossible && threads !== 1) return 'threaded-simd';
    return relaxedSimdSupported() ? 'relaxed-simd' : 'simd';
  }
  if (!VARIANTS.includes(requested)) {
    throw invalid(`unknown variant ${typeof requested === 'string' ? `'${requested}'` : typeName(requested)} ` +
      '(use "auto", "threaded-simd", "simd" or "relaxed-simd")');
  }
  if (requested === 'threaded-simd' && !threadsPossible)
    throw invalid('threaded-simd needs SharedArrayBuffer, which a browser gives only to ' +
      'cross-origin isolated pages (COOP/COEP headers)');
  if (requested === 'relaxed-simd' && !relaxedSimdSupported()) {
    throw new FucinaError('LoadFailed', 'LoadFailed: this engine has no relaxed SIMD (Chrome >= 114, ' +
      'Node >= 22 or Node 20 with --experimental-wasm-relaxed-simd), so it cannot compile the relaxed-simd variant: use "simd"');
  }
  return requested;
}

// Where each file of a variant is: locateFile(name, variant) wins, then wasmUrl (the .wasm alone)
// and baseUrl (a folder holding the package's wasm/ files, e.g. on a CDN); else the platform's own
// place (beside this module, as the bundler rewrote it). Returns a URL or path string per name.
function locator(options, variant, platform) {
  const { locateFile, baseUrl, wasmUrl } = options;
  if (locateFile !== undefined && typeof locateFile !== 'function')
    throw invalid(`init: locateFile must be a function (file name, variant) => URL, got ${typeName(locateFile)}`);
  for (const [name, v] of [['baseUrl', baseUrl], ['wasmUrl', wasmUrl]])
    if (v !== undefined && typeof v !== 'string' && !(v instanceof URL))
      throw invalid(`init: ${name} must be a string or URL, got ${typeName(v)}`);
  if (wasmUrl !== undefined && (options.variant === undefined || options.variant === 'auto'))
    throw invalid('init: wasmUrl names one variant\'s .wasm file: pass variant "simd", "relaxed-simd" or "threaded-simd" with it');
  return (name, fallback) => {
    if (locateFile) {
      const url = locateFile(name, variant);
      if (typeof url !== 'string' && !(url instanceof URL))
        throw invalid(`init: locateFile('${name}') returned ${typeName(url)}, not a URL or string`);
      return String(url);
    }
    if (wasmUrl !== undefined && name.endsWith('.wasm')) return String(wasmUrl);
    if (baseUrl !== undefined) return new URL(name, new URL(String(baseUrl).replace(/\/?$/, '/'), platform.base())).href;
    return fallback;
  };
}

/** Makes the package's init(options) for one platform (see platform.*.mjs). */
export function makeInit(platform) {
  return async function init(options = {}) {
    checkOptions(options, ['threads', 'variant', 'backend', 'device', 'gpu', 'deviceLimits', 'locateFile', 'baseUrl', 'wasmUrl'], 'init');
    const backend = options.backend === undefined ? 'cpu' : options.backend;
    if (backend !== 'cpu' && backend !== 'reference')
      throw invalid(`init: backend must be 'cpu' or 'reference', got ${JSON.stringify(options.backend)}`);
    const device = options.device === undefined ? 'cpu' : options.device;
    if (device !== 'cpu' && device !== 'webgpu')
      throw invalid(`init: device must be 'cpu' or 'webgpu', got ${JSON.stringify(options.device)}`);
    // The GPU first: without one init fails before loading the engine.
    let shim = null;
    if (options.deviceLimits !== undefined && device !== 'webgpu') throw invalid("init: deviceLimits needs device: 'webgpu'");
    if (device === 'webgpu') {
      const limits = checkOptions(options.deviceLimits, ['maxStorageBufferBindingSize', 'maxBufferSize', 'memory'], 'init: deviceLimits');
      for (const [k, v] of Object.entries(limits)) checkInt(v, `init: deviceLimits.${k}`, 1 << 14);
      const gpu = options.gpu ?? globalThis.navigator?.gpu;
      if (!gpu) {
        throw new FucinaError('DeviceUnavailable', 'DeviceUnavailable: no WebGPU here (no navigator.gpu; in Node pass ' +
          "init({ device: 'webgpu', gpu }) with gpu = create([]) from the npm package webgpu)");
      }
      shim = await GpuShim.create(gpu, limits);
    }
    const variant = chooseVariant(options.variant, platform, options.threads);
    let threads = 1;
    if (variant === 'threaded-simd') {
      threads = checkInt(options.threads ?? Math.min(await platform.defaultThreads(), 8), 'init: threads', 1, 64);
    } else if (options.threads !== undefined && options.threads !== 1) {
      console.warn(`fucina: the ${variant} variant runs on one thread (asked for ${options.threads})`);
    }
    if (options.variant === undefined && variant !== 'threaded-simd' && options.threads !== 1 && platform.name === 'browser')
      console.info(`fucina: this page is not cross-origin isolated; using the single-threaded ${variant} build`);
    const moduleOptions = { fucinaPoolSize: Math.max(1, threads - 1) };
    let M;
    try {
      const createFucina = await platform.load(variant, moduleOptions, locator(options, variant, platform));
      M = await createFucina(moduleOptions);
    } catch (e) {
      if (e instanceof FucinaError) throw e;
      throw new FucinaError('LoadFailed', `LoadFailed: cannot load the ${variant} engine (${e?.message ?? e}); ${platform.loadHint}`);
    }
    platform.started?.(M);
    M.makeError = (code, message) => new FucinaError(code, message);
    M.failure = null;  // the FucinaError of the last failed engine call (see Fucina._call)
    M.pending = null;  // { error }: what a user callback threw, while C++ unwinds
    M.copyOut = (view) => {  // for the binding: a JS copy of wasm memory, or null without room
      try {
        return view.slice();
      } catch {
        return null;
      }
    };
    const fc = new Fucina(M, variant);
    fc._call(() => M.init(threads, backend));
    if (shim) {
      M.fucinaGpu = shim;
      fc._call(() => M.attachWebgpu());
      fc.defaultDevice = 'webgpu';
      shim.onLost = () => fc._deviceLost();
    }
    fc.threads = fc._call(() => M.threads());
    fc.backend = fc._call(() => M.backend());
    return fc;
  };
}

// Anything the binding layer throws (embind's BindingError for a wrong argument type, a
// RangeError from a JS allocation, ...) becomes a FucinaError.
function normalize(e) {
  if (e instanceof FucinaError) return e;
  if (e instanceof WebAssembly.RuntimeError) return new FucinaError('Internal', `Internal: the engine trapped (${e.message})`);
  if (e instanceof RangeError && /memory|allocat/i.test(e.message)) return new FucinaError('OutOfMemory', `OutOfMemory: ${e.message}`);
  return invalid(e?.message ?? String(e));
}

function checkTags(tags, what = 'tags') {
  if (!Array.isArray(tags) || !tags.every((t) => typeof t === 'string'))
    throw invalid(`${what} must be an array of axis names (strings)`);
  return tags;
}

function checkShape(shape, what = 'shape') {
  if (!Array.isArray(shape)) throw invalid(`${what} must be an array of non-negative integers`);
  shape.forEach((e, i) => checkInt(e, `${what}[${i}]`, 0));
  return shape;
}

function checkNumber(x, what) {
  if (typeof x !== 'number') throw invalid(`${what} must be a number, got ${typeName(x)}`);
  return x;
}

function checkBoolean(x, what) {
  if (typeof x !== 'boolean') throw invalid(`${what} must be a boolean, got ${typeName(x)}`);
  return x;
}

function checkString(x, what) {
  if (typeof x !== 'string') throw invalid(`${what} must be a string, got ${typeName(x)}`);
  return x;
}

function checkValues(values) {
  const ok = ArrayBuffer.isView(values) ? !(values instanceof DataView)
    : Array.isArray(values) && values.every((v) => typeof v === 'number');
  if (!ok) throw invalid('values must be an array or typed array of numbers');
  return values;
}

const DTYPES = ENUMS.dtype.values;
function checkDType(dtype) {
  if (!DTYPES.includes(dtype)) throw invalid(`unknown dtype '${dtype}' (use ${DTYPES.join(', ')})`);
  return dtype;
}

class Fucina {
  #M;
  #scopes = [];  // stacks of tensors made inside fc.scope calls, innermost last
  #defaultDevice = 'cpu';

  constructor(M, variant) {
    this.#M = M;
    this.variant = variant;
    this.Tensor = Tensor;
    this.FucinaError = FucinaError;
    this.optim = makeOptim(this);
    this.nn = makeNn(this);
  }

  // The engine's messages are written for C++ callers (a context argument, snake_case option
  // names, Class::method prefixes). JS callers get the same message in the facade's terms; the
  // error code never changes. Specific rewrites first, then the general C++ spellings.
  static #wording = [
    [/seed it with backwardWithGrad\(ctx, grad_output\)/g, 'pass a gradient shaped like it: t.backward(gradOutput)'],
    [/backwardWithGrad: gradient /g, 'backward: gradOutput '],
    [/backwardWithGrad on /g, 'backward(gradOutput) on '],
    [/keep it with ExecScope::keep to use it after the scope closes/g,
      'return it from the fc.scope callback to use it after the scope ends'],
    [/clipGradNorm option max_norm/g, 'optim.clipGradNorm: maxNorm'],
    [/^(InvalidGradcheckOptions: )(eps|abs_tol|rel_tol) /, '$1gradcheck: $2 '],
    [/\bSGD option /g, 'optim.sgd: option '],
    [/\bAdamW option /g, 'optim.adamw: option '],
    [/\bAdam option /g, 'optim.adam: option '],
    [/option beta1\b/g, 'option betas[0]'],
    [/option beta2\b/g, 'option betas[1]'],
    [/\bOptimizer::add: /g, 'optimizer params: '],
    [/\bOptimizer::step: /g, 'optimizer step: '],
    // conv2d / pooling geometry: the C++ per-axis fields are the JS [h, w] pairs' entries.
    [/\b(stride|dilation|kernel)_h\b/g, '$1[0]'],
    [/\b(stride|dilation|kernel)_w\b/g, '$1[1]'],
    [/\bpad_h\b/g, 'padding[0]'],
    [/\bpad_w\b/g, 'padding[1]'],
    [/\b(to|contiguous|detach)\(ctx, DType::(\w+)\)/g, ".$1('$2')"],
    [/\b(\w+)\(ctx\)/g, '.$1()'],
    [/\b(\w+)\(ctx, /g, '$1('],
    [/\bDType::(\w+)/g, "'$1'"],
    [/\bTensor::(\w+)/g, '$1'],
    [/(?<![\w'{,=])([a-z]+)_([a-z])([a-z]*)(?![\w'=])/g, (m, a, b, c) => (Fucina.#snakeOptions.has(m) ? a + b.toUpperCase() + c : m)],
  ];
  // The option names the engine spells in snake_case whose JS name is their camelCase.
  static #snakeOptions = new Set(['label_smoothing', 'weight_decay', 'abs_tol', 'rel_tol', 'max_norm', 'grad_output']);

  /** An engine failure worded for JS callers (same code); one already in JS terms as is. */
  static #inJsTerms(e) {
    const message = Fucina.#wording.reduce((m, [from, to]) => m.replace(from, to), e.message);
    return message === e.message ? e : new FucinaError(e.code, message);
  }

  // Runs fn(M). A failed engine call returns normally and leaves its FucinaError in M.failure (no
  // JS exception may cross C++ frames, see web/bindings.cpp); what a user callback threw during
  // the call, parked in M.pending, is rethrown as thrown (null and strings included).
  _call(fn) {
    const M = this.#M;
    const outer = M.pending;
    M.pending = null;
    let result;
    let thrown = null;
    try {
      result = fn(M);
    } catch (e) {
      thrown = normalize(e);
    }
    const { failure, pending } = M;
    M.failure = null;
    M.pending = outer;
    if (pending) throw pending.error;
    if (thrown) throw thrown;
    if (failure) throw Fucina.#inJsTerms(failure);
    return result;
  }

  /** y, checked to be a live Tensor of this engine (what: the argument, for messages). */
  _isTensor(v) { return v instanceof Tensor; }
  /** fn() with no scope open: what it makes is the caller's to dispose (an async method's
   * tensors outlive the scope its first part ran in). */
  _unscoped(fn) {
    const open = this.#scopes;
    this.#scopes = [];
    try {
      return fn();
    } finally {
      this.#scopes = open;
    }
  }

  _operand(y, what) {
    if (!(y instanceof Tensor)) {
      // A Tensor class of a second copy of this module (two bundles, two import paths): "must be
      // a Tensor, got a Tensor" would be a riddle.
      if (y && typeof y === 'object' && y.constructor?.name === 'Tensor' && '_engine' in y)
        throw invalid(`${what} is a Tensor of another copy of the fucina module (two imports of different files); ` +
          'tensors work only with the init() that made them');
      throw invalid(`${what} must be a Tensor, got ${typeName(y)}`);
    }
    if (y._engine !== this)
      throw invalid(`${what} belongs to another fucina instance (tensors work only with the init() that made them)`);
    void y._handle;  // TensorReleased if disposed
    return y;
  }

  _wrap(handle) {
    const t = new Tensor(this, handle);
    const scope = this.#scopes[this.#scopes.length - 1];
    if (scope) scope.add(t);
    return t;
  }

  // ---- packed weights (inference-only, see PackedRhs)
  /** w (f32, f16, bf16 or q8_0, not requiring grad) packed once for products contracting `axis`. */
  packRhs(w, axis) {
    const t = this._operand(w, 'packRhs: w');
    checkString(axis, 'packRhs: axis');
    return new PackedRhs(this, this._call((M) => M.packRhs(t._handle, axis)));
  }
  /** packed, checked to be a live PackedRhs of this engine; its raw handle. */
  _packed(packed, what) {
    if (!(packed instanceof PackedRhs)) throw invalid(`${what}: packed must be a PackedRhs (from fc.packRhs), got ${typeName(packed)}`);
    if (packed._engine !== this) throw invalid(`${what}: packed belongs to another fucina instance`);
    return packed._raw(what);
  }

  // ---- creation
  /** variable(tags, shape, values, dtype = 'f32'), or variable(tensor): a trainable leaf holding a
   * copy. f16/bf16 leaves take f32 gradients; other dtypes fail with UnsupportedGradient. */
  variable(tags, shape, values, dtype = 'f32') {
    if (tags instanceof Tensor) {
      const value = this._operand(tags, 'variable');
      return this._wrap(this._call((M) => M.variableOf(value._handle)));
    }
    return this._wrap(this._call((M) => M.fromValues(checkTags(tags), checkShape(shape), checkValues(values), checkDType(dtype), true)));
  }
  constant(tags, shape, values, dtype = 'f32') {
    return this._wrap(this._call((M) => M.fromValues(checkTags(tags), checkShape(shape), checkValues(values), checkDType(dtype), false)));
  }
  full(tags, shape, value, dtype = 'f32') {
    return this._wrap(this._call((M) => M.full(checkTags(tags), checkShape(shape), checkNumber(value, 'value'), checkDType(dtype))));
  }
  zeros(tags, shape, dtype = 'f32') { return this.full(tags, shape, 0, dtype); }
  ones(tags, shape, dtype = 'f32') { return this.full(tags, shape, 1, dtype); }
  scalar(value, dtype = 'f32') { return this.full([], [], value, dtype); }
  /** Seeded f32 constants, the same values as C++'s Tensor::uniform / Tensor::normal. */
  uniform(tags, shape, lo, hi, seed) { return this.#random(tags, shape, 'uniform', lo, hi, seed); }
  normal(tags, shape, mean, std, seed) { return this.#random(tags, shape, 'normal', mean, std, seed); }
  #random(tags, shape, kind, a, b, seed) {
    const args = [checkNumber(a, `${kind}: ${kind === 'normal' ? 'mean' : 'lo'}`),
      checkNumber(b, `${kind}: ${kind === 'normal' ? 'std' : 'hi'}`), checkInt(seed, `${kind}: seed`, 0)];
    return this._wrap(this._call((M) => M.random(checkTags(tags), checkShape(shape), kind, ...args)));
  }

  // ---- safetensors: bytes (a Uint8Array) in and out; axis names travel in the metadata
  /** Encodes { name: Tensor } (and string metadata) in the safetensors format. */
  encodeSafetensors(tensors, metadata = {}) {
    if (!isPlainObject(tensors)) throw invalid('encodeSafetensors: tensors must be an object of named Tensors');
    if (!isPlainObject(metadata) || !Object.values(metadata).every((v) => typeof v === 'string'))
      throw invalid('encodeSafetensors: metadata must be an object of strings');
    const names = Object.keys(tensors);
    const hs = names.map((n) => this._operand(tensors[n], `encodeSafetensors: tensors.${n}`)._handle);
    return this._call((M) => M.encodeSafetensors(names, hs, metadata));
  }
  /** Decodes safetensors bytes into { tensors: { name: Tensor }, metadata }. */
  decodeSafetensors(bytes) {
    const { names, tensors, metadata } = this._call((M) => M.decodeSafetensors(bytes));
    return { tensors: Object.fromEntries(names.map((n, i) => [n, this._wrap(tensors[i])])), metadata };
  }
  _loadParameters(params, bytes) {  // fc.nn.loadParameters: in place, like an optimizer update
    const hs = handlesOf(this, params, 'loadParameters: params');
    this._call((M) => M.loadParameters(hs, bytes));
  }

  // concat, stack, einsum, where, groupedAttention: from the op table (installOps, below).

  // ---- the prepared convolution (hand-written: web/ops.table.mjs, HAND_WRITTEN)
  /** The weight (and options.bias) of conv2d transformed once for conv2dPrepared /
   * conv2dPreparedRelu (inference only): a handle to dispose() when done. */
  prepareConv2dWeights(weight, options) {
    const flat = [...PREPARE_CHECKS.weight(weight, {}, this), ...PREPARE_CHECKS.options(options, {}, this)];
    return new PreparedConv2d(this, this._call((M) => M.prepareConv2dWeights(...flat)));
  }

  // ---- modes, scopes, memory
  noGrad(fn) {
    if (typeof fn !== 'function') throw invalid(`noGrad: fn must be a function, got ${typeName(fn)}`);
    this._call((M) => M.noGradPush());
    try {
      return fn();
    } finally {
      this._call((M) => M.noGradPop());
    }
  }
  isGradEnabled() { return this.#M.isGradEnabled(); }

  // ---- devices (Note [Device reads])
  /** Where creation functions put new tensors: 'cpu', or 'webgpu' after init({ device: 'webgpu' }). */
  get defaultDevice() { return this.#defaultDevice; }
  set defaultDevice(device) {
    if (device !== 'cpu' && device !== 'webgpu') throw invalid(`defaultDevice must be 'cpu' or 'webgpu', got ${JSON.stringify(device)}`);
    this._call((M) => M.setDefaultDevice(device));
    this.#defaultDevice = device;
  }
  // The device is gone: its tensors fail with DeviceLost, new tensors are made on the cpu.
  _deviceLost() {
    this._call((M) => M.loseWebgpu());
    this.#defaultDevice = 'cpu';
  }
  /** Resolves when the device has run all the work submitted so far (at once without one). */
  async sync() {
    await this.#M.fucinaGpu?.sync();
  }
  /** The values of t as toArray() gives them, from any device: a device tensor's are copied back
   * once the device has run the work that makes them. */
  async _read(t) {
    if (t.device === 'cpu') return t.toArray();
    const M = this.#M;
    const { buffer, offset, bytes, dtype, keep } = this._call(() => t._handle.deviceRead());
    let pending;
    try {
      pending = bytes === 0 ? Promise.resolve(new ArrayBuffer(0)) : M.fucinaGpu.read(buffer, offset, bytes);
    } finally {
      keep.delete();  // the copy is submitted: the buffer may go back to the pool
    }
    const raw = await pending;
    if (dtype === 'f32') return new Float32Array(raw);
    if (dtype === 'f16' || dtype === 'bf16') return halvesToF32(new Uint16Array(raw), dtype);
    const View = { i32: Int32Array, i64: BigInt64Array, f64: Float64Array, u8: Uint8Array }[dtype];
    if (!View) throw new FucinaError('UnsupportedOnDevice', `UnsupportedOnDevice: data() of a ${dtype} device tensor`);
    return Float32Array.from(new View(raw), Number);
  }

  /** Runs fn; every tensor made inside is disposed at the end, except those fn returns (a tensor,
   * or an array or plain object of them), which move to the enclosing scope. */
  scope(fn) {
    if (typeof fn !== 'function') throw invalid(`scope: fn must be a function, got ${typeName(fn)}`);
    const made = new Set();
    this.#scopes.push(made);
    let result;
    try {
      result = fn();
    } finally {
      this.#scopes.pop();
      const kept = new Set();
      collectTensors(result, kept);
      const parent = this.#scopes[this.#scopes.length - 1];
      for (const t of made) {
        if (kept.has(t)) parent?.add(t);
        else t.dispose();
      }
    }
    return result;
  }

  memory() {
    const m = this._call((M) => M.memory());
    const gpu = this.#M.fucinaGpu;
    if (m.devices.webgpu && gpu) {
      const { memory, ...limits } = gpu.limits;  // memory: absent without a budget
      if (memory !== Infinity) limits.memory = memory;
      Object.assign(m.devices.webgpu, { downloadedBytes: gpu.downloadedBytes, submits: gpu.submits, limits });
    }
    return m;
  }
  resetPeak() { this._call((M) => M.resetPeak()); }
  // Gives the buffers the allocator keeps for reuse back to the heap (wasm memory never shrinks,
  // but the heap can hand them to other sizes).
  trimCache() { this._call((M) => M.trimCache()); }

  // ---- checkpoint, custom VJPs, gradcheck: JS callbacks the engine calls back
  // Wraps a user callback for C++: raw handles in, a raw handle (or array) out. Nothing may be
  // thrown back into C++: an exception is parked in M.pending (the first one wins) for _call.
  #callback(fn) {
    const M = this.#M;
    return (...rawArgs) => {
      try {
        return this.scope(() => {
          const wrapOne = (a) => (a instanceof M.Handle ? this._wrap(a) : a);
          const args = rawArgs.map((a) => (Array.isArray(a) ? a.map(wrapOne) : wrapOne(a)));
          return fn(...args);
        });
      } catch (e) {
        M.pending ??= { error: e };
        return null;
      }
    };
  }

  // A callback's result goes to the engine as a new JS handle on the same tensor (the engine
  // deletes it); the user's own wrapper is untouched, and the scope disposes it if it made it.
  #release(result, what) {
    return this._operand(result, `${what}'s result`)._handle.clone();
  }

  checkpoint(block, inputs, extra) {
    if (typeof block !== 'function') throw invalid('checkpoint: block must be a function');
    const hs = handlesOf(this, inputs, 'checkpoint: inputs');
    const run = this.#callback((ins) => this.#release(block(...ins, extra), 'the checkpoint block'));
    return this._wrap(this._call((M) => M.checkpoint(run, hs)));
  }

  // tail(): a checkpointed block's last ops, whose values the recompute computes only where
  // something reads them (Note [Checkpoint tail]); anywhere else it is tail().
  checkpointTail(tail) {
    if (typeof tail !== 'function') throw invalid('checkpointTail: tail must be a function');
    const run = this.#callback(() => this.#release(tail(), 'the checkpoint tail'));
    return this._wrap(this._call((M) => M.checkpointTail(run)));
  }

  customVjp(spec, inputs, extra) {
    if (!spec || typeof spec.forward !== 'function' || typeof spec.backward !== 'function')
      throw invalid('customVjp: spec needs forward(inputs, extra) and backward(inputs, output, gy, needsGrad, extra)');
    const hs = handlesOf(this, inputs, 'customVjp: inputs');
    const forward = this.#callback((ins) => this.#release(spec.forward(ins, extra), 'customVjp forward'));
    const backward = this.#callback((ins, output, gy, needs) => {
      const grads = spec.backward(ins, output, gy, needs, extra);
      // Fewer entries than inputs leave the rest empty: the engine then says MissingBackwardGradient
      // for a slot that needs a gradient, as for a null.
      if (!Array.isArray(grads) || grads.length > ins.length)
        throw invalid(`customVjp backward must return an array of at most ${ins.length} (Tensor | null), one per input, got ${Array.isArray(grads) ? `${grads.length} entries` : typeName(grads)}`);
      // Every entry is checked before any handle is made, so a bad one leaks nothing.
      grads.forEach((g, i) => { if (g != null) this._operand(g, `customVjp backward's gradient [${i}]`); });
      return grads.map((g) => (g == null ? null : g._handle.clone()));
    });
    const name = typeof spec.name === 'string' ? spec.name : 'customVjp';
    return this._wrap(this._call((M) => M.customVjp(name, forward, backward, hs)));
  }

  gradcheck(lossFn, inputs, options = {}) {
    if (typeof lossFn !== 'function') throw invalid('gradcheck: lossFn must be a function');
    const { eps = 1e-3, absTol = 1e-3, relTol = 1e-2, printMismatch = true } =
      checkOptions(options, ['eps', 'absTol', 'relTol', 'printMismatch'], 'gradcheck');
    checkBoolean(printMismatch, 'gradcheck: printMismatch');
    const hs = handlesOf(this, inputs, 'gradcheck: inputs');
    const loss = this.#callback((ins) => this.#release(lossFn(...ins), 'the gradcheck loss'));
    try {
      return this._call((M) => M.gradcheck(loss, hs, checkNumber(eps, 'gradcheck: eps'),
        checkNumber(absTol, 'gradcheck: absTol'), checkNumber(relTol, 'gradcheck: relTol')));
    } catch (e) {
      // The first failing element, where the platform prints (the C++ side prints to stderr).
      if (printMismatch && e instanceof FucinaError && e.code === 'GradientMismatch') console.error(e.message);
      throw e;
    }
  }
}

function handlesOf(fc, tensors, what) {
  if (!Array.isArray(tensors)) throw invalid(`${what} must be an array of tensors, got ${typeName(tensors)}`);
  return tensors.map((t, i) => fc._operand(t, `${what}[${i}]`)._handle);
}

function collectTensors(value, out) {
  if (value instanceof Tensor) out.add(value);
  else if (Array.isArray(value)) value.forEach((v) => collectTensors(v, out));
  else if (value && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype)
    Object.values(value).forEach((v) => collectTensors(v, out));
}

export class Tensor {
  #fc;
  #h;

  constructor(fc, handle) {
    this.#fc = fc;
    this.#h = handle;
  }

  get _handle() {
    if (!this.#h) throw new FucinaError('TensorReleased', 'TensorReleased: this tensor was disposed');
    return this.#h;
  }
  get _engine() { return this.#fc; }
  _operand(y, what) { return this.#fc._operand(y, what); }

  #get(fn) { return this.#fc._call(() => fn(this._handle)); }
  // Calls the raw handle and wraps the resulting handle (registered with the open scope).
  _make(fn) { return this.#fc._wrap(this.#fc._call(() => fn(this._handle))); }

  get tags() { return this.#get((h) => h.tags()); }
  get shape() { return this.#get((h) => h.shape()); }
  get dtype() { return this.#get((h) => h.dtype()); }
  get device() { return this.#get((h) => h.device()); }
  get requiresGrad() { return this.#get((h) => h.requiresGrad()); }
  get isDisposed() { return this.#h === null; }

  backward(gradOutput) {
    const g = gradOutput === undefined ? undefined : this._operand(gradOutput, 'backward: gradOutput');
    this.#get((h) => h.backward(g?._handle));
  }
  grad() {
    const g = this.#get((h) => h.grad());
    return g === null ? null : this.#fc._wrap(g);
  }
  zeroGrad() { this.#get((h) => h.zeroGrad()); }
  detach() { return this._make((h) => h.detach()); }
  toArray() { return this.#get((h) => h.toArray()); }
  /** The values (as toArray() gives them) of a tensor on any device, read asynchronously. */
  async data() { return this.#fc._read(this); }
  item() { return this.#get((h) => h.item()); }
  dispose() {
    if (this.#h) {
      this.#h.delete();
      this.#h = null;
    }
  }

  /** One line for people: axes and extents, dtype, requiresGrad and, for a tensor of at most
   * 20 elements, the values (nested by axis, 6 significant digits); never throws. */
  toString() {
    if (!this.#h) return 'Tensor (disposed)';
    try {
      const [tags, shape, dtype] = [this.tags, this.shape, this.dtype];
      const head = `Tensor {${tags.map((t, i) => `${t}=${shape[i]}`).join(', ')}} ${dtype}${this.requiresGrad ? ' requiresGrad' : ''}`;
      const n = shape.reduce((a, b) => a * b, 1);
      if (n > 20) return `${head} (${n} elements)`;
      const v = Array.from(this.toArray(), (x) => String(Number.isInteger(x) ? x : +x.toPrecision(6)));
      const nest = (d, offset, stride) => (d === shape.length ? v[offset]
        : `[${Array.from({ length: shape[d] }, (_, i) => nest(d + 1, offset + i * (stride / shape[d]), stride / shape[d])).join(', ')}]`);
      return `${head} ${nest(0, 0, n)}`;
    } catch (e) {
      return `Tensor (unreadable: ${e?.message ?? e})`;
    }
  }
  /** What Node's util.inspect and console.log show (the facade imports nothing from Node). */
  [Symbol.for('nodejs.util.inspect.custom')]() { return this.toString(); }

  // ---- packed products (ops/packed.cpp): constants; a grad-requiring operand fails with
  // GradientPackedMatmulUnsupported (dense dotPacked) or GradientQuantizedMatmulUnsupported.
  #packedOp(name, ...args) { return this.#fc._wrap(this.#fc._call((M) => M[name](this._handle, ...args))); }
  /** dot(w, packed.axis) of the packed w (+ bias, whose axes are exactly packed.tags). */
  dotPacked(packed, bias) {
    const p = this.#fc._packed(packed, 'dotPacked');
    const b = bias === undefined || bias === null ? null : this._operand(bias, 'dotPacked: bias')._handle;
    return this.#packedOp('dotPacked', p, b);
  }
  /** rmsNormMul(packed.axis, weight, eps) then dotPacked(packed). */
  rmsNormMulDotPacked(weight, packed, eps = 1e-6) {
    const w = this._operand(weight, 'rmsNormMulDotPacked: weight')._handle;
    const p = this.#fc._packed(packed, 'rmsNormMulDotPacked');
    return this.#packedOp('rmsNormMulDotPacked', w, p, checkNumber(eps, 'rmsNormMulDotPacked: eps'));
  }
  /** swiglu(packed.axis) then dotPacked(packed): packed.axis holds [gate | up], twice the packed depth. */
  splitSwiGluDotPacked(packed) { return this.#packedOp('splitSwiGluDotPacked', this.#fc._packed(packed, 'splitSwiGluDotPacked')); }
  /** geglu(packed.axis) then dotPacked(packed) with a quantized (q8_0) packed weight. */
  gegluQuantDotPacked(packed) { return this.#packedOp('gegluQuantDotPacked', this.#fc._packed(packed, 'gegluQuantDotPacked')); }

  // Every other op is a method made from the op table (installOps, below).
  // ---- the prepared convolution (fc.prepareConv2dWeights) ----
  /** conv2d with the weight (and bias) of a PreparedConv2d: inference only. */
  conv2dPrepared(prepared) { return this.#prepared('conv2dPrepared', prepared, false); }
  /** relu(conv2dPrepared(prepared)), fused. */
  conv2dPreparedRelu(prepared) { return this.#prepared('conv2dPreparedRelu', prepared, true); }
  #prepared(op, prepared, relu) {
    if (!(prepared instanceof PreparedConv2d)) throw invalid(`${op}: prepared must be a PreparedConv2d (from fc.prepareConv2dWeights), got ${typeName(prepared)}`);
    if (prepared._engine !== this.#fc) throw invalid(`${op}: prepared belongs to another fucina instance`);
    const p = prepared._raw(op);
    return this.#fc._wrap(this.#fc._call((M) => M.conv2dPrepared(this._handle, p, relu)));
  }

  // ---- position encodings (ops/rope.cpp) ----
  /**
   * rope({ position = 't', dim = 'd', base = 10000, offset = 0, mode = 'half' }), or
   * rope(cos, sin, options) with constant tables {position, dim: D/2} (rows offset.. are used).
   */
  rope(cosOrOptions, sin, options) {
    const tables = cosOrOptions instanceof Tensor;
    const c = tables ? this._operand(cosOrOptions, 'rope: cos') : null;
    const s = tables ? this._operand(sin, 'rope: sin') : null;
    const { position = 't', dim = 'd', base = 10000, offset = 0, mode = 'half' } =
      checkOptions(tables ? options : cosOrOptions, ['position', 'dim', 'base', 'offset', 'mode'], 'rope');
    return this._make((h) => h.rope(c?._handle ?? null, s?._handle ?? null, checkString(position, 'rope: position'),
      checkString(dim, 'rope: dim'), checkNumber(base, 'rope: base'), checkInt(offset, 'rope: offset', 0),
      checkString(mode, 'rope: mode')));
  }
}

// ---------------------------------------------------------------- handles the facade owns
/** A C++ object made for one engine (a packed weight, a prepared convolution): its raw Embind
 * handle until dispose(). kind names it in the error a disposed one gives. */
class OwnedHandle {
  #fc;
  #h;
  #kind;

  constructor(fc, handle, kind) {
    this.#fc = fc;
    this.#h = handle;
    this.#kind = kind;
  }

  get _engine() { return this.#fc; }
  /** The raw handle (what: the caller, for the message when disposed). */
  _raw(what) {
    if (!this.#h) throw invalid(`${what}: this ${this.#kind} was disposed`);
    return this.#h;
  }
  get isDisposed() { return this.#h === null; }
  /** Frees the C++ object now; idempotent. */
  dispose() {
    if (this.#h) {
      this.#h.delete();
      this.#h = null;
    }
  }
}

// ---------------------------------------------------------------- packed weights
/**
 * A weight packed once by fc.packRhs for Tensor.dotPacked and its fused forms (inference-only).
 * It holds its own copy (dense: f32 panels; a q8_0 weight with blocks along the contracted axis:
 * its blocks), counted by fc.memory(), until dispose(); fc.scope does not dispose it.
 */
export class PackedRhs extends OwnedHandle {
  constructor(fc, handle) { super(fc, handle, 'packed weight'); }
  #get(what, fn) { return this._engine._call(() => fn(this._raw(what))); }
  /** The contracted axis and its extent. */
  get axis() { return this.#get('axis', (h) => h.axis()); }
  get depth() { return this.#get('depth', (h) => h.depth()); }
  /** The weight's other axes (the product's last axes) and their extents. */
  get tags() { return this.#get('tags', (h) => h.tags()); }
  get shape() { return this.#get('shape', (h) => h.shape()); }
  /** 'f32' (dense panels) or 'q8_0' (quantized blocks); sourceDtype: the weight's dtype. */
  get dtype() { return this.#get('dtype', (h) => h.dtype()); }
  get sourceDtype() { return this.#get('sourceDtype', (h) => h.sourceDtype()); }
  get bytes() { return this.#get('bytes', (h) => h.bytes()); }
  toString() { return this.isDisposed ? 'PackedRhs (disposed)' : this._raw('toString').describe(); }
}

// ---------------------------------------------------------------- the op table
// Each op of web/ops.table.mjs becomes a method (of Tensor, or of the engine) that checks its
// arguments in order, flattens them into the binding's arguments (an options object into its
// fields, a pair into two integers) and calls the binding of the same name, which web/gen-ops.mjs
// generated from the same table with the same order (web/ops.bindings.inc).

/**
 * The check of one argument of op: (value, given, fc) => its binding arguments (an array).
 * path: null for a positional argument, else what goes before an options field's name in
 * messages ('' for a top-level options object's fields, 'axes.' for a nested one's).
 * given: the arguments by name so far (a default may depend on them).
 */
function checkerOf(op, a, path) {
  const what = `${op}: ${path ?? ''}${a.label ?? a.name}`;
  const check = (() => {
    switch (a.kind) {
      case 'tensor':
        return (x, given, fc) => (a.optional && (x === undefined || (a.nullable && x === null)) ? [null] : [fc._operand(x, what)._handle]);
      case 'tensors':
        return (x, given, fc) => {
          if (!Array.isArray(x)) throw invalid(`${what} must be an array of Tensors, got ${typeName(x)}`);
          const handles = [];
          for (let i = 0; i < x.length; ++i) handles.push(fc._operand(x[i], `${what}[${i}]`)._handle);
          return [handles];
        };
      case 'axis':
        return (x) => {
          if (typeof x !== 'string') throw invalid(`${what} must be an axis name (a string), got ${typeName(x)}`);
          return [x];
        };
      case 'tags': return (x) => [checkTags(x, what)];
      case 'shape': return (x) => [checkShape(x, what)];
      case 'int': return (x) => [checkInt(x, what, a.min, a.max)];
      case 'number': return (x) => [a.nullable && x === null ? null : checkNumber(x, what)];
      case 'bool': return (x) => [checkBoolean(x, what)];
      case 'floats':
        return (x) => {
          const ok = (Array.isArray(x) || x instanceof Float32Array) && Array.prototype.every.call(x, (v) => typeof v === 'number' && Number.isFinite(v));
          if (!ok) throw invalid(`${what} must be an array or Float32Array of finite numbers, got ${typeName(x)}`);
          return [x];
        };
      case 'enum':
        return (x) => {
          if (!a.enum.values.includes(x))
            throw invalid(`${op}: unknown ${path ?? ''}${a.label ?? a.name} ${typeof x === 'string' ? `'${x}'` : typeName(x)} (use ${a.enum.values.join(', ')})`);
          return [x];
        };
      case 'pair': return (x) => pair(x, what, a.min);
      case 'options': {
        const fields = a.fields.map((f) => [f.name, checkerOf(op, f, path === null ? '' : `${path}${a.name}.`)]);
        const keys = a.fields.map((f) => f.name);
        const where = path === null ? op : `${op}: ${path}${a.name}`;
        return (x, given, fc) => {
          const o = a.shorthand && typeof x === 'string' ? { [a.shorthand]: x } : checkOptions(x, keys, where);
          const problem = a.check?.(o);
          if (problem) throw invalid(`${op}: ${problem}`);
          const out = [];
          for (const [k, f] of fields) out.push(...f(o[k], given, fc));
          return out;
        };
      }
      default:
        throw new Error(`ops.table: ${op} has an argument of unknown kind ${a.kind}`);
    }
  })();
  if (!('default' in a)) return check;
  const fallback = typeof a.default === 'function' ? a.default : () => a.default;
  return (x, given, fc) => check(x === undefined || (a.nullish && x === null) ? fallback(given) : x, given, fc);
}

function installOps(ops) {
  for (const op of ops) {
    const { name } = op;
    const args = op.args.map((a) => [a.name, checkerOf(name, a, null)]);
    // Plain loops: a FucinaError's stack starts at the caller's line (errors.mjs drops the
    // package's frames), and a built-in's frame (Array.prototype.flatMap) would come first.
    const flatten = (values, fc) => {
      const given = {};
      const out = [];
      for (let i = 0; i < args.length; ++i) {
        const [arg, check] = args[i];
        out.push(...check((given[arg] = values[i]), given, fc));
      }
      return out;
    };
    const target = op.on === 'tensor' ? Tensor.prototype : Fucina.prototype;
    if (Object.hasOwn(target, name)) throw new Error(`ops.table: ${name} is also written by hand`);
    // The binding's result as JS: a Tensor, or an array of them (returns: { kind: 'tensors' }), or
    // the receiver itself (returns: 'this', an in-place op: the binding's new handle is dropped).
    const wrap = op.returns?.kind === 'tensors' ? (fc, raw) => raw.map((h) => fc._wrap(h))
      : op.returns === 'this' ? (fc, raw, self) => (raw.delete(), self) : (fc, raw) => fc._wrap(raw);
    // Method syntax, for a named function that is not a constructor (as a class's methods).
    const method = op.on === 'tensor'
      ? { [name](...values) {
        const fc = this._engine;
        const flat = flatten(values, fc);
        const result = wrap(fc, fc._call(() => this._handle[name](...flat)), this);
        if (op.consumes) this.dispose();  // C++ released the receiver: its wrapper says so too
        return result;
      } }[name]
      : { [name](...values) {
        const flat = flatten(values, this);
        return wrap(this, this._call((M) => M[name](...flat)));
      } }[name];
    Object.defineProperty(target, name, { value: method, writable: true, configurable: true, enumerable: false });
  }
}
installOps(OPS);

// ---------------------------------------------------------------- the prepared convolution
// prepareConv2dWeights checks its weight and options as the op table's conv2d does (the binding
// takes them flattened in the same order).
const PREPARE_CHECKS = {
  weight: checkerOf('prepareConv2dWeights', tensorArg('weight'), null),
  options: checkerOf('prepareConv2dWeights', conv2dOptions, null),
};

/** A conv2d weight prepared once (fc.prepareConv2dWeights): its buffers live until dispose(). */
class PreparedConv2d extends OwnedHandle {
  constructor(fc, handle) { super(fc, handle, 'PreparedConv2d'); }
  /** True when it runs Winograd F(2x2, 3x3) (3x3 kernel, stride 1, dilation 1, 64+ channels a group), else im2col + GEMM. */
  get winograd() { return this._engine._call(() => this._raw('winograd').winograd()); }
}

// ---------------------------------------------------------------- fc.optim
// Optimizers run in C++ (in-place, graph-free updates; see docs/design-notes.md, "Optimizers");
// schedules are plain JS with the formulas of src/fucina/optim/schedule.h.

function checkStep(x, what) {
  if (!Number.isSafeInteger(x) || x < 0) throw invalid(`schedule ${what} must be a non-negative integer, got ${x}`);
  return x;
}

function checkLr(x, what) {
  if (typeof x !== 'number' || !Number.isFinite(x) || x < 0)
    throw invalid(`schedule ${what} must be a finite number >= 0, got ${x}`);
  return x;
}

/** base * step / warmupSteps before warmupSteps, base afterwards (and when warmupSteps is 0). */
function linearWarmup(step, warmupSteps, baseLr) {
  checkStep(step, 'step');
  checkStep(warmupSteps, 'warmupSteps');
  checkLr(baseLr, 'baseLr');
  return step >= warmupSteps ? baseLr : (baseLr * step) / warmupSteps;
}

/** min + (base - min) * (1 + cos(pi * min(step, total) / total)) / 2 (torch's CosineAnnealingLR). */
function cosineDecay(step, totalSteps, baseLr, minLr = 0) {
  checkStep(step, 'step');
  checkLr(baseLr, 'baseLr');
  checkLr(minLr, 'minLr');
  if (!Number.isSafeInteger(totalSteps) || totalSteps <= 0)
    throw invalid(`schedule totalSteps must be an integer > 0, got ${totalSteps}`);
  const t = Math.min(step, totalSteps);
  return minLr + ((baseLr - minLr) * (1 + Math.cos((Math.PI * t) / totalSteps))) / 2;
}

/** step => linear warm-up for warmupSteps, then cosine decay to minLr at totalSteps. */
function warmupCosine(baseLr, warmupSteps, totalSteps, minLr = 0) {
  checkLr(baseLr, 'baseLr');
  checkLr(minLr, 'minLr');
  checkStep(warmupSteps, 'warmupSteps');
  if (!Number.isSafeInteger(totalSteps) || totalSteps <= warmupSteps)
    throw invalid(`schedule totalSteps must be an integer > warmupSteps, got ${totalSteps}`);
  return (step) => (checkStep(step, 'step') < warmupSteps
    ? linearWarmup(step, warmupSteps, baseLr)
    : cosineDecay(step - warmupSteps, totalSteps - warmupSteps, baseLr, minLr));
}

export class Optimizer {
  #fc;
  #h;
  #params;

  constructor(fc, handle, params) {
    this.#fc = fc;
    this.#h = handle;
    this.#params = params.slice();
  }

  #call(fn) {
    if (!this.#h) throw invalid('this optimizer was disposed');
    return this.#fc._call(() => fn(this.#h));
  }

  /** One in-place update of every parameter that has a gradient (no graph is built). */
  step() { this.#call((h) => h.step()); }
  zeroGrad() { this.#call((h) => h.zeroGrad()); }
  get lr() { return this.#call((h) => h.lr()); }
  set lr(value) {
    checkNumber(value, 'lr');
    this.#call((h) => h.setLr(value));
  }
  get params() { return this.#params.slice(); }
  get isDisposed() { return this.#h === null; }
  /** Frees the optimizer's state (and its hold on the parameters). */
  dispose() {
    if (this.#h) {
      this.#h.delete();
      this.#h = null;
    }
  }
}

function optionNumber(options, key, fallback) {
  const v = options[key];
  if (v === undefined) return fallback;
  if (typeof v !== 'number') throw invalid(`optimizer option ${key} must be a number, got ${typeName(v)}`);
  return v;
}

// Note [16-bit parameters] (optim/optimizer.h): keep f32 copies of f16/bf16 parameters.
const masterWeights = (o, who) => (o.masterWeights === undefined ? false : checkBoolean(o.masterWeights, `${who}: masterWeights`));

function makeOptim(fc) {
  const sgd = (params, options) => {
    const o = checkOptions(options, ['lr', 'momentum', 'dampening', 'nesterov', 'weightDecay', 'masterWeights'], 'optim.sgd');
    if (o.nesterov !== undefined) checkBoolean(o.nesterov, 'optim.sgd: nesterov');
    const handles = handlesOf(fc, params, 'optim.sgd: params');
    const h = fc._call((M) => M.optimSgd(handles, optionNumber(o, 'lr', 1e-3), optionNumber(o, 'momentum', 0),
      optionNumber(o, 'dampening', 0), o.nesterov ?? false, optionNumber(o, 'weightDecay', 0),
      masterWeights(o, 'optim.sgd')));
    return new Optimizer(fc, h, params);
  };
  const adamLike = (name, decoupled, defaultDecay) => (params, options) => {
    const o = checkOptions(options, ['lr', 'betas', 'eps', 'weightDecay', 'masterWeights'], `optim.${name}`);
    let betas = [0.9, 0.999];
    if (o.betas !== undefined) {
      if (!Array.isArray(o.betas) || o.betas.length !== 2 || !o.betas.every((b) => typeof b === 'number'))
        throw invalid(`optim.${name}: option betas must be an array of two numbers`);
      betas = o.betas;
    }
    const handles = handlesOf(fc, params, `optim.${name}: params`);
    const h = fc._call((M) => M.optimAdam(handles, optionNumber(o, 'lr', 1e-3), betas[0], betas[1],
      optionNumber(o, 'eps', 1e-8), optionNumber(o, 'weightDecay', defaultDecay), decoupled,
      masterWeights(o, `optim.${name}`)));
    return new Optimizer(fc, h, params);
  };
  return Object.freeze({
    sgd,
    adam: adamLike('adam', false, 0),
    adamw: adamLike('adamw', true, 0.01),
    clipGradNorm(params, maxNorm) {
      const handles = handlesOf(fc, params, 'optim.clipGradNorm: params');
      return fc._call((M) => M.optimClipGradNorm(handles, checkNumber(maxNorm, 'maxNorm')));
    },
    clipGradNormTensor(params, maxNorm) {
      const handles = handlesOf(fc, params, 'optim.clipGradNormTensor: params');
      return fc._wrap(fc._call((M) => M.optimClipGradNormTensor(handles, checkNumber(maxNorm, 'maxNorm'))));
    },
    linearWarmup,
    cosineDecay,
    warmupCosine,
  });
}

/** 16-bit floats' bits as f32 values (a device tensor's f16 or bf16 read back). */
function halvesToF32(bits, dtype) {
  const out = new Float32Array(bits.length);
  const word = new Uint32Array(out.buffer);
  for (let i = 0; i < bits.length; ++i) {
    const h = bits[i];
    if (dtype === 'bf16') { word[i] = h << 16; continue; }
    const sign = h & 0x8000 ? -1 : 1, e = (h >> 10) & 0x1f, m = h & 0x3ff;
    out[i] = e === 0 ? sign * m * 2 ** -24 : e === 31 ? (m ? NaN : sign * Infinity) : sign * (1 + m / 1024) * 2 ** (e - 15);
  }
  return out;
}
