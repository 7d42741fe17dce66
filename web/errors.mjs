// FucinaError and the argument checks live in their own module so that the facade, the layers
// and the data helpers share one class and one wording.
export class FucinaError extends Error {
  constructor(code, message) {
    const limit = Error.stackTraceLimit;
    if (unbundled) Error.stackTraceLimit = limit + 40;  // room for the package's frames
    super(message);
    Error.stackTraceLimit = limit;
    this.name = 'FucinaError';
    this.code = code;  // the C++ ErrorCode name, e.g. "ShapeMismatch"
    if (unbundled && typeof this.stack === 'string') this.stack = callerStack(this.stack);
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

// Frames inside the package (the facade, the Emscripten glue, the wasm) tell a caller nothing, and
// a glue frame can print as a 100 KB minified line: a FucinaError's stack keeps the caller's frames,
// so its first frame is the caller's line. Only where this file is still errors.mjs: in a bundle,
// the package's frames and the app's share one file and are all kept.
const packageDir = new URL('./', import.meta.url).href;
const unbundled = import.meta.url.endsWith('/errors.mjs');
function callerStack(stack) {
  const lines = stack.split('\n');
  const isFrame = (line) => /^\s+at /.test(line);
  const message = lines.filter((line) => !isFrame(line));
  const frames = lines.filter((line) => isFrame(line) && !line.includes(packageDir) && !line.includes('wasm://'));
  return [...message, ...frames.slice(0, Error.stackTraceLimit)].join('\n');
}

export const invalid = (message) => new FucinaError('InvalidArgument', `InvalidArgument: ${message}`);

/** What a caller passed, for messages: a number's value, else its kind. */
export function typeName(x) {
  if (x === null) return 'null';
  if (Array.isArray(x)) return 'an array';
  if (typeof x === 'object') return x.constructor?.name && x.constructor !== Object ? `a ${x.constructor.name}` : 'an object';
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
