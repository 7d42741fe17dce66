// The fucina JavaScript facade: loads the best wasm variant and wraps the Embind binding in a
// small typed API (ops named as in C++, the context implicit). Everything here runs in Node and in
// browsers alike: what differs (finding and loading the wasm files, thread counts, reading files) is
// a platform object from platform.node.mjs or platform.browser.mjs, chosen by the package's exports
// conditions (index.node.mjs / index.browser.mjs), so a browser bundle never reaches a Node built-in.
// Browsers should run the engine in a Web Worker, since Emscripten busy-waits on the main thread.

import { FucinaError, invalid, typeName, isPlainObject, checkInt, checkOptions, pair } from './errors.mjs';
import { makeNn } from './nn.mjs';

export { FucinaError };

const VARIANTS = ['threaded-simd', 'simd'];

function chooseVariant(requested, platform) {
  const threadsPossible = typeof SharedArrayBuffer !== 'undefined' && platform.threadsPossible();
  if (requested === undefined || requested === 'auto') return threadsPossible ? 'threaded-simd' : 'simd';
  if (!VARIANTS.includes(requested))
    throw invalid(`unknown variant ${typeof requested === 'string' ? `'${requested}'` : typeName(requested)} (use "auto", "threaded-simd" or "simd")`);
  if (requested === 'threaded-simd' && !threadsPossible)
    throw invalid('threaded-simd needs SharedArrayBuffer, which a browser gives only to ' +
      'cross-origin isolated pages (COOP/COEP headers)');
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
    throw invalid('init: wasmUrl names one variant\'s .wasm file: pass variant "simd" or "threaded-simd" with it');
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
    checkOptions(options, ['threads', 'variant', 'locateFile', 'baseUrl', 'wasmUrl'], 'init');
    const variant = chooseVariant(options.variant, platform);
    let threads = 1;
    if (variant === 'threaded-simd') {
      threads = checkInt(options.threads ?? Math.min(await platform.defaultThreads(), 8), 'init: threads', 1, 64);
    } else if (options.threads !== undefined && options.threads !== 1) {
      console.warn(`fucina: the simd variant runs on one thread (asked for ${options.threads})`);
    }
    if (options.variant === undefined && variant === 'simd' && platform.name === 'browser')
      console.info('fucina: this page is not cross-origin isolated; using the single-threaded simd build');
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
    fc._call(() => M.init(threads));
    fc.threads = fc._call(() => M.threads());
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

const REDUCTIONS = ['mean', 'sum', 'none'];
function checkReduction(r, what) {
  if (!REDUCTIONS.includes(r)) throw invalid(`${what}: unknown reduction ${typeof r === 'string' ? `'${r}'` : typeName(r)} (use ${REDUCTIONS.join(', ')})`);
  return r;
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

const DTYPES = ['f32', 'f16', 'bf16', 'f64', 'i32', 'i64', 'u8', 'q8_0'];
function checkDType(dtype) {
  if (!DTYPES.includes(dtype)) throw invalid(`unknown dtype '${dtype}' (use ${DTYPES.join(', ')})`);
  return dtype;
}

class Fucina {
  #M;
  #scopes = [];  // stacks of tensors made inside fc.scope calls, innermost last

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

  // ---- structure ops over several tensors
  concat(tensors, axis) { return this.#join(tensors, axis, 'concat', false); }
  stack(tensors, axis) { return this.#join(tensors, axis, 'stack', true); }
  #join(tensors, axis, op, stack) {
    if (!Array.isArray(tensors)) throw invalid(`${op}: tensors must be an array of Tensors`);
    const hs = tensors.map((t, i) => this._operand(t, `${op}: tensors[${i}]`)._handle);
    checkString(axis, `${op}: axis`);
    return this._wrap(this._call((M) => M.concat(hs, axis, stack)));
  }
  /** Named-axis einsum: shared axes not in outTags are contracted, unshared ones summed away. */
  einsum(a, b, outTags) {
    const [x, y] = [this._operand(a, 'einsum: a'), this._operand(b, 'einsum: b')];
    const out = checkTags(outTags, 'einsum: outTags');
    return this._wrap(this._call((M) => M.einsum(x._handle, y._handle, out)));
  }
  /** a where cond (u8, or f32 nonzero) else b; gradients flow to a and b. */
  where(cond, a, b) {
    const [c, x, y] = [this._operand(cond, 'where: cond'), this._operand(a, 'where: a'), this._operand(b, 'where: b')];
    return this._wrap(this._call((M) => M.where(c._handle, x._handle, y._handle)));
  }

  /**
   * groupedAttention(q, k, v, { heads = 'head', time = 't', dim = 'd', causal = true, scale }):
   * softmax(scale·q·kᵀ)·v per head; q's heads a multiple of k's (grouped-query attention).
   */
  groupedAttention(q, k, v, options) {
    const [a, b, c] = [this._operand(q, 'groupedAttention: q'), this._operand(k, 'groupedAttention: k'), this._operand(v, 'groupedAttention: v')];
    const { heads = 'head', time = 't', dim = 'd', causal = true, scale = null } =
      checkOptions(options, ['heads', 'time', 'dim', 'causal', 'scale'], 'groupedAttention');
    checkBoolean(causal, 'groupedAttention: causal');
    if (scale !== null) checkNumber(scale, 'groupedAttention: scale');
    return this._wrap(this._call((M) => M.groupedAttention(a._handle, b._handle, c._handle,
      checkString(heads, 'groupedAttention: heads'), checkString(time, 'groupedAttention: time'),
      checkString(dim, 'groupedAttention: dim'), causal, scale)));
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

  memory() { return this._call((M) => M.memory()); }
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

  customVjp(spec, inputs, extra) {
    if (!spec || typeof spec.forward !== 'function' || typeof spec.backward !== 'function')
      throw invalid('customVjp: spec needs forward(inputs, extra) and backward(inputs, output, gy, needsGrad, extra)');
    const hs = handlesOf(this, inputs, 'customVjp: inputs');
    const forward = this.#callback((ins) => this.#release(spec.forward(ins, extra), 'customVjp forward'));
    const backward = this.#callback((ins, output, gy, needs) => {
      const grads = spec.backward(ins, output, gy, needs, extra);
      if (!Array.isArray(grads) || grads.length !== ins.length)
        throw invalid(`customVjp backward must return an array of ${ins.length} (Tensor | null), one per input, got ${Array.isArray(grads) ? `${grads.length} entries` : typeName(grads)}`);
      // Every entry is checked before any handle is made, so a bad one leaks nothing.
      grads.forEach((g, i) => { if (g != null) this._operand(g, `customVjp backward's gradient [${i}]`); });
      return grads.map((g) => (g == null ? null : g._handle.clone()));
    });
    const name = typeof spec.name === 'string' ? spec.name : 'customVjp';
    return this._wrap(this._call((M) => M.customVjp(name, forward, backward, hs)));
  }

  gradcheck(lossFn, inputs, options = {}) {
    if (typeof lossFn !== 'function') throw invalid('gradcheck: lossFn must be a function');
    const { eps = 1e-3, absTol = 1e-3, relTol = 1e-2 } = checkOptions(options, ['eps', 'absTol', 'relTol'], 'gradcheck');
    const hs = handlesOf(this, inputs, 'gradcheck: inputs');
    const loss = this.#callback((ins) => this.#release(lossFn(...ins), 'the gradcheck loss'));
    return this._call((M) => M.gradcheck(loss, hs, checkNumber(eps, 'gradcheck: eps'),
      checkNumber(absTol, 'gradcheck: absTol'), checkNumber(relTol, 'gradcheck: relTol')));
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
  item() { return this.#get((h) => h.item()); }
  to(dtype) { return this._make((h) => h.to(checkDType(dtype))); }
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

  dot(y, axis) {
    const other = this._operand(y, 'dot: y');
    if (typeof axis !== 'string') throw invalid('dot: axis must be an axis name');
    return this._make((h) => h.dot(other._handle, axis));
  }
  // ---- contractions
  /** this.dot(y, axis) + bias in one GEMM (torch's addmm); bias's axes are among the result's. */
  addDot(y, axis, bias) {
    const [other, b] = [this._operand(y, 'addDot: y'), this._operand(bias, 'addDot: bias')];
    return this._make((h) => h.addDot(other._handle, checkString(axis, 'addDot: axis'), b._handle));
  }
  /** Positional: this's last axis with y's second-to-last (last if transposeY); leading axes batch. */
  matmul(y, transposeY = false) {
    const other = this._operand(y, 'matmul: y');
    checkBoolean(transposeY, 'matmul: transposeY');
    return this._make((h) => h.matmul(other._handle, transposeY));
  }
  /** Swaps the names of two axes (a view). */
  transpose(a, b) {
    return this._make((h) => h.transpose(checkString(a, 'transpose: a'), checkString(b, 'transpose: b')));
  }
  broadcastTo(tags, shape) { return this._make((h) => h.broadcastTo(checkTags(tags), checkShape(shape))); }
  permuteTo(order) { return this._make((h) => h.permuteTo(checkTags(order, 'order'))); }
  withTags(tags) { return this._make((h) => h.withTags(checkTags(tags))); }
  /** Embedding lookup: the axis is replaced, in place, by the (i32/i64) indices' axes. */
  indexSelect(axis, indices) {
    const ix = this._operand(indices, 'indexSelect: indices');
    return this._make((h) => h.indexSelect(checkString(axis, 'axis'), ix._handle));
  }
  narrow(axis, start, length) {
    if (typeof axis !== 'string') throw invalid('narrow: axis must be an axis name');
    return this._make((h) => h.narrow(axis, checkInt(start, 'narrow: start', 0), checkInt(length, 'narrow: length', 0)));
  }
  // ---- structure ops: views where the strides allow, else one copy ----
  insertAxis(axis, position) {
    return this._make((h) => h.insertAxis(checkString(axis, 'insertAxis: axis'), checkInt(position, 'insertAxis: position', 0, 2 ** 31 - 1)));
  }
  squeeze(axis) { return this._make((h) => h.squeeze(checkString(axis, 'squeeze: axis'))); }
  merge(axes, into) {
    return this._make((h) => h.merge(checkTags(axes, 'merge: axes'), checkString(into, 'merge: into')));
  }
  split(axis, into, extents) {
    return this._make((h) => h.split(checkString(axis, 'split: axis'), checkTags(into, 'split: into'), checkShape(extents, 'split: extents')));
  }
  flatten(into) { return this._make((h) => h.flatten(checkString(into, 'flatten: into'))); }
  reshape(tags, shape) { return this._make((h) => h.reshape(checkTags(tags), checkShape(shape))); }
  select(axis, index) {
    return this._make((h) => h.select(checkString(axis, 'select: axis'), checkInt(index, 'select: index')));
  }
  slice(axis, start, end, step = 1) {
    return this._make((h) => h.slice(checkString(axis, 'slice: axis'), checkInt(start, 'slice: start', 0),
      checkInt(end, 'slice: end', 0), checkInt(step, 'slice: step', 1)));
  }
  pad(axis, before, after, value = 0) {
    return this._make((h) => h.pad(checkString(axis, 'pad: axis'), checkInt(before, 'pad: before', 0),
      checkInt(after, 'pad: after', 0), checkNumber(value, 'pad: value')));
  }
  maskedFill(mask, value) {
    const m = this._operand(mask, 'maskedFill: mask');
    return this._make((h) => h.maskedFill(m._handle, checkNumber(value, 'maskedFill: value')));
  }
  tril(row, col, diagonal = 0) { return this.#band('tril', row, col, diagonal, 0); }
  triu(row, col, diagonal = 0) { return this.#band('triu', row, col, diagonal, 0); }
  bandPart(row, col, lower, upper) { return this.#band('bandPart', row, col, lower, upper); }
  #band(kind, row, col, p, q) {
    return this._make((h) => h.band(kind, checkString(row, `${kind}: row`), checkString(col, `${kind}: col`),
      checkInt(p, `${kind}: bound`), checkInt(q, `${kind}: bound`)));
  }
  /** layerNorm(axis, { eps = 1e-5, weight, bias }): weight and bias together, or neither. */
  layerNorm(axis, options) {
    const { eps = 1e-5, weight, bias } = checkOptions(options, ['eps', 'weight', 'bias'], 'layerNorm');
    if ((weight === undefined) !== (bias === undefined)) throw invalid('layerNorm: give weight and bias together');
    const w = weight === undefined ? null : this._operand(weight, 'layerNorm: weight');
    const b = bias === undefined ? null : this._operand(bias, 'layerNorm: bias');
    return this._make((h) => h.layerNorm(checkString(axis, 'axis'), checkNumber(eps, 'eps'), w?._handle ?? null, b?._handle ?? null));
  }
  rmsNorm(axis, eps = 1e-6) {
    return this._make((h) => h.rmsNorm(checkString(axis, 'axis'), checkNumber(eps, 'eps'), null));
  }
  rmsNormMul(axis, weight, eps = 1e-6) {
    const w = this._operand(weight, 'rmsNormMul: weight');
    return this._make((h) => h.rmsNorm(checkString(axis, 'axis'), checkNumber(eps, 'eps'), w._handle));
  }
  l2Normalize(axis, eps = 1e-12) {
    return this._make((h) => h.l2Normalize(checkString(axis, 'axis'), checkNumber(eps, 'eps')));
  }
  /** crossEntropy(labels, classAxis, { reduction = 'mean', labelSmoothing = 0 } or the reduction). */
  crossEntropy(labels, classAxis, options) {
    const l = this._operand(labels, 'crossEntropy: labels');
    checkString(classAxis, 'crossEntropy: classAxis');
    const { reduction, labelSmoothing = 0 } = lossOptions(options, ['reduction', 'labelSmoothing'], 'crossEntropy');
    return this._make((h) => h.crossEntropy(l._handle, classAxis, reduction, checkNumber(labelSmoothing, 'crossEntropy: labelSmoothing')));
  }
  nllLoss(labels, classAxis, options) {
    const l = this._operand(labels, 'nllLoss: labels');
    checkString(classAxis, 'nllLoss: classAxis');
    const { reduction } = lossOptions(options, ['reduction'], 'nllLoss');
    return this._make((h) => h.nllLoss(l._handle, classAxis, reduction));
  }
  mseLoss(target, options) {
    const t = this._operand(target, 'mseLoss: target');
    const { reduction } = lossOptions(options, ['reduction'], 'mseLoss');
    return this._make((h) => h.mseLoss(t._handle, reduction));
  }
  // ---- indexing, pointwise losses, gated units ----
  /** torch.gather: indices (i32/i64) with exactly this tensor's axes. */
  gather(axis, indices) {
    const ix = this._operand(indices, 'gather: indices');
    return this._make((h) => h.gather(checkString(axis, 'gather: axis'), ix._handle));
  }
  /** numpy.take_along_axis by name: indices' other axes match or have extent 1, or are missing. */
  takeAlongAxis(axis, indices) {
    const ix = this._operand(indices, 'takeAlongAxis: indices');
    return this._make((h) => h.takeAlongAxis(checkString(axis, 'takeAlongAxis: axis'), ix._handle));
  }
  /** torch.scatter_add, out of place. */
  scatterAdd(axis, indices, src) {
    const ix = this._operand(indices, 'scatterAdd: indices');
    const s = this._operand(src, 'scatterAdd: src');
    return this._make((h) => h.scatterAdd(checkString(axis, 'scatterAdd: axis'), ix._handle, s._handle));
  }
  /** huberLoss(target, { delta = 1, reduction = 'mean' }) */
  huberLoss(target, options) {
    const t = this._operand(target, 'huberLoss: target');
    const { delta = 1, reduction } = lossOptions(options, ['delta', 'reduction'], 'huberLoss');
    return this._make((h) => h.huberLoss(t._handle, checkNumber(delta, 'huberLoss: delta'), reduction));
  }
  /** bceLoss(target, { reduction = 'mean' }) on probabilities in [0, 1]. */
  bceLoss(target, options) {
    const t = this._operand(target, 'bceLoss: target');
    const { reduction } = lossOptions(options, ['reduction'], 'bceLoss');
    return this._make((h) => h.bceLoss(t._handle, reduction));
  }
  bceWithLogitsLoss(target, options) {
    const t = this._operand(target, 'bceWithLogitsLoss: target');
    const { reduction } = lossOptions(options, ['reduction'], 'bceWithLogitsLoss');
    return this._make((h) => h.bceWithLogitsLoss(t._handle, reduction));
  }
  /** klDivLoss(target, { reduction = 'mean', logTarget = false }): this tensor is log-probabilities. */
  klDivLoss(target, options) {
    const t = this._operand(target, 'klDivLoss: target');
    const { reduction, logTarget = false } = lossOptions(options, ['reduction', 'logTarget'], 'klDivLoss');
    checkBoolean(logTarget, 'klDivLoss: logTarget');
    return this._make((h) => h.klDivLoss(t._handle, reduction, logTarget));
  }
  swiglu(axis) { return this._make((h) => h.swiglu(checkString(axis, 'swiglu: axis'))); }
  geglu(axis) { return this._make((h) => h.geglu(checkString(axis, 'geglu: axis'))); }
  // ---- end indexing, pointwise losses, gated units ----
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
  dropout(p, seed) { return this._make((h) => h.dropout(checkNumber(p, 'dropout: p'), checkInt(seed, 'dropout: seed', 0))); }
  /**
   * conv2d(weight, { bias, stride = 1, padding = 0, dilation = 1, groups = 1, axes }): stride,
   * padding and dilation are a number or [h, w]; axes renames { channels: 'c', height: 'h',
   * width: 'w', outChannels: 'out', kernelH: 'kh', kernelW: 'kw' }.
   */
  conv2d(weight, options) {
    const w = this._operand(weight, 'conv2d: weight');
    const { bias, stride = 1, padding = 0, dilation = 1, groups = 1, axes = {} } =
      checkOptions(options, ['bias', 'stride', 'padding', 'dilation', 'groups', 'axes'], 'conv2d');
    const b = bias === undefined || bias === null ? null : this._operand(bias, 'conv2d: bias');
    const a = checkOptions(axes, Object.keys(CONV_AXES), 'conv2d: axes');
    const names = Object.entries(CONV_AXES).map(([k, d]) => checkString(a[k] ?? d, `conv2d: axes.${k}`));
    const geometry = [...pair(stride, 'conv2d: stride', 1), ...pair(padding, 'conv2d: padding', 0),
      ...pair(dilation, 'conv2d: dilation', 1), checkInt(groups, 'conv2d: groups', 1)];
    return this._make((h) => h.conv2d(w._handle, b?._handle ?? null, geometry, names));
  }
  /** maxPool2d(kernel, { stride = kernel, padding = 0, height = 'h', width = 'w' }). */
  maxPool2d(kernel, options) { return pool(this, 'maxPool2d', kernel, options); }
  /** avgPool2d(kernel, { stride = kernel, padding = 0, height, width }); divides by kh·kw. */
  avgPool2d(kernel, options) { return pool(this, 'avgPool2d', kernel, options); }
  upsample2xNearest(height = 'h', width = 'w') {
    return this._make((h) => h.upsample2xNearest(checkString(height, 'upsample2xNearest: height'), checkString(width, 'upsample2xNearest: width')));
  }
  /** quantize('q8_0', axis): blocks of 32 along axis (extent a multiple of 32); a constant. */
  quantize(dtype, axis) {
    return this._make((h) => h.quantize(checkDType(dtype), checkString(axis, 'quantize: axis')));
  }
}

const CONV_AXES = { channels: 'c', height: 'h', width: 'w', outChannels: 'out', kernelH: 'kh', kernelW: 'kw' };

function pool(t, op, kernel, options) {
  const [kh, kw] = pair(kernel, `${op}: kernel`, 1);
  const { stride = [kh, kw], padding = 0, height = 'h', width = 'w' } =
    checkOptions(options, ['stride', 'padding', 'height', 'width'], op);
  const [sh, sw] = pair(stride, `${op}: stride`, 1);
  checkInt(padding, `${op}: padding`, 0);
  checkString(height, `${op}: height`);
  checkString(width, `${op}: width`);
  return t._make((h) => h[op](kh, kw, sh, sw, padding, height, width));
}

// Ops that differ only in their argument kind are defined from lists, each as the C++ method.
for (const op of ['add', 'sub', 'mul', 'div', 'maximum', 'minimum', 'pow']) {
  Tensor.prototype[op] = function (y) {
    const other = this._operand(y, `${op}: y`);
    return this._make((h) => h[op](other._handle));
  };
}
for (const op of ['scale', 'addScalar', 'subScalar', 'divScalar', 'powScalar']) {
  Tensor.prototype[op] = function (s) {
    checkNumber(s, op);
    return this._make((h) => h[op](s));
  };
}
for (const op of ['neg', 'abs', 'exp', 'log', 'sqrt', 'tanh', 'sigmoid', 'relu', 'gelu', 'geluErf',
  'quickGelu', 'silu', 'log1p', 'rsqrt', 'reciprocal', 'sin', 'cos', 'sumAll', 'meanAll', 'contiguous']) {
  Tensor.prototype[op] = function () { return this._make((h) => h[op]()); };
}
// Scalar-parameter activations with the C++ defaults.
for (const [op, fallback] of [['leakyRelu', 0.01], ['elu', 1]]) {
  Tensor.prototype[op] = function (s = fallback) {
    checkNumber(s, op);
    return this._make((h) => h[op](s));
  };
}
Tensor.prototype.clamp = function (lo, hi) {
  checkNumber(lo, 'clamp: lo');
  checkNumber(hi, 'clamp: hi');
  return this._make((h) => h.clamp(lo, hi));
};
Tensor.prototype.variance = function (axis, correction = 1) {
  checkString(axis, 'variance: axis');
  checkInt(correction, 'variance: correction');
  return this._make((h) => h.variance(axis, correction));
};
for (const op of ['sum', 'mean', 'max', 'min', 'logsumexp', 'cumsum', 'prod', 'norm', 'softmax', 'logSoftmax']) {
  Tensor.prototype[op] = function (axis) {
    if (typeof axis !== 'string') throw invalid(`${op}: axis must be an axis name`);
    return this._make((h) => h[op](axis));
  };
}
const COMPARE_OPS = ['eq', 'ne', 'lt', 'le', 'gt', 'ge'];
/** compare(y, op): 1 where `this op y` holds, else 0, as a u8 constant (no gradient). */
Tensor.prototype.compare = function (y, op) {
  const other = this._operand(y, 'compare: y');
  if (!COMPARE_OPS.includes(op)) {
    throw invalid(`compare: unknown op ${typeof op === 'string' ? `'${op}'` : typeName(op)} (use ${COMPARE_OPS.join(', ')})`);
  }
  return this._make((h) => h.compare(other._handle, op));
};

// ---------------------------------------------------------------- fc.optim
// Optimizers run in C++ (in-place, graph-free updates; see docs/design-notes.md, "Optimizers");
// schedules are plain JS with the formulas of src/fucina/optim/schedule.h.

// A loss's options: an object, or just the reduction name; the reduction checked, 'mean' by default.
function lossOptions(options, allowed, what) {
  const o = typeof options === 'string' ? { reduction: options } : checkOptions(options, allowed, what);
  return { ...o, reduction: checkReduction(o.reduction ?? 'mean', what) };
}

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
    linearWarmup,
    cosineDecay,
    warmupCosine,
  });
}
