// Types of the fucina JavaScript facade (web/index.mjs). Ops mirror the C++ Tensor methods.

export type DType = 'f32' | 'f16' | 'bf16' | 'f64' | 'i32' | 'i64' | 'u8';
export type Variant = 'threaded-simd' | 'simd';
export type Reduction = 'mean' | 'sum' | 'none';

/** Every failure the engine reports; `code` is the C++ ErrorCode name (e.g. "ShapeMismatch"), or
 * "TensorReleased" for a disposed tensor. Options objects with unknown keys, non-integer or
 * out-of-range integer arguments and tensors of another init() are InvalidArgument. */
export class FucinaError extends Error {
  readonly name: 'FucinaError';
  readonly code: string;
}

export interface InitOptions {
  /** Threads for the threaded-simd variant (default: the machine's cores, at most 8). */
  threads?: number;
  /** "auto" (default) picks threaded-simd where SharedArrayBuffer is usable (Node, or a
   * cross-origin isolated page), else simd. */
  variant?: 'auto' | Variant;
}

export interface MemoryInfo {
  liveTensors: number;
  liveBytes: number;
  peakBytes: number;
  /** Buffers handed out so far: systemAllocations + cacheHits. */
  allocations: number;
  /** Buffers that had to be allocated from the heap; flat once training reaches steady state. */
  systemAllocations: number;
  /** Buffers served from the cache of freed buffers. */
  cacheHits: number;
  /** Bytes of freed buffers held for reuse (fc.trimCache() releases them). */
  cachedBytes: number;
  /** Size of the WebAssembly memory (it grows, never shrinks). */
  heapBytes: number;
}

export interface GradcheckOptions {
  eps?: number;
  absTol?: number;
  relTol?: number;
}

export interface GradcheckResult {
  checked: number;
  maxAbsError: number;
  maxRelError: number;
}

export interface CustomVjpSpec<E = unknown> {
  name?: string;
  /** Runs on no-grad constants; returns the output. */
  forward(inputs: Tensor[], extra: E): Tensor;
  /** Returns one gradient per input (null where needsGrad[i] is false), shaped like the input. */
  backward(inputs: Tensor[], output: Tensor, gy: Tensor, needsGrad: boolean[], extra: E): (Tensor | null)[];
}

export class Tensor {
  readonly tags: string[];
  readonly shape: number[];
  readonly dtype: DType;
  readonly requiresGrad: boolean;
  readonly isDisposed: boolean;

  backward(gradOutput?: Tensor): void;
  /** A copy of the accumulated gradient, or null. */
  grad(): Tensor | null;
  zeroGrad(): void;
  detach(): Tensor;
  /** A copy of the values, converted to f32, in row-major order of `tags`. */
  toArray(): Float32Array;
  item(): number;
  to(dtype: DType): Tensor;
  /** Frees this handle now (the engine keeps what a recorded graph still needs). */
  dispose(): void;

  add(y: Tensor): Tensor;
  sub(y: Tensor): Tensor;
  mul(y: Tensor): Tensor;
  div(y: Tensor): Tensor;
  maximum(y: Tensor): Tensor;
  minimum(y: Tensor): Tensor;
  pow(exponent: Tensor): Tensor;
  scale(factor: number): Tensor;
  addScalar(value: number): Tensor;
  subScalar(value: number): Tensor;
  divScalar(value: number): Tensor;
  powScalar(exponent: number): Tensor;
  neg(): Tensor;
  abs(): Tensor;
  exp(): Tensor;
  log(): Tensor;
  sqrt(): Tensor;
  tanh(): Tensor;
  sigmoid(): Tensor;
  relu(): Tensor;
  /** slope·x for x <= 0 (default 0.01). */
  leakyRelu(slope?: number): Tensor;
  /** tanh approximation, as torch's approximate='tanh'. */
  gelu(): Tensor;
  /** exact x·Φ(x). */
  geluErf(): Tensor;
  /** x·sigmoid(1.702x). */
  quickGelu(): Tensor;
  silu(): Tensor;
  /** alpha·(exp(x) − 1) for x <= 0 (default alpha 1). */
  elu(alpha?: number): Tensor;
  log1p(): Tensor;
  rsqrt(): Tensor;
  reciprocal(): Tensor;
  sin(): Tensor;
  cos(): Tensor;
  /** Gradient passes where lo <= x <= hi; lo > hi throws InvalidArgument. */
  clamp(lo: number, hi: number): Tensor;
  sumAll(): Tensor;
  meanAll(): Tensor;
  sum(axis: string): Tensor;
  mean(axis: string): Tensor;
  layerNorm(axis: string, options?: { eps?: number; weight?: Tensor; bias?: Tensor }): Tensor;
  rmsNorm(axis: string, eps?: number): Tensor;
  rmsNormMul(axis: string, weight: Tensor, eps?: number): Tensor;
  l2Normalize(axis: string, eps?: number): Tensor;
  softmax(axis: string): Tensor;
  logSoftmax(axis: string): Tensor;
  /** Softmax cross-entropy against integer labels (an i32/i64 tensor with the logits' axes
   * without classAxis); the logits' gradient is fused (softmax - target). */
  crossEntropy(labels: Tensor, classAxis: string, options?: Reduction | { reduction?: Reduction; labelSmoothing?: number }): Tensor;
  nllLoss(labels: Tensor, classAxis: string, options?: Reduction | { reduction?: Reduction }): Tensor;
  mseLoss(target: Tensor, options?: Reduction | { reduction?: Reduction }): Tensor;
  // ---- indexing, pointwise losses, gated units ----
  /** torch.gather: indices (i32/i64) have exactly this tensor's axes, extents <= this's except
   * along `axis`; the result has the indices' extents in this tensor's axis order. */
  gather(axis: string, indices: Tensor): Tensor;
  /** numpy.take_along_axis by name: indices have `axis`; their other axes match this tensor's
   * extents or have extent 1, and missing axes broadcast. */
  takeAlongAxis(axis: string, indices: Tensor): Tensor;
  /** torch.scatter_add, out of place: src (shaped as indices) added at the indices along `axis`. */
  scatterAdd(axis: string, indices: Tensor, src: Tensor): Tensor;
  /** torch.nn.HuberLoss; options may also be just the reduction. */
  huberLoss(target: Tensor, options?: Reduction | { delta?: number; reduction?: Reduction }): Tensor;
  /** torch.nn.BCELoss of probabilities in [0, 1]; each log clamped at >= -100. */
  bceLoss(target: Tensor, options?: Reduction | { reduction?: Reduction }): Tensor;
  /** torch.nn.BCEWithLogitsLoss, stable form. */
  bceWithLogitsLoss(target: Tensor, options?: Reduction | { reduction?: Reduction }): Tensor;
  /** torch kl_div: this tensor is log-probabilities; 'mean' is elementwise (batchmean = sum / batch). */
  klDivLoss(target: Tensor, options?: Reduction | { reduction?: Reduction; logTarget?: boolean }): Tensor;
  /** silu(gate) * up, `axis` split into halves [gate | up] (an even extent) and halved. */
  swiglu(axis: string): Tensor;
  /** geluErf(gate) * up, as swiglu. */
  geglu(axis: string): Tensor;
  // ---- end indexing, pointwise losses, gated units ----
  /** torch.var: divides by n − correction (default 1); the axis is dropped. */
  variance(axis: string, correction?: number): Tensor;
  /** Gradient flows to the first maximum only; the axis is dropped. */
  max(axis: string): Tensor;
  /** Gradient flows to the first minimum only; the axis is dropped. */
  min(axis: string): Tensor;
  logsumexp(axis: string): Tensor;
  /** Inclusive cumulative sum; keeps the axis. */
  cumsum(axis: string): Tensor;
  prod(axis: string): Tensor;
  /** 2-norm over the axis; gradient 0 where the norm is 0. */
  norm(axis: string): Tensor;
  /** Contracts the shared axis; other shared axes are batch axes. */
  dot(y: Tensor, axis: string): Tensor;
  /** this.dot(y, axis) + bias in one GEMM (torch's addmm / Linear): bias's axes are a subset of
   * the result's, broadcast by tag; all three operands get gradients. */
  addDot(y: Tensor, axis: string, bias: Tensor): Tensor;
  /** Positional matrix product (torch.matmul, rank >= 2): this's last axis contracts with y's
   * second-to-last (its last when transposeY), whatever their names; the leading axes are batch
   * axes matched by tag. Result: [...batch, m, n] with this's m tag and y's n tag. */
  matmul(y: Tensor, transposeY?: boolean): Tensor;
  /** Swaps the names of axes a and b (extents travel with the data); a view. */
  transpose(a: string, b: string): Tensor;
  broadcastTo(tags: string[], shape: number[]): Tensor;
  permuteTo(order: string[]): Tensor;
  withTags(tags: string[]): Tensor;
  narrow(axis: string, start: number, length: number): Tensor;
  /** Embedding lookup: `axis` is replaced, in place, by the axes of the i32/i64 indices. */
  indexSelect(axis: string, indices: Tensor): Tensor;
  contiguous(): Tensor;
  /** A new axis of extent 1 at position (0..rank). */
  insertAxis(axis: string, position: number): Tensor;
  /** Removes an axis of extent 1 (InvalidArgument otherwise). */
  squeeze(axis: string): Tensor;
  /** Fuses axes into one, row-major over the listed order, where the first of them was. */
  merge(axes: string[], into: string): Tensor;
  /** Inverse of merge: axis becomes `into` (row-major; the extents multiply to its extent). */
  split(axis: string, into: string[], extents: number[]): Tensor;
  /** Every axis into one, row-major over the current axis order. */
  flatten(into: string): Tensor;
  /** Row-major over the current axis order; same element count. */
  reshape(tags: string[], shape: number[]): Tensor;
  /** The slice at index (negative counts from the end); drops the axis. */
  select(axis: string, index: number): Tensor;
  /** Elements start, start+step, ... below end (0 <= start <= end <= extent, step >= 1). */
  slice(axis: string, start: number, end: number, step?: number): Tensor;
  /** `before` and `after` elements of `value` (default 0) on each side of axis. */
  pad(axis: string, before: number, after: number, value?: number): Tensor;
  /** value where mask (u8 or f32, axes a subset of this tensor's) is nonzero; gradient 0 there. */
  maskedFill(mask: Tensor, value: number): Tensor;
  /** Keeps col - row <= diagonal (default 0), zeroes the rest. */
  tril(row: string, col: string, diagonal?: number): Tensor;
  /** Keeps col - row >= diagonal (default 0), zeroes the rest. */
  triu(row: string, col: string, diagonal?: number): Tensor;
  /** Keeps row - col <= lower and col - row <= upper; -1 is unbounded (as TF). */
  bandPart(row: string, col: string, lower: number, upper: number): Tensor;
  /** Mask is a pure function of (seed, element index): the same in every build and recompute. */
  dropout(p: number, seed: number): Tensor;
  /** 2-D cross-correlation (torch's conv2d) via im2col + GEMM. The input has axes c, h, w plus
   * any batch axes, in any order; the weight has exactly out, c (= input c / groups), kh, kw.
   * The result keeps the input's axis order with c replaced by out. */
  conv2d(weight: Tensor, options?: Conv2dOptions): Tensor;
  /** -inf padding; the gradient goes to each window's first maximum. stride defaults to kernel. */
  maxPool2d(kernel: number | [number, number], options?: Pool2dOptions): Tensor;
  /** Zero padding counted in the divisor (torch's count_include_pad=True). */
  avgPool2d(kernel: number | [number, number], options?: Pool2dOptions): Tensor;
  /** Repeats each element in a 2x2 block; the gradient sums each block. */
  upsample2xNearest(height?: string, width?: string): Tensor;
  /** Rotary position embedding along options.position and options.dim (even extent D); other
   * axes are batch axes. The table form reads constant cos/sin tables {position, dim: D/2}
   * (one angle per pair), rows offset .. offset+T-1; tables take no gradient. */
  rope(options?: RopeOptions): Tensor;
  rope(cos: Tensor, sin: Tensor, options?: RopeOptions): Tensor;
}

export interface RopeOptions {
  /** default 't' */ position?: string;
  /** default 'd' */ dim?: string;
  /** theta_i = base^(-2i/D); default 10000 */ base?: number;
  /** position of the first element; default 0 */ offset?: number;
  /** 'half' pairs (i, i + D/2) (GPT-NeoX, HF llama, default); 'interleaved' pairs (2i, 2i+1). */
  mode?: 'half' | 'interleaved';
}

export interface AttentionOptions {
  /** default 'head' */ heads?: string;
  /** default 't' */ time?: string;
  /** default 'd' */ dim?: string;
  /** End-aligned: query i sees keys j <= i + Tk - Tq. Default true. */ causal?: boolean;
  /** default 1/sqrt(D) */ scale?: number;
}

export interface Conv2dOptions {
  /** A tensor with the single axis out (its gradient is the sum of the output's). */
  bias?: Tensor;
  stride?: number | [number, number];
  padding?: number | [number, number];
  dilation?: number | [number, number];
  groups?: number;
  /** Axis names; defaults c, h, w, out, kh, kw. */
  axes?: { channels?: string; height?: string; width?: string; outChannels?: string; kernelH?: string; kernelW?: string };
}

export interface Pool2dOptions {
  stride?: number | [number, number];
  /** Same padding on both axes, at most half the kernel. */
  padding?: number;
  height?: string;
  width?: string;
}

export interface SgdOptions {
  /** default 1e-3 */ lr?: number;
  momentum?: number;
  dampening?: number;
  /** needs momentum > 0 and dampening 0 */ nesterov?: boolean;
  /** L2 penalty added to the gradient */ weightDecay?: number;
}

export interface AdamOptions {
  /** default 1e-3 */ lr?: number;
  /** default [0.9, 0.999], each in [0, 1) */ betas?: [number, number];
  /** default 1e-8 */ eps?: number;
  /** Adam: L2 added to the gradient (default 0); AdamW: decoupled decay (default 0.01) */
  weightDecay?: number;
}

/** Updates parameters in place, without building graph nodes (semantics of torch.optim). */
export class Optimizer {
  private constructor();
  /** One update of every parameter that has a gradient; others are skipped. */
  step(): void;
  zeroGrad(): void;
  lr: number;
  readonly params: Tensor[];
  readonly isDisposed: boolean;
  dispose(): void;
}

export interface Optim {
  sgd(params: Tensor[], options?: SgdOptions): Optimizer;
  adam(params: Tensor[], options?: AdamOptions): Optimizer;
  adamw(params: Tensor[], options?: AdamOptions): Optimizer;
  /** Global 2-norm of the gradients; scales them by maxNorm / (norm + 1e-6) when norm > maxNorm.
   * Returns the norm before clipping. */
  clipGradNorm(params: Tensor[], maxNorm: number): number;
  /** baseLr * step / warmupSteps before warmupSteps, then baseLr. */
  linearWarmup(step: number, warmupSteps: number, baseLr: number): number;
  /** minLr + (baseLr - minLr) * (1 + cos(pi * min(step, totalSteps) / totalSteps)) / 2. */
  cosineDecay(step: number, totalSteps: number, baseLr: number, minLr?: number): number;
  /** Linear warm-up, then cosine decay over the remaining totalSteps - warmupSteps steps. */
  warmupCosine(baseLr: number, warmupSteps: number, totalSteps: number, minLr?: number): (step: number) => number;
}

/** A layer or model: forward() applies it, parameters() lists its trainable leaves. */
export interface Module {
  forward(x: Tensor): Tensor;
  parameters(): Tensor[];
}

export interface MlpConfig { /** input, hidden..., classes; default [784, 512, 256, 10] */ sizes?: number[] }
export interface CnnConfig { image?: number; channels?: number; conv1?: number; conv2?: number; hidden?: number; classes?: number }
export interface GptConfig {
  vocab?: number; context?: number; dModel?: number; heads?: number; layers?: number; mlp?: number;
  /** recompute each block in backward (activation checkpointing); default false */
  checkpointBlocks?: boolean;
}

/** fc.nn: the twins of C++'s fucina::nn; the same seed gives the same parameters in both. */
export interface Nn {
  /** x{..., in} · weight{out, in} + bias{out}, U(±1/sqrt(in)) as torch. */
  Linear: new (inAxis: string, outAxis: string, inFeatures: number, outFeatures: number, seed: number,
    options?: { bias?: boolean }) => Module & { weight: Tensor; bias: Tensor | null };
  Conv2d: new (inAxis: string, outAxis: string, inChannels: number, outChannels: number, kernel: number,
    seed: number, options?: Conv2dOptions) => Module & { weight: Tensor; bias: Tensor };
  LayerNorm: new (axis: string, features: number, eps?: number) => Module & { weight: Tensor; bias: Tensor };
  Embedding: new (rows: string, dim: string, count: number, features: number, std: number, seed: number) =>
    Module & { table: Tensor };
  /** W1 of BENCHMARKS.md: x{batch, "in"} -> logits{batch, "class"}. */
  Mlp: new (config?: MlpConfig, seed?: number) => Module;
  /** W2: images{batch, "c"?, "h", "w"} -> logits{batch, "class"}. */
  Cnn: new (config?: CnnConfig, seed?: number) => Module & { readonly flatFeatures: number };
  /** W3: tokens{batch, "t"} (i32) -> logits{batch, "t", "vocab"}; loss() is next-token cross-entropy. */
  Gpt: new (config?: GptConfig, seed?: number) => Module & { loss(tokens: Tensor): Tensor; readonly config: Required<GptConfig> };
  subSeed(seed: number, index: number): number;
  /** params (a model's parameters(), in order) as safetensors bytes named "param.0", "param.1", ... */
  saveParameters(params: Tensor[], metadata?: Record<string, string>): Uint8Array;
  /** Reads saveParameters' bytes (or a file of C++'s nn::saveParameters) into params, in place. */
  loadParameters(params: Tensor[], bytes: Uint8Array): void;
}

export interface Fucina {
  readonly variant: Variant;
  readonly threads: number;
  readonly optim: Optim;
  readonly nn: Nn;
  variable(tags: string[], shape: number[], values: ArrayLike<number>): Tensor;
  /** A trainable leaf holding a copy of value. */
  variable(value: Tensor): Tensor;
  constant(tags: string[], shape: number[], values: ArrayLike<number>, dtype?: DType): Tensor;
  zeros(tags: string[], shape: number[], dtype?: DType): Tensor;
  ones(tags: string[], shape: number[], dtype?: DType): Tensor;
  full(tags: string[], shape: number[], value: number, dtype?: DType): Tensor;
  scalar(value: number, dtype?: DType): Tensor;
  /** Encodes named tensors in the safetensors format; axis names travel in the metadata. */
  encodeSafetensors(tensors: Record<string, Tensor>, metadata?: Record<string, string>): Uint8Array;
  /** Decodes safetensors bytes (from fucina, torch, ...); axes without names are d0, d1, ... */
  decodeSafetensors(bytes: Uint8Array): { tensors: Record<string, Tensor>; metadata: Record<string, string> };
  /** Seeded constants: element i is a pure function of (seed, i), equal to C++'s Tensor::uniform. */
  uniform(tags: string[], shape: number[], lo: number, hi: number, seed: number): Tensor;
  /** Seeded N(mean, std^2) constants, equal to C++'s Tensor::normal. */
  normal(tags: string[], shape: number[], mean: number, std: number, seed: number): Tensor;
  /** Joins tensors with the same axes along axis (in the first tensor's axis order). */
  concat(tensors: Tensor[], axis: string): Tensor;
  /** Adds axis (first) to each tensor and joins along it. */
  stack(tensors: Tensor[], axis: string): Tensor;
  /** Named-axis einsum: axes shared by a and b are batch axes if outTags keeps them, else
   * contracted; axes only one has are kept if in outTags, else summed away. Result axes are
   * exactly outTags, in order. */
  einsum(a: Tensor, b: Tensor, outTags: string[]): Tensor;
  /** a where cond (u8, or f32 nonzero) else b, axes aligned by tag; gradients to a and b. */
  where(cond: Tensor, a: Tensor, b: Tensor): Tensor;
  /** softmax(scale·q·kᵀ [+ causal mask])·v per head. q {batch..., heads: H, time: Tq, dim: D},
   * k {batch..., heads: Hkv, time: Tk, dim: D}, v {batch..., heads: Hkv, time: Tk, dim: Dv};
   * H a multiple of Hkv (query head h reads kv head h / (H / Hkv)). Result {batch... (q's
   * order), heads, time, dim: Dv}. */
  groupedAttention(q: Tensor, k: Tensor, v: Tensor, options?: AttentionOptions): Tensor;
  noGrad<T>(fn: () => T): T;
  isGradEnabled(): boolean;
  /** Disposes every tensor made inside fn except those it returns (a tensor, array or object). */
  scope<T>(fn: () => T): T;
  memory(): MemoryInfo;
  resetPeak(): void;
  trimCache(): void;
  /** The block runs grad-free now and again during backward; it receives the inputs, then extra. */
  checkpoint<E = undefined>(block: (...args: any[]) => Tensor, inputs: Tensor[], extra?: E): Tensor;
  customVjp<E = undefined>(spec: CustomVjpSpec<E>, inputs: Tensor[], extra?: E): Tensor;
  gradcheck(lossFn: (...inputs: Tensor[]) => Tensor, inputs: Tensor[], options?: GradcheckOptions): GradcheckResult;
}

export function init(options?: InitOptions): Promise<Fucina>;

// ---- datasets (web/data.mjs)
export interface IdxArray { dims: number[]; values: Uint8Array; }
export interface DatasetSplit { images: Float32Array; labels: Int32Array; count: number; h: number; w: number; }
export function parseIdx(bytes: Uint8Array): IdxArray;
/** A path in Node or a URL in browsers; gzip is detected and decompressed. */
export function readIdx(source: string): Promise<IdxArray>;
/** The same permutation as C++'s fucina::data::shuffledIndices for the same seed; n at most 2^24. */
export function shuffledIndices(n: number, seed: number | bigint): Int32Array;
export function loadFashionMnist(options?: { base?: string; train?: boolean }): Promise<DatasetSplit>;
export function makeBatch(fc: Fucina, split: DatasetSplit, order: ArrayLike<number>, begin: number, size: number): { images: Tensor; labels: Tensor };
