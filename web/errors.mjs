// FucinaError and the argument checks live in their own module so that the facade, the layers
// and the data helpers share one class and one wording.
export class FucinaError extends Error {
  constructor(code, message) {
    super(message);
    this.name = 'FucinaError';
    this.code = code;  // the C++ ErrorCode name, e.g. "ShapeMismatch"
  }

  /** Node's util.inspect / console.log: "FucinaError [ShapeMismatch]: add: ..." and the stack,
   * as Node shows its own coded errors (the message's "Code: " prefix is not repeated). */
  [Symbol.for('nodejs.util.inspect.custom')]() {
    const text = this.message.startsWith(`${this.code}: `) ? this.message.slice(this.code.length + 2) : this.message;
    const header = `${this.name} [${this.code}]: ${text}`;
    const stack = typeof this.stack === 'string' ? this.stack : '';
    const frames = stack.indexOf('\n    at ');
    return frames < 0 ? header : header + stack.slice(frames);
  }
}

export const invalid = (message) => new FucinaError('InvalidArgument', `InvalidArgument: ${message}`);

/** What a caller passed, for messages: a number's value, else its kind. */
export function typeName(x) {
  if (x === null) return 'null';
  if (Array.isArray(x)) return 'an array';
  if (typeof x === 'object') return x.constructor?.name ? `a ${x.constructor.name}` : 'an object';
  return typeof x === 'number' ? String(x) : typeof x;
}

export const isPlainObject = (x) => !!x && typeof x === 'object' &&
  [Object.prototype, null].includes(Object.getPrototypeOf(x));

/** x as an integer argument: a safe integer (exact in a double) in [min, max]. */
export function checkInt(x, what, min = -Number.MAX_SAFE_INTEGER, max = Number.MAX_SAFE_INTEGER) {
  if (!Number.isSafeInteger(x) || x < min || x > max) {
    const range = min === -Number.MAX_SAFE_INTEGER ? 'an integer' : max === Number.MAX_SAFE_INTEGER
      ? `an integer >= ${min}` : `an integer from ${min} to ${max}`;
    throw invalid(`${what} must be ${range}, got ${typeName(x)}`);
  }
  return x;
}

/** An integer >= min or an [h, w] pair of them (strides, padding, kernels), as two integers. */
export function pair(v, what, min) {
  if (Array.isArray(v) && v.length === 2) return v.map((e, i) => checkInt(e, `${what}[${i}]`, min));
  if (typeof v === 'number') return [checkInt(v, what, min), v];
  throw invalid(`${what} must be an integer or an [h, w] pair of integers, got ${typeName(v)}`);
}

/** Every JS options object goes through here: undefined is {}, an unknown key is an error. */
export function checkOptions(options, allowed, what) {
  if (options === undefined) return {};
  if (!isPlainObject(options)) throw invalid(`${what}: options must be an object, got ${typeName(options)}`);
  for (const k of Object.keys(options))
    if (!allowed.includes(k)) throw invalid(`${what}: unknown option '${k}' (use ${allowed.join(', ')})`);
  return options;
}

// The engine's messages are written for C++ callers (a context argument, snake_case option
// names, Class::method prefixes). JS callers get the same message in the facade's terms; the
// error code never changes. Specific rewrites first, then the general C++ spellings.
const JS_WORDING = [
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
  [/(?<![\w'{,=])([a-z]+)_([a-z])([a-z]*)(?![\w'=])/g, (m, a, b, c) => (SNAKE_OPTIONS.has(m) ? a + b.toUpperCase() + c : m)],
];
// The option names the engine spells in snake_case whose JS name is their camelCase.
const SNAKE_OPTIONS = new Set(['label_smoothing', 'weight_decay', 'abs_tol', 'rel_tol', 'max_norm', 'grad_output']);

/** message as a JS caller reads it (see JS_WORDING). */
export function jsWording(message) {
  return JS_WORDING.reduce((m, [from, to]) => m.replace(from, to), message);
}
