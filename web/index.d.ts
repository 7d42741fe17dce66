/**
 * Types of the fucina JavaScript facade (web/facade.mjs, through index.node.mjs and index.browser.mjs): tensors with named axes and reverse-mode
 * autograd on a WebAssembly engine. Ops mirror the C++ `fucina::Tensor` methods with the
 * execution context implicit; axes are addressed by name (a string), never by position, unless
 * a method says otherwise.
 *
 * @example
 * ```ts
 * import { init } from 'fucina';
 * const fc = await init();
 * const w = fc.variable(['out', 'in'], [2, 3], [1, 2, 3, 4, 5, 6]);
 * const x = fc.constant(['batch', 'in'], [1, 3], [1, 0, -1]);
 * const loss = x.dot(w, 'in').sumAll();
 * loss.backward();
 * console.log(w.grad()?.toArray());
 * ```
 * @packageDocumentation
 */

// ---------------------------------------------------------------- values and names

/** Element types of the engine's tensors (values are read and written as JS numbers). q8_0 is
 * block-quantized: made only by {@link Tensor.quantize} (to('q8_0') and constructors with it
 * fail with DTypeMismatch), read back with to('f32') or toArray(). */
export type DType = 'f32' | 'f16' | 'bf16' | 'f64' | 'i32' | 'i64' | 'u8' | 'q8_0';

/** The WebAssembly builds: with threads (needs SharedArrayBuffer), single-threaded, or
 * single-threaded with relaxed SIMD's fused multiply-add in its accumulating kernels (needs an
 * engine with relaxed SIMD: see {@link relaxedSimdSupported}). */
export type Variant = 'threaded-simd' | 'simd' | 'relaxed-simd';
/** Where a tensor's storage lives: host memory, or the WebGPU device of
 * `init({ device: 'webgpu' })`. */
export type Device = 'cpu' | 'webgpu';
/** The kernels the cpu device computes with: `cpu` (SIMD, threads) or `reference` (plain scalar
 * loops on one thread, the oracle the fast kernels are tested against). */
export type Backend = 'cpu' | 'reference';

/** How a loss reduces its per-element values: their mean, their sum, or none (one per element). */
export type Reduction = 'mean' | 'sum' | 'none';

/** The relations of {@link Tensor.compare}: equal, not equal, less, less or equal, greater, greater or equal. */
export type CompareOp = 'eq' | 'ne' | 'lt' | 'le' | 'gt' | 'ge';

/** The ops {@link Tensor.unary} applies by name. */
export type UnaryName =
  | 'neg' | 'abs' | 'exp' | 'log' | 'sqrt' | 'tanh' | 'sigmoid' | 'relu' | 'leakyRelu' | 'gelu' | 'geluErf'
  | 'quickGelu' | 'silu' | 'elu' | 'log1p' | 'rsqrt' | 'reciprocal' | 'sin' | 'cos' | 'floor' | 'ceil' | 'round'
  | 'sign' | 'fastTanh' | 'softcap30' | 'softcap15';

/** The activations of {@link Tensor.gated} and {@link Tensor.splitGated} (gelu: the tanh approximation). */
export type GateActivation = 'silu' | 'gelu' | 'geluErf' | 'sigmoid' | 'relu' | 'quickGelu';

/** Tensor values as given to the engine: an array or typed array of numbers, in row-major order. */
export type Values =
  | readonly number[]
  | Float32Array
  | Float64Array
  | Int8Array
  | Int16Array
  | Int32Array
  | Uint8Array
  | Uint8ClampedArray
  | Uint16Array
  | Uint32Array;

/** A kernel size, stride, padding or dilation: one integer for both axes, or [height, width]. */
export type Pair = number | readonly [number, number];

// ---------------------------------------------------------------- errors

/**
 * What a FucinaError's `code` can be: the name of a C++ `fucina::ErrorCode`, plus
 * "Internal" for an engine trap (a bug worth reporting) and "LoadFailed" when init() cannot load
 * the engine's files (see {@link InitOptions.baseUrl}).
 */
export type FucinaErrorCode =
  | 'ShapeMismatch'
  | 'DTypeMismatch'
  | 'InvalidArgument'
  | 'IndexOutOfRange'
  | 'OutOfMemory'
  | 'NoGradientGraph'
  | 'MissingOutputGradient'
  | 'MissingBackwardGradient'
  | 'BackwardAlreadyRun'
  | 'UnsupportedGradient'
  | 'MutableDataRequiresNoGrad'
  | 'GradientCastUnsupported'
  | 'GradientPackedMatmulUnsupported'
  | 'GradientQuantizedMatmulUnsupported'
  | 'GradientPreparedConv2dUnsupported'
  | 'CheckpointOutputNotDifferentiable'
  | 'CheckpointMissingInputGradient'
  | 'NestedCheckpointRecompute'
  | 'InvalidGradcheckOptions'
  | 'NoVariableInputs'
  | 'MissingAnalyticalGradient'
  | 'GradientShapeMismatch'
  | 'GradientMismatch'
  | 'TensorReleased'
  | 'DeviceUnavailable'
  | 'DeviceMismatch'
  | 'DeviceLost'
  | 'DeviceReadIsAsync'
  | 'UnsupportedOnDevice'
  | 'Internal'
  | 'LoadFailed';

/**
 * Every failure the library reports. The message starts with the code ("ShapeMismatch: add:
 * ..."). Options objects with unknown keys, non-integer or out-of-range integer arguments and
 * tensors of another init() are InvalidArgument; a disposed tensor is TensorReleased.
 * `util.inspect` shows it as `FucinaError [Code]: message` followed by the stack.
 */
export class FucinaError extends Error {
  /** An error with this code; message should start with `${code}: `, as the library's do. */
  constructor(code: FucinaErrorCode, message: string);
  /** Always "FucinaError". */
  readonly name: 'FucinaError';
  /** The C++ ErrorCode name, e.g. "ShapeMismatch" (see {@link FucinaErrorCode}). */
  readonly code: FucinaErrorCode;
}

// ---------------------------------------------------------------- options and results

/** Options of {@link init}. */
export interface InitOptions {
  /** Threads for the threaded-simd variant, 1 to 64 (default: the machine's cores, at most 8). */
  threads?: number;
  /** "auto" (default) picks threaded-simd where SharedArrayBuffer is usable (Node, or a
   * cross-origin isolated page) and `threads` is not 1; else a one-thread build: relaxed-simd where
   * the engine has relaxed SIMD, simd elsewhere. An explicit relaxed-simd on an engine without it
   * rejects with LoadFailed. */
  variant?: 'auto' | Variant;
  /**
   * Where the engine's files are, for a CDN or a layout the bundler did not make: called with each
   * file name (`fucina-simd.wasm`, `fucina-threaded-simd.mjs`, ...) and the chosen variant, it
   * returns that file's URL (or path, in Node). Wins over baseUrl and wasmUrl.
   */
  locateFile?: (file: string, variant: Variant) => string | URL;
  /** A folder (URL, or path in Node) holding the package's wasm/ files, e.g. on a CDN. */
  baseUrl?: string | URL;
  /** The kernels to compute with (default "cpu"); "reference" computes on one thread whatever
   * `threads` says. */
  backend?: Backend;
  /** The .wasm file alone, for an explicit `variant` (the glue stays with the package). */
  wasmUrl?: string | URL;
  /** 'webgpu' attaches the WebGPU device and makes it the default device (default 'cpu'); without
   * an adapter init rejects with DeviceUnavailable. */
  device?: Device;
  /** The GPU to take the device from (default navigator.gpu); in Node, `create([])` from the npm
   * package `webgpu`. */
  gpu?: unknown;
  /** Caps below the adapter's own limits, to run as on a smaller GPU (each at least 16 KiB; only
   * with `device: 'webgpu'`). */
  deviceLimits?: DeviceLimits;
}

/** The webgpu device's limits as the engine uses them ({@link InitOptions.deviceLimits} caps them,
 * {@link DeviceMemoryInfo.limits} reports them). */
export interface DeviceLimits {
  /** Bytes one kernel binds of a buffer: larger tensors are bound in pieces where the kernel can
   * be split (GEMMs, gathers, rows, elementwise), else UnsupportedOnDevice. */
  maxStorageBufferBindingSize?: number;
  /** Bytes of one tensor's buffer: a larger tensor is OutOfMemory. */
  maxBufferSize?: number;
  /** Bytes of device buffers alive at once, live and pooled (default: what the device gives);
   * past it (the pool emptied first), OutOfMemory. */
  memory?: number;
}

/** The devices of {@link MemoryInfo.devices}. */
export interface DevicesMemoryInfo {
  /** The webgpu device, after `init({ device: 'webgpu' })`. */
  webgpu?: DeviceMemoryInfo;
}

/** What {@link MemoryInfo.devices} reports of the webgpu device. */
export interface DeviceMemoryInfo {
  /** Bytes of device buffers held by live tensors. */
  liveBytes: number;
  /** The most liveBytes since init() or the last {@link Fucina.resetPeak}. */
  peakBytes: number;
  /** Device buffers held by live tensors. */
  liveBuffers: number;
  /** Bytes of freed device buffers kept for reuse. */
  pooledBytes: number;
  /** Device buffers created so far (flat in a training step's steady state). */
  buffersMade: number;
  /** Compute pipelines made so far (one per kernel source; flat in steady state). */
  pipelinesMade: number;
  /** Bytes written from the host into device buffers. */
  uploadedBytes: number;
  /** Bytes read back by {@link Tensor.data}. */
  downloadedBytes: number;
  /** Kernels dispatched. */
  dispatches: number;
  /** Of those, the ones that bound a window of a buffer larger than one binding
   * ({@link DeviceLimits.maxStorageBufferBindingSize}): a kernel over such a tensor runs in pieces. */
  windowedDispatches: number;
  /** Command buffers submitted: batches of dispatches (Note [Dispatch batches]), reads, syncs. */
  submits: number;
  /** The limits the engine uses: the adapter's, lowered by {@link InitOptions.deviceLimits};
   * `memory` only where deviceLimits set a budget. */
  limits: DeviceLimits;
}

/** What {@link Fucina.memory} reports about the engine's tensors and buffers. */
export interface MemoryInfo {
  /** Tensors alive in the engine (handles not yet disposed, and what graphs keep). */
  liveTensors: number;
  /** Bytes held by live tensors. */
  liveBytes: number;
  /** The most liveBytes since init() or the last {@link Fucina.resetPeak}. */
  peakBytes: number;
  /** Buffers handed out so far: systemAllocations + cacheHits. */
  allocations: number;
  /** Buffers that had to be allocated from the heap; flat once training reaches steady state. */
  systemAllocations: number;
  /** Buffers served from the cache of freed buffers. */
  cacheHits: number;
  /** Bytes of freed buffers held for reuse ({@link Fucina.trimCache} releases them). */
  cachedBytes: number;
  /** Size of the WebAssembly memory (it grows, never shrinks). */
  heapBytes: number;
  /** liveBytes split by the dtype of each buffer (they sum to liveBytes); engine scratch buffers
   * count under their element type (u8 when not a float or integer type). */
  bytesByDtype: Record<DType, number>;
  /** The devices attached besides the cpu. */
  devices: DevicesMemoryInfo;
}

/** Options of {@link Fucina.gradcheck}: central differences compared with backward. */
export interface GradcheckOptions {
  /** The finite-difference step, > 0 (default 1e-3). */
  eps?: number;
  /** Absolute tolerance, >= 0 (default 1e-3). */
  absTol?: number;
  /** Relative tolerance, >= 0 (default 1e-2). */
  relTol?: number;
  /** Print the first failing element with console.error before throwing GradientMismatch
   * (default true). */
  printMismatch?: boolean;
}

/** What {@link Fucina.gradcheck} found when every element agreed. */
export interface GradcheckResult {
  /** Elements compared (over every variable input). */
  checked: number;
  /** Largest |numerical - analytical|. */
  maxAbsError: number;
  /** Largest relative error. */
  maxRelError: number;
}

/** One gradient per input of a custom op: a Tensor shaped like the input, or null. */
export type InputGradients<A extends readonly Tensor[]> = { [K in keyof A]: Tensor | null };

/**
 * A differentiable op written in JS for {@link Fucina.customVjp}. The tensors handed to forward
 * and backward are no-grad constants, disposed when the callback returns.
 */
export interface CustomVjpSpec<A extends readonly Tensor[] = Tensor[], E = undefined> {
  /** A name for messages (default "customVjp"). */
  name?: string;
  /** Computes the output from the inputs (and the extra value given to customVjp). */
  forward(inputs: A, extra: E): Tensor;
  /** Returns one gradient per input, shaped like it (null, or left out at the end, where
   * needsGrad[i] is false; an input that needs one and gets none is MissingBackwardGradient), given
   * the output and its gradient gy. */
  backward(inputs: A, output: Tensor, gy: Tensor, needsGrad: boolean[], extra: E): InputGradients<A>;
}

/** Options of {@link Tensor.layerNorm} without an affine transform. */
export interface LayerNormOptions {
  /** Added to the variance (default 1e-5). */
  eps?: number;
  /** Not given in this form: weight and bias come together ({@link AffineLayerNormOptions}). */
  weight?: undefined;
  /** Not given in this form: weight and bias come together ({@link AffineLayerNormOptions}). */
  bias?: undefined;
}

/** Options of {@link Tensor.layerNorm} with an affine transform: weight and bias together. */
export interface AffineLayerNormOptions {
  /** Added to the variance (default 1e-5). */
  eps?: number;
  /** Multiplies the normalised values; its single axis is the normalised one. */
  weight: Tensor;
  /** Added after the weight; its single axis is the normalised one. */
  bias: Tensor;
}

// BEGIN ops.table options (generated by web/gen-ops.mjs from web/ops.table.mjs: edit the table, not this block)
/** Options of {@link Tensor.groupNorm}. */
export interface GroupNormOptions {
  /** Per-channel scale (give bias with it). */
  weight?: Tensor;
  /** Per-channel shift (give weight with it). */
  bias?: Tensor;
  /** The batch axes, each normalized apart (default ['batch']; [] for one sample). */
  batch?: readonly string[];
  /** Added to the variance (default 1e-5). */
  eps?: number;
}

/** Options of {@link Tensor.rmsNormMulRopeHalfPrepared}. */
export interface RmsNormRopeOptions {
  /** The position axis (default 't'). */
  position?: string;
  /** Row of the tables for the first position (default 0). */
  offset?: number;
  /** rmsNorm's epsilon (default 1e-6). */
  eps?: number;
}

/** Options of a loss that only reduces. */
export interface LossOptions {
  /** 'mean' (default), 'sum' or 'none'. */
  reduction?: Reduction;
}

/** Options of {@link Tensor.crossEntropy}. */
export interface CrossEntropyOptions extends LossOptions {
  /** torch's label_smoothing in [0, 1) (default 0). */
  labelSmoothing?: number;
}

/** Options of {@link Tensor.huberLoss}. */
export interface HuberLossOptions extends LossOptions {
  /** Where the loss turns from quadratic to linear, > 0 (default 1). */
  delta?: number;
}

/** Options of {@link Tensor.klDivLoss}. */
export interface KlDivLossOptions extends LossOptions {
  /** The target holds log-probabilities too (default false). */
  logTarget?: boolean;
}

/** Options of {@link Tensor.crossEntropyExt} and {@link Tensor.linearCrossEntropyExt}. */
export interface CrossEntropyExtOptions extends LossOptions {
  /** torch's label_smoothing in [0, 1) (default 0). */
  labelSmoothing?: number;
  /** Rows with this label add nothing and are not counted in the mean (default −100). */
  ignoreIndex?: number;
  /** Class weights: a constant with the single axis classAxis. */
  weight?: Tensor;
  /** Adds zLoss · logsumexp² per counted row (default 0). */
  zLoss?: number;
}

/** Options of {@link Tensor.linearCrossEntropyExt}. */
export interface LinearCrossEntropyOptions extends LossOptions {
  /** torch's label_smoothing in [0, 1) (default 0). */
  labelSmoothing?: number;
  /** Rows with this label add nothing and are not counted in the mean (default −100). */
  ignoreIndex?: number;
  /** Class weights: a constant with the single axis classAxis. */
  weight?: Tensor;
  /** Adds zLoss · logsumexp² per counted row (default 0). */
  zLoss?: number;
  /** Rows of logits made at a time (default 256). */
  chunkRows?: number;
}

/** Options of {@link Tensor.linearDistillExt}. */
export interface DistillOptions extends LossOptions {
  /** T > 0 (default 1). */
  temperature?: number;
  /** Weight of the hard-label cross-entropy, in [0, 1] (default 0). */
  alpha?: number;
  /** Integer labels with the rows' axes; needed when alpha > 0. */
  labels?: Tensor;
  /** The teacher holds probabilities, not logits (default false). */
  teacherProbs?: boolean;
  /** Label rows that add nothing to the cross-entropy (default −100). */
  ignoreIndex?: number;
  /** Rows of logits made at a time (default 256). */
  chunkRows?: number;
}

/** Axis names of {@link Tensor.conv2d}'s input and weight. */
export interface Conv2dAxes {
  /** The input's channel axis (default 'c'); the weight has it too. */
  channels?: string;
  /** The input's height axis (default 'h'). */
  height?: string;
  /** The input's width axis (default 'w'). */
  width?: string;
  /** The weight's output-channel axis, which replaces channels in the result (default 'out'). */
  outChannels?: string;
  /** The weight's kernel-height axis (default 'kh'). */
  kernelH?: string;
  /** The weight's kernel-width axis (default 'kw'). */
  kernelW?: string;
}

/** Options of {@link Tensor.conv2d} and {@link Tensor.conv2dRelu}. */
export interface Conv2dOptions {
  /** A tensor with the single axis outChannels, added to every output position. */
  bias?: Tensor | null;
  /** Step between windows, >= 1 (default 1). */
  stride?: Pair;
  /** Zeros added on each side, >= 0 (default 0). */
  padding?: Pair;
  /** Spacing of the kernel taps, >= 1 (default 1). */
  dilation?: Pair;
  /** Channel groups, dividing channels and outChannels (default 1). */
  groups?: number;
  /** conv2dRelu only: the result max pooled over maxPool x maxPool windows with stride maxPool,
   * as maxPool2d(maxPool) pools it, in the same op; no full-size result is kept (default 1: no
   * pooling). */
  maxPool?: number;
  /** Axis names (defaults c, h, w, out, kh, kw). */
  axes?: Conv2dAxes;
}

/** Axis names of the 1-D convolutions. */
export interface Conv1dAxes {
  /** The input's channel axis (default 'c'); the weight has it too. */
  channels?: string;
  /** The input's length axis (default 't'). */
  length?: string;
  /** The weight's output-channel axis, which replaces channels in the result (default 'out'). */
  outChannels?: string;
  /** The weight's kernel axis (default 'k'). */
  kernel?: string;
}

/** Options of {@link Tensor.conv1d}. */
export interface Conv1dOptions {
  /** A tensor with the single axis outChannels, added to every output position. */
  bias?: Tensor | null;
  /** Step between windows, >= 1 (default 1). */
  stride?: number;
  /** Zeros added on each side, >= 0 (default 0). */
  padding?: number;
  /** Spacing of the kernel taps, >= 1 (default 1). */
  dilation?: number;
  /** Channel groups, dividing channels and outChannels (default 1). */
  groups?: number;
  /** Axis names (defaults c, t, out, k). */
  axes?: Conv1dAxes;
}

/** Options of {@link Tensor.convTranspose1d}. */
export interface ConvTranspose1dOptions {
  /** A tensor with the single axis outChannels, added to every output position. */
  bias?: Tensor | null;
  /** Stride of the convolution this is the adjoint of (default 1). */
  stride?: number;
  /** Removed from both ends of the full output (default 0). */
  padding?: number;
  /** Added to one end, smaller than the stride or the dilation (default 0). */
  outputPadding?: number;
  /** Spacing of the kernel taps (default 1). */
  dilation?: number;
  /** Channel groups (default 1). */
  groups?: number;
  /** Axis names (defaults c, t, out, k). */
  axes?: Conv1dAxes;
}

/** Options of {@link Tensor.causalConv1d}. */
export interface CausalConv1dOptions {
  /** A tensor with the single axis outChannels, added to every output position. */
  bias?: Tensor | null;
  /** Spacing of the kernel taps (default 1). */
  dilation?: number;
  /** Axis names (defaults c, t, out, k). */
  axes?: Conv1dAxes;
}

/** Options of {@link Tensor.causalDepthwiseConv1d}. */
export interface CausalDepthwiseConv1dOptions {
  /** A tensor with the single axis outChannels, added to every output position. */
  bias?: Tensor | null;
  /** Axis names (defaults c, t, out, k). */
  axes?: Conv1dAxes;
}

/** Axis names of {@link Tensor.unfold} and {@link Tensor.fold}. */
export interface UnfoldAxes {
  /** The images' channel axis (default 'c'). */
  channels?: string;
  /** The images' height axis (default 'h'). */
  height?: string;
  /** The images' width axis (default 'w'). */
  width?: string;
  /** The columns' patch axis (default 'patch'). */
  patch?: string;
  /** The columns' positions axis (default 'l'). */
  positions?: string;
}

/** Options of {@link Tensor.unfold} and {@link Tensor.fold}. */
export interface UnfoldOptions {
  /** Step between windows (default 1). */
  stride?: Pair;
  /** Zeros on each side of h and w (default 0). */
  padding?: Pair;
  /** Spacing of the kernel taps (default 1). */
  dilation?: Pair;
  /** Axis names (defaults c, h, w, patch, l). */
  axes?: UnfoldAxes;
}

/** Options of {@link Tensor.maxPool2d} and {@link Tensor.avgPool2d}. */
export interface Pool2dOptions {
  /** Step between windows (default: the kernel). */
  stride?: Pair;
  /** Same padding on both axes, at most half the kernel (default 0). */
  padding?: number;
  /** The height axis (default 'h'). */
  height?: string;
  /** The width axis (default 'w'). */
  width?: string;
}

/** Options of {@link Fucina.groupedAttention}: the axis names and the masking. */
export interface AttentionOptions {
  /** The heads axis (default 'head'). */
  heads?: string;
  /** The time axis (default 't'). */
  time?: string;
  /** The feature axis (default 'd'). */
  dim?: string;
  /** End-aligned causal mask: query i sees keys j <= i + Tk - Tq (default true). */
  causal?: boolean;
  /** Multiplies the scores (default 1/sqrt(D)). */
  scale?: number;
}
// END ops.table options

/** Options of {@link Tensor.rope}. */
export interface RopeOptions {
  /** The position axis (default 't'). */
  position?: string;
  /** The rotated axis, of even extent D (default 'd'). */
  dim?: string;
  /** theta_i = base^(-2i/D) (default 10000); ignored with tables. */
  base?: number;
  /** Position of the first element (default 0). */
  offset?: number;
  /** 'half' pairs (i, i + D/2) (GPT-NeoX, HF llama, default); 'interleaved' pairs (2i, 2i+1). */
  mode?: 'half' | 'interleaved';
}

/** The contents of safetensors bytes, as {@link Fucina.decodeSafetensors} returns them. */
export interface SafetensorsContents {
  /** The tensors by name (new constants). */
  tensors: Record<string, Tensor>;
  /** The header's string metadata (without the axis names fucina keeps there). */
  metadata: Record<string, string>;
}

// ---------------------------------------------------------------- Tensor

/**
 * A tensor with named axes: an n-dimensional array whose axes are addressed by name ("batch",
 * "t", ...), with the gradient state of reverse-mode autograd when it requires gradients. Made
 * by the {@link Fucina} methods (variable, constant, ...) and by ops; `String(t)` and
 * `util.inspect(t)` show its axes, dtype, requiresGrad and, up to 20 elements, its values.
 * Tensors work only with the init() that made them.
 */
export class Tensor {
  private constructor();
  /** The axis names, in storage order. */
  readonly tags: string[];
  /** The extent of each axis, in the order of tags. */
  readonly shape: number[];
  /** The element type. */
  readonly dtype: DType;
  /** Where its storage lives. */
  readonly device: Device;
  /** Whether backward computes a gradient for this tensor (a variable, or an op result of one). */
  readonly requiresGrad: boolean;
  /** Whether dispose() has been called; a disposed tensor throws TensorReleased when used. */
  readonly isDisposed: boolean;

  /** Runs reverse-mode autograd from this tensor: a one-element tensor seeds itself with 1,
   * any other needs gradOutput, a tensor with the same axes and extents. */
  backward(gradOutput?: Tensor): void;
  /** A copy of the gradient backward accumulated in this variable, or null. */
  grad(): Tensor | null;
  /** Clears this variable's accumulated gradient. */
  zeroGrad(): void;
  /** The same values as a constant, outside any graph. */
  detach(): Tensor;
  /** A copy of the values, converted to f32, in row-major order of `tags` (on a webgpu tensor
   * DeviceReadIsAsync: use {@link Tensor.data}). */
  toArray(): Float32Array;
  /** The values as toArray() gives them, from any device: a webgpu tensor's once the device has
   * computed them. */
  data(): Promise<Float32Array>;
  /** The value of a one-element tensor (on a webgpu tensor DeviceReadIsAsync). */
  item(): number;
  /** Frees this handle now (the engine keeps what a recorded graph still needs); idempotent. */
  dispose(): void;
  /** One line: "Tensor {a=2, b=3} f32 requiresGrad [[1, 2, 3], [4, 5, 6]]", the values only up
   * to 20 elements, "Tensor (disposed)" once disposed; never throws. */
  toString(): string;

  // BEGIN ops.table tensor (generated by web/gen-ops.mjs from web/ops.table.mjs: edit the table, not this block)
  /** The values cast to a dtype (differentiable to f32, f16 and bf16), or copied to a device
   * ('cpu' or 'webgpu': to 'webgpu' an upload, of a tensor that does not require gradients; from
   * 'webgpu' to 'cpu' DeviceReadIsAsync, read with `await t.data()`). */
  to(target: DType | Device): Tensor;
  /** Elementwise this + y, axes aligned by name and broadcast (as every binary op). */
  add(y: Tensor): Tensor;
  /** Elementwise this − y. */
  sub(y: Tensor): Tensor;
  /** Elementwise this · y. */
  mul(y: Tensor): Tensor;
  /** Elementwise this / y. */
  div(y: Tensor): Tensor;
  /** Elementwise maximum; the gradient goes to the larger operand (half each on ties). */
  maximum(y: Tensor): Tensor;
  /** Elementwise minimum; the gradient goes to the smaller operand (half each on ties). */
  minimum(y: Tensor): Tensor;
  /** Elementwise this ** exponent. */
  pow(exponent: Tensor): Tensor;
  /** this · factor. */
  scale(factor: number): Tensor;
  /** this + value. */
  addScalar(value: number): Tensor;
  /** this − value. */
  subScalar(value: number): Tensor;
  /** this / value. */
  divScalar(value: number): Tensor;
  /** this ** exponent. */
  powScalar(exponent: number): Tensor;
  /** −this. */
  neg(): Tensor;
  /** Elementwise absolute value. */
  abs(): Tensor;
  /** e ** this. */
  exp(): Tensor;
  /** Natural logarithm. */
  log(): Tensor;
  /** Square root. */
  sqrt(): Tensor;
  /** Hyperbolic tangent. */
  tanh(): Tensor;
  /** 1 / (1 + e ** −this). */
  sigmoid(): Tensor;
  /** max(this, 0). */
  relu(): Tensor;
  /** this for x > 0, slope·x for x <= 0 (default slope 0.01). */
  leakyRelu(slope?: number): Tensor;
  /** GELU, tanh approximation (torch's approximate='tanh'). */
  gelu(): Tensor;
  /** Exact GELU, x·Φ(x). */
  geluErf(): Tensor;
  /** x·sigmoid(1.702x). */
  quickGelu(): Tensor;
  /** x·sigmoid(x). */
  silu(): Tensor;
  /** x for x > 0, alpha·(exp(x) − 1) for x <= 0 (default alpha 1). */
  elu(alpha?: number): Tensor;
  /** log(1 + this), accurate near 0. */
  log1p(): Tensor;
  /** 1 / sqrt(this). */
  rsqrt(): Tensor;
  /** 1 / this. */
  reciprocal(): Tensor;
  /** Sine. */
  sin(): Tensor;
  /** Cosine. */
  cos(): Tensor;
  /** Values limited to [lo, hi]; the gradient passes where lo <= x <= hi (lo > hi throws). */
  clamp(lo: number, hi: number): Tensor;
  /** The sum of every element, a scalar. */
  sumAll(): Tensor;
  /** The mean of every element, a scalar. */
  meanAll(): Tensor;
  /** The sum over axis, which is dropped. */
  sum(axis: string): Tensor;
  /** The mean over axis, which is dropped. */
  mean(axis: string): Tensor;
  /** Normalises to zero mean and unit variance over axis, then applies weight and bias if given. */
  layerNorm(axis: string, options?: LayerNormOptions | AffineLayerNormOptions): Tensor;
  /** this / sqrt(mean(this² over axis) + eps) (default eps 1e-6). */
  rmsNorm(axis: string, eps?: number): Tensor;
  /** rmsNorm(axis, eps) · weight, fused; weight has the single axis `axis`. */
  rmsNormMul(axis: string, weight: Tensor, eps?: number): Tensor;
  /** rmsNorm(axis, eps) · weight + bias; weight and bias have the single axis `axis`. */
  rmsNormMulAdd(axis: string, weight: Tensor, bias: Tensor, eps?: number): Tensor;
  /** torch's group_norm: channelAxis splits into `groups` groups, each normalized over its
   * channels and every axis not in options.batch; then weight and bias (channelAxis alone) if
   * given. */
  groupNorm(groups: number, channelAxis: string, options?: GroupNormOptions): Tensor;
  /** torch's cosine_similarity along axis (dropped), operands aligned by name (default eps
   * 1e-8). */
  cosineSimilarity(y: Tensor, axis: string, eps?: number): Tensor;
  /** rope (half mode, prepared cos/sin tables {position, axis: D/2}) of rmsNorm(axis) · weight,
   * fused: the per-head QK-norm of Qwen3 / Gemma 3 attention. */
  rmsNormMulRopeHalfPrepared(weight: Tensor, cos: Tensor, sin: Tensor, axis: string, options?: RmsNormRopeOptions): Tensor;
  /** this / max(‖this‖₂ over axis, eps) (default eps 1e-12). */
  l2Normalize(axis: string, eps?: number): Tensor;
  /** Softmax over axis (kept). */
  softmax(axis: string): Tensor;
  /** log(softmax(axis)), computed stably. */
  logSoftmax(axis: string): Tensor;
  /** Softmax cross-entropy of these logits against integer labels (an i32/i64 tensor with the
   * logits' axes without classAxis); the gradient is fused (softmax − target). */
  crossEntropy(labels: Tensor, classAxis: string, options?: Reduction | CrossEntropyOptions): Tensor;
  /** Negative log-likelihood of these log-probabilities at integer labels (axes as
   * crossEntropy). */
  nllLoss(labels: Tensor, classAxis: string, options?: Reduction | LossOptions): Tensor;
  /** Mean (or summed) squared error against target, axes aligned by name. */
  mseLoss(target: Tensor, options?: Reduction | LossOptions): Tensor;
  /** torch.gather: indices (i32/i64) have exactly this tensor's axes, extents <= this's except
   * along `axis`; the result has the indices' extents in this tensor's axis order. */
  gather(axis: string, indices: Tensor): Tensor;
  /** numpy.take_along_axis by name: indices have `axis`; their other axes match this tensor's
   * extents or have extent 1, and missing axes broadcast. */
  takeAlongAxis(axis: string, indices: Tensor): Tensor;
  /** torch.scatter_add, out of place: src (shaped as indices) added at the indices along `axis`. */
  scatterAdd(axis: string, indices: Tensor, src: Tensor): Tensor;
  /** torch.nn.HuberLoss against target (options may also be just the reduction). */
  huberLoss(target: Tensor, options?: Reduction | HuberLossOptions): Tensor;
  /** torch.nn.BCELoss of these probabilities in [0, 1]; each log is clamped at >= −100. */
  bceLoss(target: Tensor, options?: Reduction | LossOptions): Tensor;
  /** torch.nn.BCEWithLogitsLoss of these logits, in the stable form. */
  bceWithLogitsLoss(target: Tensor, options?: Reduction | LossOptions): Tensor;
  /** torch's kl_div: this tensor holds log-probabilities; 'mean' is elementwise (batchmean is
   * sum / batch). */
  klDivLoss(target: Tensor, options?: Reduction | KlDivLossOptions): Tensor;
  /** crossEntropy with torch's full options: target is integer labels (ignoreIndex, class
   * weight, label smoothing) or probabilities with the logits' axes (soft targets); optional
   * z-loss. */
  crossEntropyExt(target: Tensor, classAxis: string, options?: Reduction | CrossEntropyExtOptions): Tensor;
  /** crossEntropyExt of the logits this.dot(w, axis) over classAxis (integer labels), computed
   * in chunks of rows without keeping the logits or their gradient (a language model's head);
   * gradients to this and w. */
  linearCrossEntropyExt(w: Tensor, labels: Tensor, axis: string, classAxis: string, options?: Reduction | LinearCrossEntropyOptions): Tensor;
  /** Distillation of the student logits this.dot(w, axis) against teacher logits (or
   * probabilities): (1 − alpha)·T²·KL(teacher_T ‖ student_T) + alpha·CE(labels), chunked like
   * linearCrossEntropyExt; gradients to this and w. */
  linearDistillExt(w: Tensor, teacher: Tensor, axis: string, classAxis: string, options?: Reduction | DistillOptions): Tensor;
  /** silu(gate) · up, with `axis` split into halves [gate | up] (an even extent) and halved. */
  swiglu(axis: string): Tensor;
  /** geluErf(gate) · up, with `axis` split as in swiglu. */
  geglu(axis: string): Tensor;
  /** act(gate) · this, gate with the same axes as this tensor (any order). */
  gated(gate: Tensor, act: GateActivation): Tensor;
  /** torch's glu: `axis` split into halves [a | b] (an even extent), a · sigmoid(b). */
  glu(axis: string): Tensor;
  /** act(gate) · up, with `axis` split into halves [gate | up]: swiglu and geglu for any act. */
  splitGated(axis: string, act: GateActivation): Tensor;
  /** (c·tanh(this/c)) · (c·tanh(silu(gate)/c)): the soft-clamped up times the soft-bounded SiLU
   * gate (default c 30). */
  situ(gate: Tensor, c?: number): Tensor;
  /** The first index of the largest value along axis (dropped), i64; NaN counts as the largest. */
  argmax(axis: string): Tensor;
  /** The first index of the smallest value along axis (dropped), i64; NaN counts as the
   * smallest. */
  argmin(axis: string): Tensor;
  /** sort(axis, descending) indices: i64, stable. */
  argsort(axis: string, descending?: boolean): Tensor;
  /** `samples` i64 indices along axis drawn from this tensor's weights (finite, >= 0, not all
   * 0), as torch.multinomial; seeded, the same draws in every build. */
  multinomial(axis: string, samples: number, seed: number, replacement?: boolean): Tensor;
  /** A u8 mask: 1 where this is NaN. */
  isnan(): Tensor;
  /** A u8 mask: 1 where this is ±Infinity. */
  isinf(): Tensor;
  /** A u8 mask: 1 where this is neither NaN nor ±Infinity. */
  isfinite(): Tensor;
  /** A u8 mask: 1 where this is 0. */
  logicalNot(): Tensor;
  /** A u8 mask: both nonzero (NaN counts as nonzero), axes aligned by name. */
  logicalAnd(y: Tensor): Tensor;
  /** A u8 mask: either nonzero, axes aligned by name. */
  logicalOr(y: Tensor): Tensor;
  /** A u8 mask: exactly one nonzero, axes aligned by name. */
  logicalXor(y: Tensor): Tensor;
  /** A u8 mask: whether any value along axis (dropped) is nonzero; the empty any is 0. */
  any(axis: string): Tensor;
  /** A u8 mask: whether every value along axis (dropped) is nonzero; the empty all is 1. */
  all(axis: string): Tensor;
  /** A u8 scalar: whether any element is nonzero. */
  anyAll(): Tensor;
  /** A u8 scalar: whether every element is nonzero. */
  allAll(): Tensor;
  /** this[..., i, ...] += v[i] along axis, written into this tensor's own f32 buffer (a tensor
   * that shares its storage with a view or a saved value is refused); returns this tensor. */
  addAxisVectorInPlace(axis: string, v: Tensor): this;
  /** As addAxisVectorInPlace, then the unary op `act` in place: the values of add(v).unary(act);
   * returns this tensor. */
  addAxisVectorUnaryInPlace(axis: string, v: Tensor, act: UnaryName): this;
  /** this += alpha · y in place (torch's add_(y, alpha)), y's axes among this tensor's; storage
   * rules as addAxisVectorInPlace; returns this tensor. */
  addScaledInPlace(y: Tensor, alpha?: number): this;
  /** add(y), consuming this tensor: the result reuses its buffer when it can, and this tensor is
   * disposed. */
  takeAddNoGrad(y: Tensor): Tensor;
  /** scale(factor), consuming this tensor: the result reuses its buffer when it can, and this
   * tensor is disposed. */
  takeScaleNoGrad(factor: number): Tensor;
  /** A mixture-of-experts router over `axis` (the experts) of these logits: [weights, indices
   * (i64)], the k most probable experts of softmax(axis) with their probabilities renormalized
   * to sum to 1; constants. */
  routerTopK(axis: string, k: number): [weights: Tensor, indices: Tensor];
  /** torch.floor; the gradient is zero. */
  floor(): Tensor;
  /** torch.ceil; the gradient is zero. */
  ceil(): Tensor;
  /** torch.round (half to even); the gradient is zero. */
  round(): Tensor;
  /** torch.sign (0 at 0); the gradient is zero. */
  sign(): Tensor;
  /** A rational tanh (a truncated continued fraction), within 7e-6 of tanh everywhere; gradient
   * 1 − y². */
  fastTanh(): Tensor;
  /** Logit soft-capping, 30·tanh(this/30). */
  softcap30(): Tensor;
  /** Logit soft-capping, 15·tanh(this/15). */
  softcap15(): Tensor;
  /** The unary op of that name (leakyRelu and elu with their default parameter), for configs
   * that name their activation. */
  unary(name: UnaryName): Tensor;
  /** Adds a plain list of numbers along `axis` (as long as its extent); the list is a constant. */
  biasAdd(axis: string, bias: readonly number[] | Float32Array): Tensor;
  /** Snake (BigVGAN): this + sin²(alpha·this)/alpha, alpha's axes among this tensor's; gradients
   * to both. */
  snake(alpha: Tensor): Tensor;
  /** torch's prelu: max(0, this) + weight·min(0, this), weight's axes among this tensor's;
   * gradients to both. */
  prelu(weight: Tensor): Tensor;
  /** The sum over several axes at once, which are dropped. */
  sumMany(axes: readonly string[]): Tensor;
  /** Inclusive cumulative product along axis (kept); the gradient is exact with zeros. */
  cumprod(axis: string): Tensor;
  /** (this − mean) / sqrt(biased variance + eps) along axis (layerNorm without weight and bias). */
  standardizeAxis(axis: string, eps?: number): Tensor;
  /** The p-norm of every element (torch.linalg.vector_norm), p > 0 or Infinity (default 2); a
   * scalar. */
  normAll(p?: number): Tensor;
  /** h_t = decay_t · h_(t−1) + this_t along `time`, h_(−1) = h0 (zeros when absent); every h_t,
   * with this tensor's axes. decay has this tensor's axes, h0 them without `time`. */
  linearRecurrence(decay: Tensor, time: string, h0?: Tensor): Tensor;
  /** torch.topk along axis: [values, indices (i64 constants)], axis with extent k; ties keep the
   * lower index first, NaN counts as largest. */
  topK(axis: string, k: number, largest?: boolean): [values: Tensor, indices: Tensor];
  /** torch.sort along axis, stable: [values, indices (i64 constants)]. */
  sort(axis: string, descending?: boolean): [values: Tensor, indices: Tensor];
  /** torch.var over axis, dividing by n − correction (default 1); the axis is dropped. */
  variance(axis: string, correction?: number): Tensor;
  /** The maximum over axis, which is dropped; the gradient flows to the first maximum. */
  max(axis: string): Tensor;
  /** The minimum over axis, which is dropped; the gradient flows to the first minimum. */
  min(axis: string): Tensor;
  /** log(sum(exp(this))) over axis, computed stably; the axis is dropped. */
  logsumexp(axis: string): Tensor;
  /** Inclusive cumulative sum along axis (kept). */
  cumsum(axis: string): Tensor;
  /** The product over axis, which is dropped. */
  prod(axis: string): Tensor;
  /** The 2-norm over axis, which is dropped; gradient 0 where the norm is 0. */
  norm(axis: string): Tensor;
  /** Contracts the shared axis `axis`; other shared axes are batch axes, the rest are kept. */
  dot(y: Tensor, axis: string): Tensor;
  /** BitNet b1.58: this.dot(w, axis) with w quantized per tensor to {−1, 0, +1}·mean|w|;
   * straight-through gradients (dx through the quantized weight, dw as if unquantized). */
  dotTernarySte(w: Tensor, axis: string): Tensor;
  /** this.dot(y, axis) + bias in one GEMM (torch's addmm / Linear): bias's axes are a subset of
   * the result's, broadcast by name; all three operands get gradients. */
  addDot(y: Tensor, axis: string, bias: Tensor): Tensor;
  /** Positional matrix product (torch.matmul, rank >= 2): this's last axis contracts with y's
   * second-to-last (its last when transposeY), whatever their names; the leading axes are batch
   * axes matched by name. Result: [...batch, m, n] with this's m name and y's n name. */
  matmul(y: Tensor, transposeY?: boolean): Tensor;
  /** Swaps the names of axes a and b (extents travel with the data); a view. */
  transpose(a: string, b: string): Tensor;
  /** Broadcasts to exactly these axes and extents: this tensor's axes must be among them with
   * the same extents; the others are new (a view that repeats the values). */
  broadcastTo(tags: readonly string[], shape: readonly number[]): Tensor;
  /** The same axes in the given order (a permutation of tags). */
  permuteTo(order: readonly string[]): Tensor;
  /** Renames every axis, position by position (as many names as axes). */
  withTags(tags: readonly string[]): Tensor;
  /** Elements start .. start+length−1 along axis (a view). */
  narrow(axis: string, start: number, length: number): Tensor;
  /** Embedding lookup: `axis` is replaced, in place, by the axes of the i32/i64 indices. */
  indexSelect(axis: string, indices: Tensor): Tensor;
  /** The same tensor with contiguous row-major storage (a copy only if needed). */
  contiguous(): Tensor;
  /** A new axis of extent 1 at position (0 .. rank). */
  insertAxis(axis: string, position: number): Tensor;
  /** Removes an axis of extent 1 (InvalidArgument otherwise). */
  squeeze(axis: string): Tensor;
  /** Fuses axes into one named `into`, row-major over the listed order, where the first was. */
  merge(axes: readonly string[], into: string): Tensor;
  /** Inverse of merge: axis becomes the axes `into` (row-major; the extents multiply to its
   * extent). */
  split(axis: string, into: readonly string[], extents: readonly number[]): Tensor;
  /** Every axis fused into one named `into`, row-major over the current axis order. */
  flatten(into: string): Tensor;
  /** New axes and extents over the same elements in row-major order of the current axes. */
  reshape(tags: readonly string[], shape: readonly number[]): Tensor;
  /** The slice at index along axis (negative counts from the end); drops the axis. */
  select(axis: string, index: number): Tensor;
  /** Elements start, start+step, ... below end along axis (0 <= start <= end <= extent, step >=
   * 1). */
  slice(axis: string, start: number, end: number, step?: number): Tensor;
  /** `before` and `after` elements of `value` (default 0) added on each side of axis. */
  pad(axis: string, before: number, after: number, value?: number): Tensor;
  /** value where mask (u8 or f32, axes a subset of this tensor's) is nonzero; gradient 0 there. */
  maskedFill(mask: Tensor, value: number): Tensor;
  /** Keeps the elements with col − row <= diagonal (default 0), zeroes the rest. */
  tril(row: string, col: string, diagonal?: number): Tensor;
  /** Keeps the elements with col − row >= diagonal (default 0), zeroes the rest. */
  triu(row: string, col: string, diagonal?: number): Tensor;
  /** Keeps row − col <= lower and col − row <= upper, zeroes the rest; −1 is unbounded (as TF). */
  bandPart(row: string, col: string, lower: number, upper: number): Tensor;
  /** Zeroes each element with probability p and scales the rest by 1/(1−p); the mask is a pure
   * function of (seed, element index), the same in every build and recompute. */
  dropout(p: number, seed: number): Tensor;
  /** 2-D cross-correlation (torch's conv2d) via im2col + GEMM. The input has axes c, h, w plus
   * any batch axes, in any order; the weight has exactly out, c (= input c / groups), kh, kw.
   * The result keeps the input's axis order with c replaced by out. */
  conv2d(weight: Tensor, options?: Conv2dOptions): Tensor;
  /** relu(conv2d(weight, options)) as one op: the bias and relu applied in the convolution's
   * output loop, and one VJP whose gradients are the composed ops' (relu's mask read from the
   * result). With options.maxPool, also max pooled in the same op: conv2dRelu then maxPool2d's
   * values and gradients, without the full-size result. */
  conv2dRelu(weight: Tensor, options?: Conv2dOptions): Tensor;
  /** 1-D cross-correlation (torch's conv1d). The input has axes c and t plus any batch axes; the
   * weight has exactly out, c (= input c / groups), k. The result keeps the input's axis order
   * with c replaced by out. */
  conv1d(weight: Tensor, options?: Conv1dOptions): Tensor;
  /** torch's conv_transpose1d, the adjoint of conv1d. The weight has exactly c (the input's),
   * out (= result channels / groups), k; the result keeps the input's axis order with c replaced
   * by out. */
  convTranspose1d(weight: Tensor, options?: ConvTranspose1dOptions): Tensor;
  /** conv1d left-padded by (k − 1)·dilation, so output t sees inputs up to t; the length is
   * kept. */
  causalConv1d(weight: Tensor, options?: CausalConv1dOptions): Tensor;
  /** causalConv1d with channels in `groups` independent groups. */
  groupedCausalConv1d(weight: Tensor, groups: number, options?: CausalConv1dOptions): Tensor;
  /** The causal convolution with one group per input channel (the short convolution of
   * Mamba-style blocks); the weight is {out, c: 1, k}, out a multiple of c. */
  causalDepthwiseConv1d(weight: Tensor, options?: CausalDepthwiseConv1dOptions): Tensor;
  /** torch's unfold (im2col): every kernel window of the images {batch.., c, h, w} as columns
   * {batch.., patch (c·kh·kw), l (positions)}. */
  unfold(kernel: Pair, options?: UnfoldOptions): Tensor;
  /** torch's fold (col2im), unfold's adjoint: columns {batch.., patch, l} summed back into
   * images of outputSize. */
  fold(outputSize: Pair, kernel: Pair, options?: UnfoldOptions): Tensor;
  /** this · scale + shift per channel (a frozen batch norm); scale and shift have the single
   * axis channelAxis; gradients to all three. */
  channelAffine(scale: Tensor, shift: Tensor, channelAxis: string): Tensor;
  /** Max over kernel windows of axes h and w (−inf padding); the gradient goes to each window's
   * first maximum; stride defaults to the kernel. */
  maxPool2d(kernel: Pair, options?: Pool2dOptions): Tensor;
  /** Mean over kernel windows of axes h and w; zero padding counts in the divisor (torch's
   * count_include_pad=True). */
  avgPool2d(kernel: Pair, options?: Pool2dOptions): Tensor;
  /** Doubles axes height and width (default 'h', 'w') by repeating each element in a 2x2 block;
   * the gradient sums each block. */
  upsample2xNearest(height?: string, width?: string): Tensor;
  /** Block quantization of an f32, f16 or bf16 tensor to q8_0: blocks of 32 consecutive elements
   * along `axis` (its extent a multiple of 32), each stored as an f16 scale d = max|x|/127 and
   * 32 int8 values round(x/d) (ties away from zero), 34 bytes per 32 values. The result is a
   * constant with the same tags and shape; to('f32') dequantizes. */
  quantize(dtype: 'q8_0', axis: string): Tensor;
  /** Elementwise comparison `this op y` (== != < <= > >=), axes aligned by name and broadcast as
   * in add: a u8 tensor of 1 (true) and 0 (false), never differentiable. Any dtypes on either
   * side (i64 with i64 compares exactly, anything else by value in f64); NaN compares false
   * except under 'ne'. An unknown op is InvalidArgument. */
  compare(y: Tensor, op: CompareOp): Tensor;
  /** torch's align_to: exactly these axes, in this order; this tensor's axes must be among them
   * (keeping their extents), the others are new axes of extent 1. A view. */
  alignTo(tags: readonly string[]): Tensor;
  /** torch.as_strided: element (i0, i1, ...) of the result is element offset + Σ i_k·strides[k]
   * of this tensor's elements in row-major order of its axes. Strides and offset count elements;
   * every element reached must exist. A view (of a contiguous copy when this tensor is strided);
   * elements read several times accumulate their gradients. */
  viewWithStrides(tags: readonly string[], shape: readonly number[], strides: readonly number[], offset?: number): Tensor;
  /** A fresh contiguous copy that shares no storage, even when this tensor is already
   * contiguous. */
  materialize(): Tensor;
  /** Python's x[start:end:step] along axis: negative start and end count from the end and are
   * clamped as Python clamps them; a negative step walks down from start (end <= −extent−1
   * reaches index 0). Step 0 is InvalidArgument. A view for a positive step, a copy for a
   * negative one. */
  sliceStep(axis: string, start: number, end: number, step?: number): Tensor;
  /** torch.nn.functional.pad with zeros of two named axes: left and right on wAxis, top and
   * bottom on hAxis. A negative pad crops. */
  zeroPad2d(hAxis: string, wAxis: string, left: number, right: number, top: number, bottom: number): Tensor;
  /** zeroPad2d with `value` (default 0) in place of zeros. A negative pad crops. */
  constantPad2d(hAxis: string, wAxis: string, left: number, right: number, top: number, bottom: number, value?: number): Tensor;
  /** torch.unbind: one view per index along axis (which they drop), in order. */
  unbindInto(axis: string): Tensor[];
  /** times copies along axis: tiled [x, x, ...] (torch's repeat on one dim), or with interleave
   * each element repeated in place (torch.repeat_interleave, grouped-query attention's KV
   * heads). The gradient sums the copies. */
  repeatAxis(axis: string, times: number, interleave?: boolean): Tensor;
  /** torch.flip along one axis (a copy). */
  flip(axis: string): Tensor;
  /** torch.roll along one axis: element i moves to (i + shift) mod extent; any shift wraps. */
  roll(axis: string, shift: number): Tensor;
  /** A roll per slice: shifts is an i32/i64 tensor with exactly the axis byAxis (this tensor's
   * extent), and the slice at index b of byAxis is rolled along axis by shifts[b]. */
  rollBy(axis: string, byAxis: string, shifts: Tensor): Tensor;
  /** As rollBy, but shifting with zero fill: element i moves to i + shifts[b] when that is
   * inside the axis; vacated places are 0. */
  shiftBy(axis: string, byAxis: string, shifts: Tensor): Tensor;
  /** Transformer-XL's relative-position shift of scores x[.., q, k]: pad a zero column before k,
   * read (Q, K+1) as (K+1, Q), drop the first row, read back as (Q, K). The result has the other
   * axes in this tensor's order, then queryAxis, keyAxis. */
  relposShift(queryAxis: string, keyAxis: string): Tensor;
  /** torch.diagonal: a view of the offset diagonal of axes a and b (> 0 above the main one),
   * which are dropped; the new axis `into` (it may reuse a or b) comes last. An offset past the
   * matrix gives an empty axis. */
  diagonal(a: string, b: string, offset: number, into: string): Tensor;
  /** The sum of the main diagonal of axes a and b (torch.trace); other axes are kept as a batch. */
  trace(a: string, b: string): Tensor;
  /** torch.diag in both directions: diag([axis], [intoA, intoB], offset) puts `axis` on the
   * offset diagonal of a new square [intoA, intoB] (as diagEmbed; other axes are a batch);
   * diag([a, b], [into], offset) is the diagonal of a two-axis tensor. Other lengths are
   * InvalidArgument. */
  diag(from: readonly [string] | readonly [string, string], into: readonly [string] | readonly [string, string], offset?: number): Tensor;
  /** torch.diag_embed: `axis` (extent n) is replaced, in place, by two new axes intoA and intoB
   * of extent n + |offset|, zero but for the offset diagonal, which holds the values. */
  diagEmbed(axis: string, intoA: string, intoB: string, offset?: number): Tensor;
  /** torch.index_add, out of place: source row j along `axis` is added to row indices[j] (1-D
   * i32/i64 indices; source has this tensor's axes and extents but the indices' extent along
   * `axis`). Repeats accumulate, in index order; gradients to this tensor and source. */
  indexAdd(axis: string, indices: Tensor, source: Tensor): Tensor;
  /** torch.scatter, out of place: each src element (src shaped as the indices, as in scatterAdd)
   * overwrites its target; of several aiming at one element, the last along `axis` wins.
   * Gradients as torch: zero where written; src gets the gradient gathered at the indices. */
  scatter(axis: string, indices: Tensor, src: Tensor): Tensor;
  /** torch.masked_select: the elements where mask (u8 or f32, nonzero set; axes among this
   * tensor's) is set, row-major in this tensor's axis order, as one axis `into`. */
  maskedSelect(mask: Tensor, into: string): Tensor;
  /** torch.masked_scatter: the k positions mask sets (as maskedSelect) take the first k elements
   * of source, row-major in its own axis order (ShapeMismatch when it has fewer). */
  maskedScatter(mask: Tensor, source: Tensor): Tensor;
  /** Out of place torch.slice_scatter: [start, start + its extent) along `axis` replaced by
   * source (same dtype, this tensor's axes and extents but along `axis`). */
  setSlice(axis: string, start: number, source: Tensor): Tensor;
  /** Out of place torch.index_copy: rows indices[j] along `axis` replaced by source row j
   * (indices and source as indexAdd); of repeated indices the last wins. */
  setRows(axis: string, indices: Tensor, source: Tensor): Tensor;
  /** A copy with [start, end) along `axis` zeroed (0 <= start <= end <= extent); gradient zero
   * there. */
  zeroSlice(axis: string, start: number, end: number): Tensor;
  /** A copy with the rows at the 1-D i32/i64 indices along `axis` zeroed (torch.index_fill with
   * 0). */
  zeroRows(axis: string, indices: Tensor): Tensor;
  // END ops.table tensor
  // rope is hand-written (web/ops.table.mjs, HAND_WRITTEN): its two call forms.
  /** Rotary position embedding along options.position and options.dim (even extent D) with
   * angles from options.base; other axes are batch axes. */
  rope(options?: RopeOptions): Tensor;
  /** Rotary position embedding from constant cos/sin tables {position, dim: D/2} (one angle per
   * pair), rows offset .. offset+T−1; the tables take no gradient. */
  rope(cos: Tensor, sin: Tensor, options?: RopeOptions): Tensor;
  // The packed products are hand-written (they take a PackedRhs). Inference-only: the result is a
  // constant; an operand that requires grad (outside noGrad) fails with GradientPackedMatmulUnsupported (dense
  // dotPacked) or GradientQuantizedMatmulUnsupported (a q8_0 packed weight, and the fused forms).
  /** dot(w, packed.axis) of the w packed by fc.packRhs (+ bias, whose axes are exactly
   * packed.tags): this tensor's other axes, then packed.tags. */
  dotPacked(packed: PackedRhs, bias?: Tensor | null): Tensor;
  /** rmsNormMul(packed.axis, weight, eps = 1e-6) then dotPacked(packed). */
  rmsNormMulDotPacked(weight: Tensor, packed: PackedRhs, eps?: number): Tensor;
  /** swiglu(packed.axis) then dotPacked(packed): packed.axis holds [gate | up], twice the depth. */
  splitSwiGluDotPacked(packed: PackedRhs): Tensor;
  /** geglu(packed.axis) then dotPacked(packed) with a quantized (q8_0) packed weight. */
  gegluQuantDotPacked(packed: PackedRhs): Tensor;
  // The prepared convolution is hand-written (web/ops.table.mjs, HAND_WRITTEN): it takes a handle.
  /** {@link Tensor.conv2d} with the weight (and bias) of a {@link PreparedConv2d}: the same values
   * within f32 tolerance and the same result axes. Inference only: an input that requires grad
   * (outside noGrad) is GradientPreparedConv2dUnsupported. */
  conv2dPrepared(prepared: PreparedConv2d): Tensor;
  /** relu({@link Tensor.conv2dPrepared}), fused: {@link Tensor.conv2dRelu}'s values. */
  conv2dPreparedRelu(prepared: PreparedConv2d): Tensor;
}

/** A weight packed once by {@link Fucina.packRhs} for {@link Tensor.dotPacked} and its fused forms
 * (inference-only). It holds its own copy, counted by fc.memory(), until dispose(); fc.scope
 * does not dispose it. */
export class PackedRhs {
  private constructor();
  /** The contracted axis. */
  readonly axis: string;
  /** The contracted axis's extent. */
  readonly depth: number;
  /** The weight's other axes, the last axes of a product. */
  readonly tags: string[];
  /** The extents of tags. */
  readonly shape: number[];
  /** 'f32' for dense panels; 'q8_0' for quantized blocks (a q8_0 weight with blocks along axis). */
  readonly dtype: 'f32' | 'q8_0';
  /** The weight's dtype when packed. */
  readonly sourceDtype: 'f32' | 'f16' | 'bf16' | 'q8_0';
  /** Bytes of the packed copy. */
  readonly bytes: number;
  /** Whether dispose() has been called; a disposed packed weight throws when used. */
  readonly isDisposed: boolean;
  /** Frees the packed copy; idempotent. */
  dispose(): void;
  /** "PackedRhs('e' 784 by {o=128}: f32 as f32 panels)"; never throws. */
  toString(): string;
}

/** A conv2d weight (and bias) transformed once by {@link Fucina.prepareConv2dWeights} for
 * {@link Tensor.conv2dPrepared}: Winograd F(2x2, 3x3) planes for a 3x3 kernel with stride 1,
 * dilation 1 and at least 64 input channels a group, else the weight laid out for the im2col GEMM. A snapshot of the weight; its
 * buffers live until {@link PreparedConv2d.dispose}. */
export interface PreparedConv2d {
  /** True when it runs Winograd F(2x2, 3x3), false for im2col + GEMM. */
  readonly winograd: boolean;
  /** True after dispose(). */
  readonly isDisposed: boolean;
  /** Frees the prepared weight now; using it afterwards is InvalidArgument. */
  dispose(): void;
}

// ---------------------------------------------------------------- fc.optim

/** Options of {@link Optim.sgd} (torch.optim.SGD). */
export interface SgdOptions {
  /** Learning rate, >= 0 (default 1e-3). */
  lr?: number;
  /** Momentum factor, >= 0 (default 0). */
  momentum?: number;
  /** Dampening of the momentum, >= 0 (default 0). */
  dampening?: number;
  /** Nesterov momentum; needs momentum > 0 and dampening 0 (default false). */
  nesterov?: boolean;
  /** L2 penalty added to the gradient, >= 0 (default 0). */
  weightDecay?: number;
  /** Keep an f32 master copy of each f16/bf16 parameter and update that (default false): without
   * it a 16-bit parameter is updated in f32 and rounded back each step, so steps below half its
   * precision are lost (bf16 has 8 bits of mantissa). */
  masterWeights?: boolean;
}

/** Options of {@link Optim.adam} and {@link Optim.adamw} (torch.optim.Adam, AdamW). */
export interface AdamOptions {
  /** Learning rate, >= 0 (default 1e-3). */
  lr?: number;
  /** The moment decay rates, each in [0, 1) (default [0.9, 0.999]). */
  betas?: readonly [number, number];
  /** Added to the denominator, >= 0 (default 1e-8). */
  eps?: number;
  /** Adam: L2 added to the gradient (default 0); AdamW: decoupled decay (default 0.01). */
  weightDecay?: number;
  /** Keep an f32 master copy of each f16/bf16 parameter (see {@link SgdOptions.masterWeights}). */
  masterWeights?: boolean;
}

/** Updates parameters in place, without building graph nodes (the semantics of torch.optim). */
export class Optimizer {
  private constructor();
  /** One update of every parameter that has a gradient; others are skipped. */
  step(): void;
  /** Clears the gradients of every parameter. */
  zeroGrad(): void;
  /** The learning rate the next step uses. */
  get lr(): number;
  /** Sets the learning rate for the following steps (a schedule's value, say). */
  set lr(value: number);
  /** A copy of the parameter list, in the order given. */
  readonly params: Tensor[];
  /** Whether dispose() has been called; a disposed optimizer throws when used. */
  readonly isDisposed: boolean;
  /** Frees the optimizer's state (and its hold on the parameters); idempotent. */
  dispose(): void;
}

/** fc.optim: optimizers, gradient clipping and learning-rate schedules. */
export interface Optim {
  /** Stochastic gradient descent with optional momentum, Nesterov and weight decay. */
  sgd(params: readonly Tensor[], options?: SgdOptions): Optimizer;
  /** Adam with L2 weight decay added to the gradient. */
  adam(params: readonly Tensor[], options?: AdamOptions): Optimizer;
  /** AdamW: Adam with decoupled weight decay. */
  adamw(params: readonly Tensor[], options?: AdamOptions): Optimizer;
  /** Scales the gradients by maxNorm / (norm + 1e-6) when their global 2-norm exceeds maxNorm;
   * returns the norm before clipping. */
  clipGradNorm(params: readonly Tensor[], maxNorm: number): number;
  /** clipGradNorm without reading the device (torch's clip_grad_norm_ returns a tensor too): the
   * gradients are scaled where they live and the norm is an f32 scalar there (await
   * norm.data()). On the webgpu device, where clipGradNorm's number would need a synchronous
   * read (DeviceReadIsAsync), this is the way to clip. */
  clipGradNormTensor(params: readonly Tensor[], maxNorm: number): Tensor;
  /** baseLr · step / warmupSteps before warmupSteps, then baseLr. */
  linearWarmup(step: number, warmupSteps: number, baseLr: number): number;
  /** minLr + (baseLr − minLr) · (1 + cos(π · min(step, totalSteps) / totalSteps)) / 2. */
  cosineDecay(step: number, totalSteps: number, baseLr: number, minLr?: number): number;
  /** A schedule: linear warm-up, then cosine decay over the remaining totalSteps − warmupSteps
   * steps. */
  warmupCosine(baseLr: number, warmupSteps: number, totalSteps: number, minLr?: number): (step: number) => number;
}

// ---------------------------------------------------------------- fc.nn

/** A layer or model: forward() applies it, parameters() lists its trainable leaves in order. */
export interface Module {
  /** Applies the layer to x; the argument is checked up front (InvalidArgument naming it). */
  forward(x: Tensor): Tensor;
  /** The trainable variables, in a fixed order (the order saveParameters writes). */
  parameters(): Tensor[];
}

/** A layer or model with its weights packed once for inference (its pack()): forward() computes
 * what the model's forward computes (within f32 rounding) as constants, without repacking the
 * weights per call; an input that requires grad fails with GradientPackedMatmulUnsupported. The
 * packed copies do not follow later training: pack again after updating the weights. */
export interface PackedModel {
  /** The model's forward on x (a constant). */
  forward(x: Tensor): Tensor;
  /** Frees the packed copies. */
  dispose(): void;
}

/** Options of {@link Linear}'s constructor. */
export interface LinearOptions {
  /** Whether the layer adds a bias (default true). */
  bias?: boolean;
}

/** y{..., out} = x{..., in} · weight{out, in} + bias{out}, initialised U(±1/sqrt(in)) as torch. */
export interface Linear extends Module {
  /** Moves every tensor it holds to device (parameters stay leaves there; the old ones are
   * disposed): before making its optimizer. From webgpu back to 'cpu': DeviceReadIsAsync. */
  to(device: Device): this;
  /** The input axis, contracted. */
  readonly in: string;
  /** The output axis, added. */
  readonly out: string;
  /** The weight {out, in}. */
  readonly weight: Tensor;
  /** The bias {out}, or null when made with bias: false. */
  readonly bias: Tensor | null;
  /** The layer for inference, its weight packed once ({@link Fucina.packRhs}). */
  pack(): PackedModel;
}

/** The constructor fc.nn.Linear. */
export interface LinearConstructor {
  /** A Linear layer from inAxis (inFeatures) to outAxis (outFeatures), its values from seed. */
  new (inAxis: string, outAxis: string, inFeatures: number, outFeatures: number, seed: number, options?: LinearOptions): Linear;
}

/** Axis names of a {@link Conv2d} layer (its channel axes are the constructor's). */
export interface Conv2dLayerAxes {
  /** The input's height axis (default 'h'). */
  height?: string;
  /** The input's width axis (default 'w'). */
  width?: string;
  /** The weight's kernel-height axis (default 'kh'). */
  kernelH?: string;
  /** The weight's kernel-width axis (default 'kw'). */
  kernelW?: string;
}

/** Options of {@link Conv2d}'s constructor: Tensor.conv2d's geometry. */
export interface Conv2dLayerOptions {
  /** Step between windows, >= 1 (default 1). */
  stride?: Pair;
  /** Zeros added on each side, >= 0 (default 0). */
  padding?: Pair;
  /** Spacing of the kernel taps, >= 1 (default 1). */
  dilation?: Pair;
  /** Channel groups, dividing inChannels and outChannels (default 1). */
  groups?: number;
  /** Axis names other than the channels. */
  axes?: Conv2dLayerAxes;
}

/** The axis names a {@link Conv2d} layer passes to Tensor.conv2d, its own ones resolved. */
export interface Conv2dLayerResolvedAxes extends Conv2dAxes {
  /** The constructor's inAxis. */
  channels: string;
  /** The constructor's outAxis. */
  outChannels: string;
  /** The weight's kernel-height axis. */
  kernelH: string;
  /** The weight's kernel-width axis. */
  kernelW: string;
}

/** The conv2d options a {@link Conv2d} layer applies (its axes resolved). */
export interface Conv2dLayerSettings extends Conv2dLayerOptions {
  /** Every axis name, the channels included. */
  axes: Conv2dLayerResolvedAxes;
}

/** conv2d + bias: x{..., in, h, w} -> {..., out, h', w'}, initialised as torch. */
export interface Conv2d extends Module {
  /** Moves every tensor it holds to device (parameters stay leaves there; the old ones are
   * disposed): before making its optimizer. From webgpu back to 'cpu': DeviceReadIsAsync. */
  to(device: Device): this;
  /** The options forward passes to Tensor.conv2d (with the bias). */
  readonly options: Conv2dLayerSettings;
  /** The weight {out, in / groups, kh, kw}. */
  readonly weight: Tensor;
  /** The bias {out}. */
  readonly bias: Tensor;
  /** relu(forward(x)) as one op ({@link Tensor.conv2dRelu}): the bias and relu added in the
   * convolution's output loop, one gradient step; with `maxPool`, also max pooled over maxPool x
   * maxPool windows in the same op (maxPool2d's values and gradients, no full-size result kept). */
  forwardRelu(x: Tensor, options?: { maxPool?: number }): Tensor;
  /** The layer for inference, weight and bias prepared once ({@link Fucina.prepareConv2dWeights}). */
  pack(): PackedModel;
}

/** The constructor fc.nn.Conv2d. */
export interface Conv2dConstructor {
  /** A square-kernel convolution from inAxis (inChannels) to outAxis (outChannels). */
  new (inAxis: string, outAxis: string, inChannels: number, outChannels: number, kernel: number, seed: number,
    options?: Conv2dLayerOptions): Conv2d;
}

/** Affine layer normalisation over one axis: weight ones, bias zeros. */
export interface LayerNorm extends Module {
  /** Moves every tensor it holds to device (parameters stay leaves there; the old ones are
   * disposed): before making its optimizer. From webgpu back to 'cpu': DeviceReadIsAsync. */
  to(device: Device): this;
  /** The normalised axis. */
  readonly axis: string;
  /** Added to the variance. */
  readonly eps: number;
  /** The weight {axis}. */
  readonly weight: Tensor;
  /** The bias {axis}. */
  readonly bias: Tensor;
}

/** The constructor fc.nn.LayerNorm. */
export interface LayerNormConstructor {
  /** Layer normalisation over axis of extent features (default eps 1e-5). */
  new (axis: string, features: number, eps?: number): LayerNorm;
}

/** A lookup table {rows, dim} ~ N(0, std²): ids{...} (i32/i64) -> {..., dim}. */
export interface Embedding extends Module {
  /** Moves every tensor it holds to device (parameters stay leaves there; the old ones are
   * disposed): before making its optimizer. From webgpu back to 'cpu': DeviceReadIsAsync. */
  to(device: Device): this;
  /** The table's row axis, replaced by the ids' axes. */
  readonly rows: string;
  /** The table {rows, dim}. */
  readonly table: Tensor;
  /** Looks up the rows of ids (an i32/i64 tensor without the dim axis). */
  forward(ids: Tensor): Tensor;
}

/** The constructor fc.nn.Embedding. */
export interface EmbeddingConstructor {
  /** A table of count rows of features values along dim, drawn from N(0, std²) with seed. */
  new (rows: string, dim: string, count: number, features: number, std: number, seed: number): Embedding;
}

/** The configuration of {@link Mlp}. */
export interface MlpConfig {
  /** Input, hidden... and class sizes (default [784, 512, 256, 10]). */
  sizes?: number[];
}

/** W1 of BENCHMARKS.md: x{batch, "in"} -> (Linear + ReLU)* -> Linear -> logits{batch, "class"}. */
export interface Mlp extends Module {
  /** Moves every tensor it holds to device (parameters stay leaves there; the old ones are
   * disposed): before making its optimizer. From webgpu back to 'cpu': DeviceReadIsAsync. */
  to(device: Device): this;
  /** The layers, input first. */
  readonly layers: Linear[];
  /** The model for inference, every layer packed once. */
  pack(): PackedModel;
}

/** The constructor fc.nn.Mlp. */
export interface MlpConstructor {
  /** An MLP with the given sizes, its parameters from seed (default 0). */
  new (config?: MlpConfig, seed?: number): Mlp;
}

/** The configuration of {@link Cnn}. */
export interface CnnConfig {
  /** Image height and width, >= 10 (default 28). */
  image?: number;
  /** Input channels (default 1). */
  channels?: number;
  /** Channels of the first convolution (default 32). */
  conv1?: number;
  /** Channels of the second convolution (default 64). */
  conv2?: number;
  /** Hidden units of the classifier (default 128). */
  hidden?: number;
  /** Classes (default 10). */
  classes?: number;
  /** Channels last (default false): a one-channel image gets its "c" axis last and the features
   * are read (h, w, c2), so images{batch, "h", "w", "c"} compute every convolution and pool
   * channels last without a copy. */
  channelsLast?: boolean;
}

/** W2: images{batch, "c"?, "h", "w"} -> two conv + ReLU + 2x2 max-pool blocks -> two Linear
 * layers -> logits{batch, "class"}. */
export interface Cnn extends Module {
  /** Moves every tensor it holds to device (parameters stay leaves there; the old ones are
   * disposed): before making its optimizer. From webgpu back to 'cpu': DeviceReadIsAsync. */
  to(device: Device): this;
  /** The configuration, defaults filled in. */
  readonly config: Required<CnnConfig>;
  /** Features after the convolutions: conv2 · side², the input of fc1. */
  readonly flatFeatures: number;
  /** The first convolution, c -> c1. */
  readonly conv1: Conv2d;
  /** The second convolution, c1 -> c2. */
  readonly conv2: Conv2d;
  /** The hidden layer, feature -> hidden. */
  readonly fc1: Linear;
  /** The classifier, hidden -> class. */
  readonly fc2: Linear;
  /** Logits{batch, "class"} of images (f32, axes h and w of extent config.image, and c of
   * extent config.channels unless it is 1). */
  forward(images: Tensor): Tensor;
  /** The model for inference: convolutions prepared (relu fused) and Linears packed, once. */
  pack(): PackedModel;
}

/** The constructor fc.nn.Cnn. */
export interface CnnConstructor {
  /** A CNN with the given sizes, its parameters from seed (default 0). */
  new (config?: CnnConfig, seed?: number): Cnn;
}

/** The configuration of {@link Gpt}. */
export interface GptConfig {
  /** Vocabulary size (default 256, bytes). */
  vocab?: number;
  /** Longest sequence (default 128). */
  context?: number;
  /** Width of the residual stream (default 128), a multiple of heads. */
  dModel?: number;
  /** Attention heads (default 4). */
  heads?: number;
  /** Transformer blocks (default 2). */
  layers?: number;
  /** Hidden width of each block's MLP (default 512). */
  mlp?: number;
  /** Recompute each block in backward (activation checkpointing); default false. */
  checkpointBlocks?: boolean;
}

/** One pre-LayerNorm transformer block of {@link Gpt}. */
export interface GptBlock {
  /** Normalises the attention's input. */
  readonly ln1: LayerNorm;
  /** Normalises the MLP's input. */
  readonly ln2: LayerNorm;
  /** Projects e to the queries, keys and values (axis qkv). */
  readonly qkv: Linear;
  /** Projects the attention's output back to e. */
  readonly proj: Linear;
  /** The MLP's first layer, e -> mlp. */
  readonly fc: Linear;
  /** The MLP's second layer, mlp -> e. */
  readonly out: Linear;
  /** The block's layers in parameter order: ln1, qkv, proj, ln2, fc, out. */
  readonly layers: readonly [LayerNorm, Linear, Linear, LayerNorm, Linear, Linear];
}

/** W3: a byte-level pre-LayerNorm GPT; tokens{batch..., "t"} (i32/i64) -> logits{batch...,
 * "t", "vocab"}, the head tied to the token embedding. */
export interface Gpt extends Module {
  /** Moves every tensor it holds to device (parameters stay leaves there; the old ones are
   * disposed): before making its optimizer. From webgpu back to 'cpu': DeviceReadIsAsync. */
  to(device: Device): this;
  /** The configuration, defaults filled in. */
  readonly config: Required<GptConfig>;
  /** The transformer blocks, input first. */
  readonly blocks: GptBlock[];
  /** The token embedding {vocab, e}, also the output head. */
  readonly token: Embedding;
  /** The position embedding {t, e}. */
  readonly position: Embedding;
  /** The final layer normalisation. */
  readonly final: LayerNorm;
  /** Logits{batch..., t, vocab} of tokens{batch..., t} (1 to context positions). */
  forward(tokens: Tensor): Tensor;
  /** Mean next-token cross-entropy of tokens[:, :-1] predicting tokens[:, 1:] (2 to
   * context + 1 positions). */
  loss(tokens: Tensor): Tensor;
  /** Samples up to maxTokens tokens after prompt (ids below vocab) and returns them, gradients
   * off: C++'s Gpt::generate, the same contract as {@link Gpt2.generate}. A KV cache makes each
   * token cost one position while prompt and tokens fit in the context; beyond it each token
   * reruns the last `context` tokens. */
  generate(prompt: readonly number[] | Int32Array, options?: GenerateOptions): number[];
  /** generate for a model on any device (on webgpu, where generate's synchronous reads are
   * DeviceReadIsAsync): each step's logits are read with await data() and the token drawn on the
   * cpu by the same sampler, so the tokens are generate's. */
  generateAsync(prompt: readonly number[] | Int32Array, options?: GenerateOptions): Promise<number[]>;
  /** Makes the blocks' projections (qkv, proj, fc, out) frozen constants: weights stored as
   * dtype (q8_0 with blocks along each weight's input axis), biases f32. parameters() then lists
   * the embeddings and LayerNorms only; gradients still flow through the frozen weights. */
  freezeProjections(dtype: 'f32' | 'f16' | 'bf16' | 'q8_0'): void;
}

/** The constructor fc.nn.Gpt. */
export interface GptConstructor {
  /** A GPT with the given sizes, its parameters from seed (default 0). */
  new (config?: GptConfig, seed?: number): Gpt;
}

/** The dtypes a GPT-2 base's large matrices can be stored in (q8_0: blocks of 32 along each
 * matrix's input axis). */
export type BaseDType = 'f32' | 'f16' | 'bf16' | 'q8_0';

/** A Hugging Face GPT-2 config.json, parsed: the fields {@link Gpt2} reads, and any others (which
 * it ignores). */
export interface Gpt2Config {
  /** Vocabulary size (50257 for GPT-2). */
  vocab_size: number;
  /** Longest sequence (1024 for GPT-2); n_ctx is read when this is missing. */
  n_positions?: number;
  /** The older name of n_positions. */
  n_ctx?: number;
  /** Width of the residual stream (768 for GPT-2 small). */
  n_embd: number;
  /** Transformer blocks. */
  n_layer: number;
  /** Attention heads; n_embd is a multiple of it. */
  n_head: number;
  /** Hidden width of each block's MLP; null or missing: 4 · n_embd. */
  n_inner?: number | null;
  /** The LayerNorms' epsilon (default 1e-5). */
  layer_norm_epsilon?: number;
  /** 'gelu_new' or 'gelu_pytorch_tanh' (the tanh GELU, GPT-2's) or 'gelu' (the exact one). */
  activation_function?: string;
  /** Must not be false: the output head is the token embedding. */
  tie_word_embeddings?: boolean;
  /** "gpt2" in the files Hugging Face writes. */
  model_type?: string;
  /** Other config.json keys, ignored. */
  [key: string]: unknown;
}

/** A Hugging Face Llama-family config.json (LlamaForCausalLM, Qwen2ForCausalLM), parsed: the
 * fields {@link Llama} reads, and any others (which it ignores). */
export interface LlamaConfig {
  /** 'llama' (SmolLM2, Llama 3.2, ...) or 'qwen2' (Qwen2.5: biases on q, k and v). */
  model_type: 'llama' | 'qwen2' | string;
  /** Vocabulary size. */
  vocab_size: number;
  /** Width of the residual stream. */
  hidden_size: number;
  /** Transformer blocks. */
  num_hidden_layers: number;
  /** Query heads. */
  num_attention_heads: number;
  /** Key/value heads (grouped-query attention; default: num_attention_heads). */
  num_key_value_heads?: number;
  /** Width of each head (default hidden_size / num_attention_heads). */
  head_dim?: number;
  /** Hidden width of each block's gated MLP. */
  intermediate_size: number;
  /** Longest sequence. */
  max_position_embeddings: number;
  /** The RMSNorms' epsilon (default 1e-6). */
  rms_norm_eps?: number;
  /** The rotary base (default 10000). */
  rope_theta?: number;
  /** null, or { rope_type: 'linear', factor } or { rope_type: 'llama3', factor, low_freq_factor,
   * high_freq_factor, original_max_position_embeddings } (Llama 3.1+). */
  rope_scaling?: Record<string, unknown> | null;
  /** 'silu' (the only one these models use). */
  hidden_act?: string;
  /** The head is the token embedding (default false). */
  tie_word_embeddings?: boolean;
  /** llama: biases on q, k, v and o (default false). */
  attention_bias?: boolean;
  /** llama: biases on the MLP's three projections (default false). */
  mlp_bias?: boolean;
  /** Other config.json keys, ignored. */
  [key: string]: unknown;
}

/** Options of the pretrained models' constructors and load ({@link Gpt2Constructor},
 * {@link LlamaConstructor}). */
export interface ModelOptions {
  /** The dtype of the large matrices (GPT-2: wte and the four projections of every block; Llama:
   * the embeddings, the head and the seven projections of every block); the rest (GPT-2's wpe,
   * the norms, the biases) stays f32 (default 'f32'). */
  dtype?: BaseDType;
  /** Every parameter a trainable leaf, for full fine-tuning (dtype 'f32' only; default false:
   * the base is frozen and trains through LoRA adapters). */
  trainable?: boolean;
  /** Recompute each block in backward (activation checkpointing; default false). */
  checkpointBlocks?: boolean;
}

/** GPT-2's options: {@link ModelOptions}. */
export type Gpt2Options = ModelOptions;

/** LoRA options (peft's LoraConfig names) of {@link Nn.lora}, {@link PretrainedModel.addLora} and
 * {@link PretrainedModel.loadAdapters}. */
export interface LoraOptions {
  /** r: the inner width of the update, >= 1 (default 8). */
  rank?: number;
  /** lora_alpha: the update is scaled by alpha / rank, >= 0 (default 8). */
  alpha?: number;
  /** lora_dropout on the adapter's input while training, in [0, 1) (default 0). */
  dropout?: number;
  /** The layers to adapt: a layer whose dotted name equals one of these or ends with "." and one
   * of these (GPT-2: 'c_proj' matches the attention's and the MLP's; Llama: 'q_proj', 'v_proj',
   * 'gate_proj', ...; default ['c_attn'], GPT-2's). */
  targets?: string[];
  /** Seeds A's initialisation and the dropout masks, >= 0 (default 0). */
  seed?: number;
}

/** Options of {@link LoraLinear.adapt}: {@link LoraOptions} without targets. */
export interface LoraAdaptOptions {
  /** r: the inner width of the update, >= 1 (default 8). */
  rank?: number;
  /** The update is scaled by alpha / rank, >= 0 (default 8). */
  alpha?: number;
  /** Dropout on the adapter's input when forward is given a dropoutSeed, in [0, 1) (default 0). */
  dropout?: number;
  /** Seeds A's initialisation, >= 0 (default 0). */
  seed?: number;
}

/** Options of {@link Gpt.generate} and {@link Gpt2.generate}. */
export interface GenerateOptions {
  /** Most tokens to add (default 32). */
  maxTokens?: number;
  /** Divides the logits before sampling; 0 is greedy, the most likely token (default 1). */
  temperature?: number;
  /** Sample among the k most likely tokens; 0: all (default 0). */
  topK?: number;
  /** Seeds the sampling: the same seed gives the same tokens (default 0). */
  seed?: number;
  /** Called with each token as it is drawn; returning false stops (the token is kept). What it
   * throws comes out of generate as thrown. */
  onToken?: (id: number) => boolean | void;
}

/**
 * What the pretrained models share ({@link Gpt2}, {@link Llama}; C++'s nn::Model, bound: there is
 * no JS twin): running and fine-tuning a pretrained model, with LoRA, on a frozen base held as
 * f32, f16, bf16 or q8_0. tokens{batch..., "t"} (i32/i64 ids) -> logits{batch..., "t", "vocab"}.
 * The model holds engine memory until {@link PretrainedModel.dispose}.
 */
export interface PretrainedModel {
  /** The dtype of the base's large matrices. */
  readonly dtype: BaseDType;
  /** Where the model's tensors are: 'cpu', or the device {@link PretrainedModel.to} moved them to. */
  readonly device: Device;
  /** Moves the model's tensors to device: the frozen base as stored (16-bit and q8_0 weights
   * stay so, read in place by the device's products), the adapters (or every parameter when
   * trainable) as new leaves there, so make the optimizer afterwards. Tokens then go on that
   * device too (else DeviceMismatch); to('cpu') of a device model is DeviceReadIsAsync. Returns
   * the model. */
  to(device: Device): this;
  /** Whether each block is recomputed in backward; settable. */
  checkpointBlocks: boolean;
  /** Whether dispose() was called. */
  readonly isDisposed: boolean;
  /** logits{batch..., t, vocab} of tokens{batch..., t} (1 to n_positions or
   * max_position_embeddings positions; ids below vocab_size). */
  logits(tokens: Tensor): Tensor;
  /** Mean next-token cross-entropy of tokens[.., :-1] predicting tokens[.., 1:] (a scalar). */
  loss(tokens: Tensor): Tensor;
  /** The trainable tensors: every parameter when trainable, else the LoRA adapters (A, B of each
   * adapted layer, in model order), else none. New handles, valid until disposed. */
  parameters(): Tensor[];
  /** The base's tensors by Hugging Face name ('wte.weight', 'model.layers.0.self_attn.q_proj.weight', ...), in
   * the file's order, as stored: their dtype and axes, and when trainable the leaves themselves.
   * New handles, valid until disposed. */
  namedTensors(): Record<string, Tensor>;
  /** The layers LoRA can adapt by dotted name (GPT-2: 'h.0.attn.c_attn', 'h.0.attn.c_proj',
   * 'h.0.mlp.c_fc', 'h.0.mlp.c_proj', ...; Llama: 'layers.0.self_attn.q_proj' (k, v, o) and
   * 'layers.0.mlp.gate_proj' (up, down), ...), in model order. */
  layers(): string[];
  /** The base as model.safetensors bytes in the Hugging Face layout (F32, or F16/BF16 as stored;
   * q8_0 dequantized to F32); adapters not included (mergeAdapters first to fold them in). */
  save(): Uint8Array;
  /** Samples up to maxTokens tokens after prompt (gradients off) and returns the new ones. A KV
   * cache makes each token cost one position while prompt and tokens fit in the model's
   * positions; beyond them the last that many tokens are each step's context (a full forward per
   * token). */
  generate(prompt: readonly number[] | Int32Array, options?: GenerateOptions): number[];
  /** generate for a model on any device (on webgpu, where generate's synchronous reads are
   * DeviceReadIsAsync): the same loop and KV cache, each step's last logits read with await
   * data() and the token drawn on the cpu by the same sampler, so the tokens are generate's. */
  generateAsync(prompt: readonly number[] | Int32Array, options?: GenerateOptions): Promise<number[]>;
  /** Adds LoRA adapters to the layers options.targets names and returns them (A{rank, in},
   * B{out, rank} per layer; B starts at zero). Fails if a target matches no layer or the model
   * has adapters already. The same as {@link Nn.lora}. */
  addLora(options?: LoraOptions): Tensor[];
  /** The adapters alone as safetensors bytes in PEFT's layout, with the LoRA options in the
   * metadata (exportPeft gives PEFT's adapter_config.json too). */
  saveAdapters(): Uint8Array;
  /** Loads saveAdapters' bytes, or a peft adapter_model.safetensors with its options (rank,
   * alpha, targets); adds the adapters first when the model has none. */
  loadAdapters(bytes: Uint8Array, options?: LoraOptions): void;
  /** Folds every adapter into its weight (which becomes f32); the adapters are gone. */
  mergeAdapters(): void;
  /** Frees the model (tensors from parameters() stay valid until they are disposed). */
  dispose(): void;
}

/** GPT-2 in the Hugging Face layout (C++'s nn::Gpt2). */
export interface Gpt2 extends PretrainedModel {
  /** Its config.json fields (a fresh object each time). */
  readonly config: Gpt2Config;
}

/** A Llama-family model in the Hugging Face layout (C++'s nn::Llama): LlamaForCausalLM and
 * Qwen2ForCausalLM checkpoints (SmolLM2, Qwen2.5, Llama 3.2, ...), RMSNorm, rotary positions,
 * grouped-query attention, a SiLU-gated MLP. */
export interface Llama extends PretrainedModel {
  /** Its config.json fields (a fresh object each time). */
  readonly config: LlamaConfig;
}

/** The constructor fc.nn.Llama. */
export interface LlamaConstructor {
  /** A model with Hugging Face's initialisation (weights N(0, 0.02), biases zero, norms ones)
   * from seed (default 0), stored as options say. */
  new (config: LlamaConfig, seed?: number, options?: ModelOptions): Llama;
  /** Loads model.safetensors bytes (F32, F16 or BF16; an array for a sharded checkpoint) with
   * their config.json, tensor by tensor: the wasm heap holds the model plus one tensor. Every
   * tensor is checked against the config. */
  load(bytes: Uint8Array | readonly Uint8Array[], config: LlamaConfig, options?: ModelOptions): Llama;
  /** The same from Blobs or Files (a file picker's): only the header and one tensor at a time are
   * read, so the file is never whole in memory. */
  loadAsync(blobs: Blob | readonly Blob[], config: LlamaConfig, options?: ModelOptions): Promise<Llama>;
}

/** PEFT's adapter_config.json (parsed): the fields fucina writes and reads. */
export interface PeftConfig {
  /** 'LORA': the only kind fucina reads. */
  peft_type: 'LORA' | string;
  /** 'CAUSAL_LM' in the files fucina writes. */
  task_type?: string;
  /** The adapters' rank. */
  r: number;
  /** The update is scaled by lora_alpha / r (PEFT's default 8). */
  lora_alpha?: number;
  /** Dropout on the adapters' input while training (default 0). */
  lora_dropout?: number;
  /** Module names (the whole name or its last dotted parts), a regular expression over PEFT's
   * module names, or 'all-linear'. */
  target_modules: string[] | string;
  /** 'none': fucina's adapters train no biases. */
  bias?: string;
  /** true for GPT-2's Conv1D layers (their weights are stored [in, out]). */
  fan_in_fan_out?: boolean;
  /** PEFT's other keys: those fucina cannot honour (use_dora, use_rslora, rank_pattern, ...) are refused. */
  [key: string]: unknown;
}

/** A model's adapters as PEFT's two files. */
export interface PeftAdapter {
  /** adapter_model.safetensors. */
  safetensors: Uint8Array;
  /** adapter_config.json, parsed (JSON.stringify writes the file). */
  config: PeftConfig;
}

/** The constructor fc.nn.Gpt2. */
export interface Gpt2Constructor {
  /** A model with Hugging Face's initialisation (weights N(0, 0.02), biases zero) from seed
   * (default 0), stored as options say. */
  new (config: Gpt2Config, seed?: number, options?: Gpt2Options): Gpt2;
  /** Loads model.safetensors bytes (F32, F16 or BF16; an optional "transformer." prefix) with
   * their config.json; every tensor is checked against the config. */
  load(bytes: Uint8Array, config: Gpt2Config, options?: Gpt2Options): Gpt2;
}

/**
 * A frozen linear map with an optional LoRA adapter (C++'s nn::LoraLinear):
 * y{..., out} = x{..., in} · W (+ bias{out}) + scale · (drop(x) · Aᵀ) · Bᵀ, W frozen in any of
 * f32/f16/bf16/q8_0, A{rank, in} and B{out, rank} trainable f32 leaves. Its tensors are made in
 * the open scope, like a layer's parameters.
 */
export interface LoraLinear extends Module {
  /** The input axis, contracted. */
  readonly in: string;
  /** The output axis. */
  readonly out: string;
  /** The frozen weight {in, out} or {out, in} (a constant: a leaf given is detached). */
  readonly weight: Tensor;
  /** The bias {out}, or null. */
  readonly bias: Tensor | null;
  /** A{rank, in}, or null before adapt. */
  readonly a: Tensor | null;
  /** B{out, rank}, or null before adapt. */
  readonly b: Tensor | null;
  /** alpha / rank (0 before adapt). */
  readonly scale: number;
  /** Whether dispose() was called. */
  readonly isDisposed: boolean;
  /** Adds (or replaces) the adapter: A ~ U(±1/sqrt(in)) from seed, B zero, so the output is
   * unchanged until B trains. */
  adapt(options?: LoraAdaptOptions): void;
  /** x{..., in} -> {..., out}. With a dropoutSeed (training), the adapter's input goes through
   * dropout with the mask that seed chooses; without one (evaluation), x is read as it is. */
  forward(x: Tensor, dropoutSeed?: number): Tensor;
  /** W + scale · (B · A) as a new f32 constant with W's axes (W itself when not adapted). */
  merge(): Tensor;
  /** Frees the layer and the tensors it holds (weight, bias, a, b). */
  dispose(): void;
}

/** The constructor fc.nn.LoraLinear. */
export interface LoraLinearConstructor {
  /** The frozen layer weight{inAxis, outAxis} (either order) with an optional bias{outAxis}. */
  new (weight: Tensor, bias: Tensor | null, inAxis: string, outAxis: string): LoraLinear;
}

/** fc.nn: the twins of C++'s fucina::nn (the same seed gives the same parameters in both), and
 * the pretrained models (GPT-2, Llama) and LoRA bound from C++. */
export interface Nn {
  /** A fully connected layer ({@link Linear}). */
  readonly Linear: LinearConstructor;
  /** A convolution layer ({@link Conv2d}). */
  readonly Conv2d: Conv2dConstructor;
  /** A layer normalisation ({@link LayerNorm}). */
  readonly LayerNorm: LayerNormConstructor;
  /** An embedding table ({@link Embedding}). */
  readonly Embedding: EmbeddingConstructor;
  /** The W1 benchmark model ({@link Mlp}). */
  readonly Mlp: MlpConstructor;
  /** The W2 benchmark model ({@link Cnn}). */
  readonly Cnn: CnnConstructor;
  /** The W3 benchmark model ({@link Gpt}). */
  readonly Gpt: GptConstructor;
  /** GPT-2 in the Hugging Face layout, for LoRA fine-tuning ({@link Gpt2}). */
  readonly Gpt2: Gpt2Constructor;
  /** Llama-family models (llama, qwen2) in the Hugging Face layout ({@link Llama}). */
  readonly Llama: LlamaConstructor;
  /** A frozen linear layer with an optional LoRA adapter ({@link LoraLinear}). */
  readonly LoraLinear: LoraLinearConstructor;
  /** Adds LoRA adapters to model (model.addLora) and returns them, A and B per layer. */
  lora(model: PretrainedModel, options?: LoraOptions): Tensor[];
  /** The model's adapters as PEFT's files (adapter_model.safetensors, adapter_config.json), for
   * PyTorch's peft (PeftModel.from_pretrained on the same base). */
  exportPeft(model: PretrainedModel): PeftAdapter;
  /** exportPeft for a model on any device (on webgpu, where exportPeft's synchronous reads are
   * DeviceReadIsAsync): the adapters are read back with await data(), then written as PEFT's
   * files. */
  exportPeftAsync(model: PretrainedModel): Promise<PeftAdapter>;
  /** Reads PEFT's files into model (which gets the adapters when it has none): adapter_config.json
   * parsed. What fucina's LoRA does not do (DoRA, rsLoRA, rank_pattern, biases, ...) is refused. */
  loadPeft(model: PretrainedModel, bytes: Uint8Array, config: PeftConfig): void;
  /** The per-parameter seed of C++'s nn::subSeed (both non-negative integers; below 2^53). */
  subSeed(seed: number, index: number): number;
  /** params (a model's parameters(), in order) as safetensors bytes named "param.0", "param.1", ... */
  saveParameters(params: readonly Tensor[], metadata?: Record<string, string>): Uint8Array;
  /** Reads saveParameters' bytes (or a file of C++'s nn::saveParameters) into params, in place. */
  loadParameters(params: readonly Tensor[], bytes: Uint8Array): void;
}

// ---------------------------------------------------------------- the engine

/** A loaded engine, from {@link init}: makes tensors and holds the modes, scopes and memory. */
export interface Fucina {
  /** The WebAssembly build in use. */
  readonly variant: Variant;
  /** Threads the engine computes with (1 for simd, and on the reference backend). */
  readonly threads: number;
  /** The kernels it computes with ({@link InitOptions.backend}). */
  readonly backend: Backend;
  /** Where creation functions put new tensors: 'cpu', or 'webgpu' (the default after
   * `init({ device: 'webgpu' })`); ops compute where their operands are. */
  defaultDevice: Device;
  /** Resolves when the device has run all the work submitted so far. */
  sync(): Promise<void>;
  /** Optimizers and schedules. */
  readonly optim: Optim;
  /** Layers and models. */
  readonly nn: Nn;
  /** The Tensor class (for instanceof; tensors come from this engine's methods). */
  readonly Tensor: typeof Tensor;
  /** The FucinaError class (for instanceof). */
  readonly FucinaError: typeof FucinaError;

  /** A trainable leaf with these axes, extents and values (row-major), stored as dtype (default
   * f32). An f16/bf16 leaf's gradient is always f32; it is differentiable through `to()` and as
   * the right operand of dot, einsum, addDot and matmul (other ops refuse it with
   * UnsupportedGradient). */
  variable(tags: readonly string[], shape: readonly number[], values: Values, dtype?: 'f32' | 'f16' | 'bf16'): Tensor;
  /** A trainable leaf holding a copy of value, in value's dtype (f32, f16 or bf16). */
  variable(value: Tensor): Tensor;
  /** A constant with these axes, extents and values (row-major), stored as dtype (default f32). */
  constant(tags: readonly string[], shape: readonly number[], values: Values, dtype?: DType): Tensor;
  /** A constant of zeros. */
  zeros(tags: readonly string[], shape: readonly number[], dtype?: DType): Tensor;
  /** A constant of ones. */
  ones(tags: readonly string[], shape: readonly number[], dtype?: DType): Tensor;
  /** A constant filled with value. */
  full(tags: readonly string[], shape: readonly number[], value: number, dtype?: DType): Tensor;
  /** A constant without axes holding value. */
  scalar(value: number, dtype?: DType): Tensor;
  /** Seeded U[lo, hi) f32 constants: element i is a pure function of (seed, i), equal to C++'s
   * Tensor::uniform. */
  uniform(tags: readonly string[], shape: readonly number[], lo: number, hi: number, seed: number): Tensor;
  /** Seeded N(mean, std²) f32 constants, equal to C++'s Tensor::normal. */
  normal(tags: readonly string[], shape: readonly number[], mean: number, std: number, seed: number): Tensor;
  /** Encodes named tensors in the safetensors format; axis names travel in the metadata. */
  encodeSafetensors(tensors: Record<string, Tensor>, metadata?: Record<string, string>): Uint8Array;
  /** Decodes safetensors bytes (from fucina, torch, ...); axes without names are d0, d1, ... */
  decodeSafetensors(bytes: Uint8Array): SafetensorsContents;
  /** w (f32, f16, bf16 or q8_0) packed once for products contracting `axis` (inference-only:
   * a w that requires grad fails with GradientPackedMatmulUnsupported outside noGrad; detach it or pack under fc.noGrad). */
  packRhs(w: Tensor, axis: string): PackedRhs;
  // BEGIN ops.table engine (generated by web/gen-ops.mjs from web/ops.table.mjs: edit the table, not this block)
  /** Joins tensors with the same axes along axis (in the first tensor's axis order). */
  concat(tensors: readonly Tensor[], axis: string): Tensor;
  /** Adds axis (first) to each tensor and joins along it. */
  stack(tensors: readonly Tensor[], axis: string): Tensor;
  /** A u8 {row: rows, col: cols} mask: 1 where row − col <= lower and col − row <= upper (−1
   * leaves a side unbounded; lower −1, upper 0 is causal). */
  bandMask(row: string, col: string, rows: number, cols: number, lower: number, upper: number): Tensor;
  /** einsum of any number of operands, composed of binary einsums in a cost-chosen order (the
   * pair with the smallest intermediate first); the result has exactly outTags. */
  einsumMany(operands: readonly Tensor[], outTags: readonly string[]): Tensor;
  /** Named-axis einsum: axes shared by a and b are batch axes if outTags keeps them, else
   * contracted; axes only one has are kept if in outTags, else summed away. Result axes are
   * exactly outTags, in order. */
  einsum(a: Tensor, b: Tensor, outTags: readonly string[]): Tensor;
  /** a where cond (u8, or f32 nonzero) else b, axes aligned by name; gradients to a and b. */
  where(cond: Tensor, a: Tensor, b: Tensor): Tensor;
  /** softmax(scale·q·kᵀ [+ causal mask])·v per head. q {batch..., heads: H, time: Tq, dim: D}, k
   * {batch..., heads: Hkv, time: Tk, dim: D}, v {batch..., heads: Hkv, time: Tk, dim: Dv}; H a
   * multiple of Hkv (query head h reads kv head h / (H / Hkv)). Result {batch... (q's order),
   * heads, time, dim: Dv}. */
  groupedAttention(q: Tensor, k: Tensor, v: Tensor, options?: AttentionOptions): Tensor;
  // END ops.table engine
  /** Transforms a conv2d weight {outChannels, channels, kernelH, kernelW} (and options.bias) once
   * for {@link Tensor.conv2dPrepared} and {@link Tensor.conv2dPreparedRelu} (inference only: a
   * weight or bias that requires grad, outside noGrad, is GradientPreparedConv2dUnsupported). */
  prepareConv2dWeights(weight: Tensor, options?: Conv2dOptions): PreparedConv2d;
  /** Runs fn with gradient recording off (ops make constants) and returns its result. */
  noGrad<T>(fn: () => T): T;
  /** Whether ops record gradients now (false inside noGrad). */
  isGradEnabled(): boolean;
  /** Runs fn and disposes every tensor made inside except those it returns (a tensor, or an
   * array or plain object of them), which move to the enclosing scope. */
  scope<T>(fn: () => T): T;
  /** The engine's memory counters. */
  memory(): MemoryInfo;
  /** Starts peakBytes again from liveBytes. */
  resetPeak(): void;
  /** Gives the buffers kept for reuse back to the heap (the WebAssembly memory never shrinks). */
  trimCache(): void;
  /** block(...inputs) with activation checkpointing: it runs grad-free now and again during
   * backward, so its intermediates are not kept. */
  checkpoint<A extends Tensor[]>(block: (...inputs: A) => Tensor, inputs: [...A]): Tensor;
  /** block(...inputs, extra) with activation checkpointing; extra is passed through as is. */
  checkpoint<A extends Tensor[], E>(block: (...args: [...A, E]) => Tensor, inputs: [...A], extra: E): Tensor;
  /** tail(): the last ops of a checkpointed block (a residual block's last product and sum). When
   * backward re-runs the block, contractions and elementwise ops in the tail record their
   * gradients but compute a value only when something reads it, so values no gradient needs are
   * never computed; the gradients are the same to the bit. Anywhere else it is tail(). */
  checkpointTail(tail: () => Tensor): Tensor;
  /** A differentiable op from a JS forward and backward ({@link CustomVjpSpec}) over inputs. */
  customVjp<A extends Tensor[]>(spec: CustomVjpSpec<A, undefined>, inputs: [...A]): Tensor;
  /** A differentiable op from a JS forward and backward, both given extra. */
  customVjp<A extends Tensor[], E>(spec: CustomVjpSpec<A, E>, inputs: [...A], extra: E): Tensor;
  /** Compares backward's gradients of lossFn(...inputs) (a scalar) with central differences for
   * every variable input; throws GradientMismatch naming the first bad element. */
  gradcheck<A extends Tensor[]>(lossFn: (...inputs: A) => Tensor, inputs: [...A], options?: GradcheckOptions): GradcheckResult;
}

/** Whether this engine compiles relaxed SIMD (`WebAssembly.validate` of a module with
 * f32x4.relaxed_madd), i.e. whether init() may load the relaxed-simd variant. */
export function relaxedSimdSupported(): boolean;

/** Loads the engine (the best wasm variant unless options.variant says which). */
export function init(options?: InitOptions): Promise<Fucina>;

// ---------------------------------------------------------------- datasets (web/data.mjs)

/** An IDX file's contents: its dimensions and unsigned-byte values. */
export interface IdxArray {
  /** The dimensions, outermost first. */
  dims: number[];
  /** The values, row-major. */
  values: Uint8Array;
}

/** A Fashion-MNIST split as plain arrays. */
export interface DatasetSplit {
  /** Pixels in [0, 1], row-major sample × h × w. */
  images: Float32Array;
  /** The class of each sample, 0 to 9. */
  labels: Int32Array;
  /** Samples. */
  count: number;
  /** Image height. */
  h: number;
  /** Image width. */
  w: number;
}

/** Options of {@link loadFashionMnist}. */
export interface FashionMnistOptions {
  /** A folder (Node) or URL prefix holding the four .gz files (default
   * /usr/share/datasets/fashion-mnist). */
  base?: string;
  /** The training split (default) or, when false, the test split. */
  train?: boolean;
}

/** A batch from {@link makeBatch}. */
export interface Batch {
  /** The images {batch, h, w}, f32. */
  images: Tensor;
  /** The labels {batch}, i32. */
  labels: Tensor;
}

/** Parses uncompressed IDX bytes (unsigned-byte data). */
export function parseIdx(bytes: Uint8Array): IdxArray;
/** Reads an IDX file: a path in Node or a URL in browsers; gzip is detected and decompressed. */
export function readIdx(source: string | URL): Promise<IdxArray>;
/** The same permutation of [0, n) as C++'s fucina::data::shuffledIndices for the same seed; n at
 * most 2^24. */
export function shuffledIndices(n: number, seed: number | bigint): Int32Array;
/** Loads Fashion-MNIST's train or test split. */
export function loadFashionMnist(options?: FashionMnistOptions): Promise<DatasetSplit>;
/** Samples order[begin, begin + size) of split as tensors on fc. */
export function makeBatch(fc: Fucina, split: DatasetSplit, order: Values, begin: number, size: number): Batch;
