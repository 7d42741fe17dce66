// A strict-mode TypeScript program against the published types of 'fucina' (resolved through
// the package's exports, as an application resolves them). It is type-checked, never run:
// tests/js/types.test.mjs runs `tsc -p tests/ts` and also checks that this file uses every
// public member the runtime has. `// @ts-expect-error` lines are misuses the types must reject.
import {
  init, FucinaError, Tensor, Optimizer, PackedRhs, relaxedSimdSupported,
  parseIdx, readIdx, shuffledIndices, loadFashionMnist, makeBatch,
} from 'fucina';
import type {
  DType, Variant, Device, Backend, Reduction, Values, Pair, FucinaErrorCode, InitOptions, MemoryInfo, GradcheckOptions,
  DeviceMemoryInfo, DevicesMemoryInfo, DeviceLimits,
  GradcheckResult, InputGradients, CustomVjpSpec, LayerNormOptions, AffineLayerNormOptions, LossOptions,
  CrossEntropyOptions, HuberLossOptions, KlDivLossOptions, RopeOptions, AttentionOptions, Conv2dAxes,
  Conv2dOptions, Pool2dOptions, SafetensorsContents, SgdOptions, AdamOptions, Optim, Module, LinearOptions,
  Linear, LinearConstructor, Conv2dLayerAxes, Conv2dLayerOptions, Conv2dLayerSettings, Conv2dLayerResolvedAxes, Conv2d,
  Conv2dConstructor, LayerNorm, LayerNormConstructor, Embedding, EmbeddingConstructor, MlpConfig, Mlp,
  MlpConstructor, CnnConfig, Cnn, CnnConstructor, GptConfig, GptBlock, Gpt, GptConstructor, Nn, Fucina,
  IdxArray, DatasetSplit, FashionMnistOptions, Batch, CompareOp, BaseDType, Gpt2Config, Gpt2Options, LoraOptions,
  LoraAdaptOptions, GenerateOptions, Gpt2, Gpt2Constructor, LoraLinear, LoraLinearConstructor, PackedModel, PreparedConv2d,
  LlamaConfig, ModelOptions, PretrainedModel, Llama, LlamaConstructor, PeftConfig, PeftAdapter,
} from 'fucina';

const expectType = <T>(value: T): T => value;

// ---------------------------------------------------------------- init, the engine's fields
const options: InitOptions = { threads: 2, variant: 'auto' };
const fc: Fucina = await init(options);
await init();
await init({ variant: 'simd' });
await init({ variant: relaxedSimdSupported() ? 'relaxed-simd' : 'simd' });
// @ts-expect-error an unknown variant
await init({ variant: 'wasm64' });
// @ts-expect-error an unknown option key
await init({ thread: 2 });
// @ts-expect-error threads is a number
await init({ threads: '2' });
const located: InitOptions = { variant: 'simd', locateFile: (file: string, v: Variant) => `/static/${v}/${file}` };
const cdn: InitOptions = { baseUrl: new URL('https://cdn.example/fucina/wasm/'), wasmUrl: '/fucina-simd.wasm', variant: 'simd' };
void [located, cdn];
// @ts-expect-error locateFile returns a URL or a string
await init({ locateFile: () => 42 });
// @ts-expect-error baseUrl is a string or URL
await init({ baseUrl: 7 });
await init({ backend: 'reference' });
// @ts-expect-error the backends are cpu and reference
await init({ backend: 'gpu' });

const variant: Variant = fc.variant;
const threads: number = fc.threads;
const backend: Backend = fc.backend;
const optim: Optim = fc.optim;
const nn: Nn = fc.nn;
expectType<typeof Tensor>(fc.Tensor);
expectType<typeof FucinaError>(fc.FucinaError);
// @ts-expect-error the engine's fields are read-only
fc.threads = 3;

// ---------------------------------------------------------------- making tensors
const values: Values = new Float32Array([1, 2, 3, 4, 5, 6]);
const w = fc.variable(['out', 'in'], [2, 3], values);
const x = fc.constant(['batch', 'in'], [1, 3], [1, 0, -1]);
const copy = fc.variable(x);
const ints = fc.constant(['batch'], [1], new Int32Array([1]), 'i32');
const z = fc.zeros(['a'], [2]);
const o = fc.ones(['a'], [2], 'f16');
const f = fc.full(['a'], [2], 0.5);
const s = fc.scalar(3);
const u = fc.uniform(['a'], [2], -1, 1, 7);
const n = fc.normal(['a'], [2], 0, 1, 7);
// @ts-expect-error tags are strings
fc.variable([1, 2], [2], [1, 2]);
// @ts-expect-error values are numbers
fc.constant(['a'], [2], ['1', '2']);
// @ts-expect-error an array-like object is not accepted at run time either
fc.constant(['a'], [2], { length: 2, 0: 1, 1: 2 });
// @ts-expect-error an unknown dtype
fc.zeros(['a'], [2], 'f128');
const half16: Tensor = fc.variable(['a'], [2], [1, 2], 'f16');  // a 16-bit leaf, f32 gradient
half16.to('f32').sumAll().backward();
// @ts-expect-error variables are f32, f16 or bf16
fc.variable(['a'], [2], [1, 2], 'f64');
// @ts-expect-error the shape is missing
fc.ones(['a']);
// @ts-expect-error a Tensor is not a tag list
fc.zeros(x, [2]);

// ---------------------------------------------------------------- Tensor fields and autograd
const tags: string[] = w.tags;
const shape: number[] = w.shape;
const dtype: DType = w.dtype;
const device: Device = w.device;
const requiresGrad: boolean = w.requiresGrad;
const isDisposed: boolean = w.isDisposed;
// @ts-expect-error tags are read-only
w.tags = ['x'];
// @ts-expect-error tensors come from the engine, not from new
new Tensor();
const loss = x.dot(w, 'in').sumAll();
loss.backward();
x.dot(w, 'in').backward(fc.ones(['batch', 'out'], [1, 2]));
// @ts-expect-error the gradient is a Tensor
loss.backward([1]);
const g: Tensor | null = w.grad();
g?.dispose();
// @ts-expect-error grad() may be null
w.grad().toArray();
w.zeroGrad();
const d: Tensor = w.detach();
const arr: Float32Array = w.toArray();
const item: number = s.item();
const half: Tensor = w.to('bf16');
// @ts-expect-error not a JS dtype
w.to('q4');
const q8: Tensor = fc.constant(['r', 'c'], [1, 32], new Float32Array(32)).quantize('q8_0', 'c');
// @ts-expect-error quantize makes q8_0 only
q8.quantize('f16', 'c');
const text: string = w.toString();
d.dispose();

// ---------------------------------------------------------------- elementwise and reductions
const a = fc.variable(['r', 'c'], [2, 3], [1, 2, 3, 4, 5, 6]);
const b = fc.ones(['r', 'c'], [2, 3]);
const binaries: Tensor[] = [a.add(b), a.sub(b), a.mul(b), a.div(b), a.maximum(b), a.minimum(b), a.pow(b)];
const scalars: Tensor[] = [a.scale(2), a.addScalar(1), a.subScalar(1), a.divScalar(2), a.powScalar(2)];
// @ts-expect-error scale takes a number
a.scale(b);
// @ts-expect-error add takes a Tensor
a.add(1);
const unaries: Tensor[] = [a.neg(), a.abs(), a.exp(), a.log(), a.sqrt(), a.tanh(), a.sigmoid(), a.relu(),
  a.leakyRelu(), a.leakyRelu(0.2), a.gelu(), a.geluErf(), a.quickGelu(), a.silu(), a.elu(), a.elu(0.5),
  a.log1p(), a.rsqrt(), a.reciprocal(), a.sin(), a.cos(), a.clamp(0, 1)];
const reductions: Tensor[] = [a.sumAll(), a.meanAll(), a.sum('c'), a.mean('c'), a.variance('c'), a.variance('c', 0),
  a.max('c'), a.min('c'), a.logsumexp('c'), a.cumsum('c'), a.prod('c'), a.norm('c')];
// @ts-expect-error an axis is a string, not a Tensor
a.sum(b);
// @ts-expect-error an axis is a string, not an index
a.mean(1);

// ---------------------------------------------------------------- normalisation and losses
const lnPlain: LayerNormOptions = { eps: 1e-5 };
const lnAffine: AffineLayerNormOptions = { weight: fc.ones(['c'], [3]), bias: fc.zeros(['c'], [3]) };
const norms: Tensor[] = [a.layerNorm('c'), a.layerNorm('c', lnPlain), a.layerNorm('c', lnAffine),
  a.rmsNorm('c'), a.rmsNorm('c', 1e-6), a.rmsNormMul('c', fc.ones(['c'], [3])), a.l2Normalize('c'),
  a.softmax('c'), a.logSoftmax('c')];
// @ts-expect-error weight and bias come together
a.layerNorm('c', { weight: fc.ones(['c'], [3]) });
// @ts-expect-error an unknown option key
a.layerNorm('c', { epsilon: 1e-5 });
const labels = fc.constant(['r'], [2], [0, 2], 'i32');
const reduction: Reduction = 'sum';
const ce: CrossEntropyOptions = { reduction, labelSmoothing: 0.1 };
const plainLoss: LossOptions = { reduction: 'none' };
const huber: HuberLossOptions = { delta: 2 };
const kl: KlDivLossOptions = { logTarget: true, reduction: 'mean' };
const losses: Tensor[] = [a.crossEntropy(labels, 'c'), a.crossEntropy(labels, 'c', 'sum'), a.crossEntropy(labels, 'c', ce),
  a.logSoftmax('c').nllLoss(labels, 'c', plainLoss), a.mseLoss(b), a.mseLoss(b, 'mean'), a.huberLoss(b, huber),
  a.sigmoid().bceLoss(b), a.bceWithLogitsLoss(b, { reduction: 'sum' }), a.logSoftmax('c').klDivLoss(b, kl)];
// @ts-expect-error an unknown reduction
a.mseLoss(b, 'avg');
// @ts-expect-error unknown option keys are rejected
a.crossEntropy(labels, 'c', { reduction: 'mean', smoothing: 0.1 });
// @ts-expect-error the class axis is missing
a.crossEntropy(labels);

// ---------------------------------------------------------------- indexing and gated units
const idx = fc.constant(['r', 'c'], [2, 1], [0, 2], 'i64');
const indexing: Tensor[] = [a.gather('c', idx), a.takeAlongAxis('c', idx), a.scatterAdd('c', idx, fc.ones(['r', 'c'], [2, 1])),
  fc.ones(['r', 'c'], [2, 4]).swiglu('c'), fc.ones(['r', 'c'], [2, 4]).geglu('c'),
  fc.variable(['v', 'e'], [4, 2], [1, 2, 3, 4, 5, 6, 7, 8]).indexSelect('v', ints)];
// @ts-expect-error the axis comes first
a.gather(idx, 'c');

// ---------------------------------------------------------------- the rest of the inventory
const even = fc.variable(['r', 'c'], [2, 4], [1, 2, 3, 4, 5, 6, 7, 8]);
const [topValues, topIndices]: [Tensor, Tensor] = a.topK('c', 2);
const [sortedValues]: [Tensor, Tensor] = a.sort('c', true);
const inventory: Tensor[] = [a.floor(), a.ceil(), a.round(), a.sign(), a.fastTanh(), a.softcap30(), a.softcap15(),
  a.unary('gelu'), a.biasAdd('c', [1, 2, 3]), a.biasAdd('c', new Float32Array(3)), a.snake(fc.ones(['c'], [3])),
  a.prelu(fc.full([], [], 0.25)), a.gated(b, 'silu'), even.glu('c'), even.splitGated('c', 'quickGelu'), a.situ(b),
  a.situ(b, 15), a.sumMany(['r', 'c']), a.cumprod('c'), a.standardizeAxis('c'), a.normAll(), a.normAll(Infinity),
  a.linearRecurrence(b, 'c'), a.linearRecurrence(b, 'c', fc.zeros(['r'], [2])), topValues, topIndices, sortedValues,
  a.rmsNormMulAdd('c', fc.ones(['c'], [3]), fc.zeros(['c'], [3])), a.cosineSimilarity(b, 'c'),
  even.groupNorm(2, 'c', { batch: ['r'] }), even.groupNorm(1, 'c', { batch: [], weight: fc.ones(['c'], [4]), bias: fc.zeros(['c'], [4]), eps: 1e-3 })];
const labels3 = fc.constant(['r'], [2], [0, 2], 'i32');
const losses2: Tensor[] = [a.crossEntropyExt(labels3, 'c', { ignoreIndex: 1, zLoss: 1e-4, weight: fc.ones(['c'], [3]) }),
  a.crossEntropyExt(a.softmax('c'), 'c', 'sum'),
  x.linearCrossEntropyExt(w, fc.constant(['batch'], [1], [1], 'i32'), 'in', 'out', { chunkRows: 64, labelSmoothing: 0.1 }),
  x.linearDistillExt(w, fc.ones(['batch', 'out'], [1, 2]), 'in', 'out', { temperature: 2 }),
  fc.einsumMany([a, b, a], ['r']), a.dotTernarySte(b, 'c'),
  fc.ones(['t', 'd'], [2, 4]).rmsNormMulRopeHalfPrepared(fc.ones(['d'], [4]), fc.ones(['t', 'd'], [2, 2]), fc.zeros(['t', 'd'], [2, 2]), 'd', { offset: 0 })];
const seq1d = fc.ones(['batch', 'c', 't'], [1, 2, 6]);
const convs: Tensor[] = [seq1d.conv1d(fc.ones(['out', 'c', 'k'], [3, 2, 2]), { stride: 2, padding: 1, bias: fc.zeros(['out'], [3]) }),
  seq1d.convTranspose1d(fc.ones(['c', 'out', 'k'], [2, 3, 3]), { stride: 2, outputPadding: 1 }),
  seq1d.causalConv1d(fc.ones(['out', 'c', 'k'], [3, 2, 3]), { dilation: 2 }),
  seq1d.groupedCausalConv1d(fc.ones(['out', 'c', 'k'], [2, 1, 3]), 2),
  seq1d.causalDepthwiseConv1d(fc.ones(['out', 'c', 'k'], [2, 1, 4]), { axes: { length: 't' } }),
  fc.ones(['c', 'h', 'w'], [1, 4, 4]).conv2dRelu(fc.ones(['out', 'c', 'kh', 'kw'], [1, 1, 3, 3]), { padding: 1 }),
  fc.ones(['c', 'h', 'w'], [1, 4, 4]).conv2dRelu(fc.ones(['out', 'c', 'kh', 'kw'], [1, 1, 3, 3]), { padding: 1, maxPool: 2 }),
  fc.ones(['c', 'h', 'w'], [1, 4, 4]).unfold(2, { stride: [2, 2] }), fc.ones(['patch', 'l'], [4, 4]).fold([4, 4], 2, { stride: 2 }),
  seq1d.channelAffine(fc.ones(['c'], [2]), fc.zeros(['c'], [2]), 'c')];
const constantResults: Tensor[] = [a.argmax('c'), a.argmin('r'), a.argsort('c', true), a.multinomial('c', 2, 7), a.multinomial('c', 5, 7, true),
  a.isnan(), a.isinf(), a.isfinite(), a.logicalNot(), a.logicalAnd(b), a.logicalOr(b), a.logicalXor(b), a.any('c'), a.all('r'),
  a.anyAll(), a.allAll(), fc.bandMask('q', 'k', 4, 4, -1, 0)];
// In-place helpers give back their receiver (typed as it); take* consume it.
const acc = fc.zeros(['r', 'c'], [2, 3]);
const inPlace: Tensor = acc.addAxisVectorInPlace('c', fc.ones(['c'], [3])).addScaledInPlace(fc.ones(['c', 'r'], [3, 2]), 0.5)
  .addAxisVectorUnaryInPlace('c', fc.ones(['c'], [3]), 'relu');
const taken: Tensor = fc.ones(['c'], [3]).takeAddNoGrad(fc.ones(['c'], [3])).takeScaleNoGrad(2);
const [routeWeights, routeIndices]: [Tensor, Tensor] = fc.ones(['r', 'c'], [2, 3]).routerTopK('c', 2);
// @ts-expect-error the activation is named from unary's list
acc.addAxisVectorUnaryInPlace('c', fc.ones(['c'], [3]), 'swish');
// @ts-expect-error an activation the gated units do not have
a.gated(b, 'tanh');
// @ts-expect-error unary names its op
a.unary('swish');

// ---------------------------------------------------------------- contractions and structure
const contractions: Tensor[] = [x.dot(w, 'in'), x.addDot(w, 'in', fc.zeros(['out'], [2])),
  a.matmul(fc.ones(['c', 'k'], [3, 2])), a.matmul(b, true), fc.einsum(a, b, ['r']), fc.where(fc.ones(['r'], [2], 'u8'), a, b)];
// @ts-expect-error dot needs the contracted axis
x.dot(w);
const structure: Tensor[] = [a.transpose('r', 'c'), a.broadcastTo(['n', 'r', 'c'], [2, 2, 3]), a.permuteTo(['c', 'r']),
  a.withTags(['x', 'y']), a.narrow('c', 0, 2), a.contiguous(), a.insertAxis('n', 0), a.insertAxis('n', 0).squeeze('n'),
  a.merge(['r', 'c'], 'rc'), a.flatten('all').split('all', ['p', 'q'], [3, 2]), a.reshape(['x'], [6]), a.select('r', -1),
  a.slice('c', 0, 3, 2), a.slice('c', 1, 2), a.pad('c', 1, 1), a.pad('c', 1, 0, -1), a.maskedFill(fc.ones(['c'], [3], 'u8'), 0),
  a.tril('r', 'c'), a.triu('r', 'c', 1), a.bandPart('r', 'c', 0, -1), a.dropout(0.1, 3),
  fc.concat([a, b], 'r'), fc.stack([a, b], 'n')];
// @ts-expect-error merge takes a list of axes
a.merge('r', 'rc');
// @ts-expect-error narrow's start is a number
a.narrow('c', '0', 2);
// @ts-expect-error concat takes an array of tensors
fc.concat(a, 'r');

// ---------------------------------------------------------------- convolution, pooling, rope, attention
const img = fc.ones(['batch', 'c', 'h', 'w'], [1, 2, 8, 8]);
const axes: Conv2dAxes = { channels: 'c', height: 'h', width: 'w', outChannels: 'out', kernelH: 'kh', kernelW: 'kw' };
const stride: Pair = [1, 2];
const conv: Conv2dOptions = { bias: fc.zeros(['out'], [4]), stride, padding: 1, dilation: 1, groups: 1, axes };
const pool: Pool2dOptions = { stride: 2, padding: 0, height: 'h', width: 'w' };
const spatial: Tensor[] = [img.conv2d(fc.ones(['out', 'c', 'kh', 'kw'], [4, 2, 3, 3]), conv), img.maxPool2d(2),
  img.maxPool2d([2, 2], pool), img.avgPool2d(2, { stride: 1 }), img.upsample2xNearest(), img.upsample2xNearest('h', 'w')];
// @ts-expect-error an unknown conv2d option
img.conv2d(fc.ones(['out', 'c', 'kh', 'kw'], [4, 2, 3, 3]), { strides: 2 });
// @ts-expect-error a kernel pair has two entries
img.maxPool2d([2, 2, 2]);
// The prepared convolution (inference): a handle made once, used many times, disposed.
const prepared: PreparedConv2d = fc.prepareConv2dWeights(fc.ones(['out', 'c', 'kh', 'kw'], [4, 2, 3, 3]), conv);
const inferred: Tensor[] = [img.conv2dPrepared(prepared), img.conv2dPreparedRelu(prepared)];
expectType<boolean>(prepared.winograd);
expectType<boolean>(prepared.isDisposed);
prepared.dispose();
// @ts-expect-error conv2dPrepared takes a PreparedConv2d, not a weight tensor
img.conv2dPrepared(fc.ones(['out', 'c', 'kh', 'kw'], [4, 2, 3, 3]));
const seq = fc.ones(['t', 'd'], [4, 8]);
const rope: RopeOptions = { position: 't', dim: 'd', base: 10000, offset: 0, mode: 'interleaved' };
const rotated: Tensor[] = [seq.rope(), seq.rope(rope), seq.rope(fc.ones(['t', 'd'], [4, 4]), fc.zeros(['t', 'd'], [4, 4]), { offset: 0 })];
// @ts-expect-error an unknown rope mode
seq.rope({ mode: 'full' });
const relation: CompareOp = 'le';
expectType<Tensor>(seq.compare(fc.zeros(['t'], [4], 'i32'), relation));
// @ts-expect-error an unknown comparison
seq.compare(seq, 'equal');
const attention: AttentionOptions = { heads: 'head', time: 't', dim: 'd', causal: true, scale: 0.5 };
const q = fc.ones(['head', 't', 'd'], [2, 4, 8]);
const attended: Tensor = fc.groupedAttention(q, q, q, attention);
fc.groupedAttention(q, q, q);
// @ts-expect-error causal is a boolean
fc.groupedAttention(q, q, q, { causal: 'yes' });

// ---------------------------------------------------------------- modes, scopes, memory
const kept: { y: Tensor; n: number } = fc.scope(() => ({ y: a.scale(2), n: 1 }));
const noGrad: Tensor = fc.noGrad(() => a.scale(2));
const enabled: boolean = fc.isGradEnabled();
const memory: MemoryInfo = fc.memory();
const counters: number[] = [memory.liveTensors, memory.liveBytes, memory.peakBytes, memory.allocations,
  memory.systemAllocations, memory.cacheHits, memory.cachedBytes, memory.heapBytes, memory.bytesByDtype.q8_0];
const devs: DevicesMemoryInfo = memory.devices;
const gpu: DeviceMemoryInfo | undefined = devs.webgpu;
const gpuCounters: number[] = gpu ? [gpu.liveBytes, gpu.peakBytes, gpu.liveBuffers, gpu.pooledBytes, gpu.buffersMade,
  gpu.pipelinesMade, gpu.uploadedBytes, gpu.downloadedBytes, gpu.dispatches, gpu.submits] : [];
const where: Device = fc.defaultDevice;
fc.defaultDevice = 'cpu';
// @ts-expect-error a device is 'cpu' or 'webgpu'
fc.defaultDevice = 'gpu';
const synced: Promise<void> = fc.sync();
const deviceRead: Promise<Float32Array> = a.data();
const onDevice: Tensor = a.to('webgpu');
const gpuInit: Promise<unknown> = init({ device: 'webgpu', gpu: {} });
const budget: DeviceLimits = { memory: 1 << 26, maxBufferSize: 1 << 24, maxStorageBufferBindingSize: 1 << 22 };
const smallerGpu: Promise<unknown> = init({ device: 'webgpu', gpu: {}, deviceLimits: budget });
const gpuLimits: (number | undefined)[] = gpu ? [gpu.limits.memory, gpu.limits.maxBufferSize, gpu.limits.maxStorageBufferBindingSize] : [];

fc.resetPeak();
fc.trimCache();
// @ts-expect-error scope takes a function
fc.scope(a);

// ---------------------------------------------------------------- checkpoint, customVjp, gradcheck
const c1: Tensor = fc.checkpoint((p, r) => expectType<Tensor>(p).mul(r), [a, b]);
const c2: Tensor = fc.checkpoint((p, factor) => p.scale(expectType<number>(factor)), [a], 2);
const c3: Tensor = fc.checkpoint((...ts) => ts[0]!.add(ts[1]!), [a, ...[b, b]]);
// @ts-expect-error the block must return a Tensor
fc.checkpoint((p) => p.toArray(), [a]);
// @ts-expect-error the block takes the inputs' types (a Tensor is not a string)
fc.checkpoint((p: string) => a.sum(p), [a]);
// @ts-expect-error inputs are tensors
fc.checkpoint((p) => p, [1]);
// @ts-expect-error the block takes as many inputs as given (and extra, here missing)
fc.checkpoint((p, r, t) => p.add(r).add(t), [a, b]);
const c4: Tensor = fc.checkpoint((p, r) => fc.checkpointTail(() => p.add(p.mul(r))), [a, b]);
// @ts-expect-error the tail returns a Tensor
fc.checkpointTail(() => 1);
// @ts-expect-error the tail takes no arguments
fc.checkpointTail((p: Tensor) => p);

const double: CustomVjpSpec<[Tensor]> = {
  name: 'double',
  forward: ([v]) => v.scale(2),
  backward: (_inputs, _output, gy, needsGrad) => [needsGrad[0] ? gy.scale(2) : null],
};
const v1: Tensor = fc.customVjp(double, [a]);
const grads: InputGradients<[Tensor, Tensor]> = [null, b];
const v2: Tensor = fc.customVjp({
  forward: ([p, r], k: number) => p.mul(r).scale(k),
  backward: ([p, r], _out, gy, _needs, k) => [gy.mul(r).scale(k), gy.mul(p).scale(k)],
}, [a, b], 3);
fc.customVjp({
  forward: ([p]) => p,
  // @ts-expect-error one gradient per input: two inputs need two entries
  backward: (_i, _o, gy) => [gy],
}, [a, b]);
// @ts-expect-error backward is required
fc.customVjp({ forward: ([p]: [Tensor]) => p }, [a]);

const gcOptions: GradcheckOptions = { eps: 1e-3, absTol: 1e-3, relTol: 1e-2, printMismatch: false };
const gc: GradcheckResult = fc.gradcheck((p, r) => p.mul(r).sumAll(), [a, b], gcOptions);
const gcNumbers: number[] = [gc.checked, gc.maxAbsError, gc.maxRelError];
// @ts-expect-error an unknown gradcheck option
fc.gradcheck((p) => p.sumAll(), [a], { tolerance: 1 });

// ---------------------------------------------------------------- safetensors
const bytes: Uint8Array = fc.encodeSafetensors({ w, x }, { note: 'hi' });
const decoded: SafetensorsContents = fc.decodeSafetensors(bytes);
const decodedW: Tensor | undefined = decoded.tensors['w'];
const meta: string | undefined = decoded.metadata['note'];
// @ts-expect-error metadata values are strings
fc.encodeSafetensors({ w }, { n: 1 });

// ---------------------------------------------------------------- fc.optim and Optimizer
const sgdOptions: SgdOptions = { lr: 0.1, momentum: 0.9, dampening: 0, nesterov: true, weightDecay: 0 };
const adamOptions: AdamOptions = { lr: 1e-3, betas: [0.9, 0.999], eps: 1e-8, weightDecay: 0.01 };
const opt: Optimizer = optim.sgd([w], sgdOptions);
const adam: Optimizer = fc.optim.adam([w], adamOptions);
const adamw: Optimizer = fc.optim.adamw([w], { lr: 1e-3 });
opt.step();
opt.zeroGrad();
opt.lr = opt.lr * 0.5;
const params: Tensor[] = opt.params;
const optDisposed: boolean = opt.isDisposed;
opt.dispose();
adam.dispose();
adamw.dispose();
// @ts-expect-error an unknown optimizer option (weight_decay is weightDecay)
fc.optim.sgd([w], { weight_decay: 0.1 });
// @ts-expect-error betas are a pair
fc.optim.adam([w], { betas: [0.9] });
// @ts-expect-error params is an array of tensors
fc.optim.adam(w);
// @ts-expect-error optimizers come from fc.optim
new Optimizer();
// @ts-expect-error params is read-only
opt.params = [];
const norm: number = fc.optim.clipGradNorm([w], 1);
const normOnDevice: Tensor = fc.optim.clipGradNormTensor([w], 1);
const lrs: number[] = [fc.optim.linearWarmup(1, 10, 0.1), fc.optim.cosineDecay(5, 10, 0.1), fc.optim.cosineDecay(5, 10, 0.1, 0.01)];
const schedule: (step: number) => number = fc.optim.warmupCosine(0.1, 10, 100, 0);
lrs.push(schedule(3));

// ---------------------------------------------------------------- fc.nn: layers and models
const linearOptions: LinearOptions = { bias: false };
const LinearClass: LinearConstructor = nn.Linear;
const linear: Linear = new LinearClass('in', 'out', 3, 2, 1, linearOptions);
const linearHere: Linear = linear.to('cpu');
const linearFields: [string, string, Tensor, Tensor | null] = [linear.in, linear.out, linear.weight, linear.bias];
const y1: Tensor = linear.forward(x);
const linearParams: Tensor[] = linear.parameters();
const packedLinear: PackedModel = linear.pack();
const packedY: Tensor = packedLinear.forward(x);
packedLinear.dispose();
// @ts-expect-error a layer's fields are read-only
linear.weight = w;
// @ts-expect-error inFeatures is a number
new nn.Linear('in', 'out', '3', 2, 1);
// @ts-expect-error the seed is missing
new nn.Linear('in', 'out', 3, 2);
// @ts-expect-error an unknown option key
new nn.Linear('in', 'out', 3, 2, 1, { bias: true, init: 'xavier' });

const convAxes: Conv2dLayerAxes = { height: 'h', width: 'w', kernelH: 'kh', kernelW: 'kw' };
const convOptions: Conv2dLayerOptions = { stride: 1, padding: [1, 1], dilation: 1, groups: 1, axes: convAxes };
const ConvClass: Conv2dConstructor = nn.Conv2d;
const convLayer: Conv2d = new ConvClass('c', 'c1', 2, 4, 3, 1, convOptions);
const convLayerHere: Conv2d = convLayer.to('cpu');
const settings: Conv2dLayerSettings = convLayer.options;
const resolved: Conv2dLayerResolvedAxes = settings.axes;
const channelAxis: string = resolved.channels;
const convFields: Tensor[] = [convLayer.weight, convLayer.bias, convLayer.forward(img), convLayer.forwardRelu(img),
  ...convLayer.parameters()];
// @ts-expect-error the channel axes are the constructor's, not options
new nn.Conv2d('c', 'c1', 2, 4, 3, 1, { axes: { channels: 'c' } });

const LayerNormClass: LayerNormConstructor = nn.LayerNorm;
const layerNorm: LayerNorm = new LayerNormClass('c', 3, 1e-5);
const layerNormHere: LayerNorm = layerNorm.to('cpu');
const lnFields: [string, number, Tensor, Tensor] = [layerNorm.axis, layerNorm.eps, layerNorm.weight, layerNorm.bias];
layerNorm.forward(a);
layerNorm.parameters();

const EmbeddingClass: EmbeddingConstructor = nn.Embedding;
const embedding: Embedding = new EmbeddingClass('vocab', 'e', 16, 4, 0.02, 1);
const embeddingHere: Embedding = embedding.to('cpu');
const embFields: [string, Tensor, Tensor] = [embedding.rows, embedding.table, embedding.forward(ints)];
embedding.parameters();

const mlpConfig: MlpConfig = { sizes: [3, 4, 2] };
const MlpClass: MlpConstructor = nn.Mlp;
const mlp: Mlp = new MlpClass(mlpConfig, 1);
const mlpLayers: Linear[] = mlp.layers;
mlp.forward(x);
mlp.parameters();
const movedMlp: Mlp = mlp.to('cpu');
movedMlp.forward(x);
// @ts-expect-error a device is 'cpu' or 'webgpu'
mlp.to('gpu');
const packedMlp: PackedModel = mlp.pack();
packedMlp.forward(x);
packedMlp.dispose();
new nn.Mlp();
// @ts-expect-error sizes is an array
new nn.Mlp({ sizes: 3 });

const cnnConfig: CnnConfig = { image: 12, channels: 1, conv1: 2, conv2: 2, hidden: 4, classes: 10 };
const CnnClass: CnnConstructor = nn.Cnn;
const cnn: Cnn = new CnnClass(cnnConfig, 1);
const cnnHere: Cnn = cnn.to('cpu');
const cnnFields: [Required<CnnConfig>, number, Conv2d, Conv2d, Linear, Linear] =
  [cnn.config, cnn.flatFeatures, cnn.conv1, cnn.conv2, cnn.fc1, cnn.fc2];
cnn.forward(fc.ones(['batch', 'h', 'w'], [1, 12, 12]));
cnn.parameters();
const packedCnn: PackedModel = cnn.pack();
packedCnn.forward(fc.ones(['batch', 'h', 'w'], [1, 12, 12]));
packedCnn.dispose();
const packedConv: PackedModel = convLayer.pack();
packedConv.forward(img);
packedConv.dispose();
// @ts-expect-error an unknown config key
new nn.Cnn({ kernel: 5 });

const gptConfig: GptConfig = { vocab: 16, context: 8, dModel: 8, heads: 2, layers: 1, mlp: 16, checkpointBlocks: true };
const GptClass: GptConstructor = nn.Gpt;
const gpt: Gpt = new GptClass(gptConfig, 1);
const gptHere: Gpt = gpt.to('cpu');
const context: number = gpt.config.context;
const block: GptBlock = gpt.blocks[0]!;
const blockLayers: [LayerNorm, LayerNorm, Linear, Linear, Linear, Linear] = [block.ln1, block.ln2, block.qkv, block.proj, block.fc, block.out];
const [firstLayer]: readonly [LayerNorm, Linear, Linear, LayerNorm, Linear, Linear] = block.layers;
const gptFields: [Embedding, Embedding, LayerNorm] = [gpt.token, gpt.position, gpt.final];
const tokens = fc.constant(['batch', 't'], [1, 4], [1, 2, 3, 4], 'i32');
const logits: Tensor = gpt.forward(tokens);
const gptLoss: Tensor = gpt.loss(tokens);
gpt.parameters();
const gptSampled: number[] = gpt.generate([1, 2], { maxTokens: 3, temperature: 0.8, topK: 4, seed: 2,
  onToken: (id: number) => id !== 0 });
gpt.generate(Int32Array.of(3), { maxTokens: 2, temperature: 0 });
const sampledLater: Promise<number[]> = gpt.generateAsync([1, 2], { maxTokens: 3, seed: 2 });
// @ts-expect-error the prompt is token ids
gpt.generate('once');
gpt.freezeProjections('q8_0');
// @ts-expect-error freezeProjections takes f32, f16, bf16 or q8_0
gpt.freezeProjections('i32');
// @ts-expect-error checkpointBlocks is a boolean
new nn.Gpt({ checkpointBlocks: 1 });
// @ts-expect-error loss takes a Tensor of tokens
gpt.loss([1, 2, 3]);

const modules: Module[] = [linear, convLayer, layerNorm, embedding, mlp, cnn, gpt];
if (modules[0] instanceof nn.Linear) expectType<Linear>(modules[0]);
const seed: number = nn.subSeed(1, 2);
const saved: Uint8Array = nn.saveParameters(gpt.parameters(), { step: '1' });
nn.loadParameters(gpt.parameters(), saved);
// @ts-expect-error loadParameters takes bytes
nn.loadParameters(gpt.parameters(), 'model.safetensors');

// ---------------------------------------------------------------- GPT-2 and LoRA
const gpt2Config: Gpt2Config = { vocab_size: 96, n_positions: 32, n_embd: 64, n_layer: 2, n_head: 4, n_inner: null,
  activation_function: 'gelu_new', resid_pdrop: 0.1 };
const gpt2Options: Gpt2Options = { dtype: 'q8_0', trainable: false, checkpointBlocks: true };
const Gpt2Class: Gpt2Constructor = nn.Gpt2;
const fresh: Gpt2 = new Gpt2Class(gpt2Config, 1, { trainable: true });
const modelBytes: Uint8Array = fresh.save();
const gpt2: Gpt2 = nn.Gpt2.load(modelBytes, fresh.config, gpt2Options);
const baseDType: BaseDType = gpt2.dtype;
const vocabSize: unknown = gpt2.config.vocab_size;
gpt2.checkpointBlocks = !gpt2.checkpointBlocks;
const modelDevice: Device = gpt2.device;
const moved: Gpt2 = gpt2.to('cpu');
const gpt2Later: Promise<number[]> = gpt2.generateAsync([1, 2], { maxTokens: 2 });
// @ts-expect-error to() takes a device name
gpt2.to('tpu');
const gpt2Tokens = fc.constant(['batch', 't'], [1, 4], [1, 2, 3, 4], 'i32');
const gpt2Logits: Tensor = gpt2.logits(gpt2Tokens);
const loraOptions: LoraOptions = { rank: 4, alpha: 8, dropout: 0.1, targets: ['c_attn', 'c_proj'], seed: 3 };
const adapters: Tensor[] = nn.lora(gpt2, loraOptions);
const gpt2Opt = fc.optim.adam(gpt2.parameters(), { lr: 1e-3 });
gpt2.loss(gpt2Tokens).backward();
gpt2Opt.step();
const layerNames: string[] = gpt2.layers();
const wte: Tensor | undefined = gpt2.namedTensors()['wte.weight'];
const adapterBytes: Uint8Array = gpt2.saveAdapters();
fresh.addLora();
fresh.loadAdapters(adapterBytes);
fresh.loadAdapters(adapterBytes, { rank: 4, alpha: 8, targets: ['c_attn', 'c_proj'] });
fresh.mergeAdapters();
const generateOptions: GenerateOptions = { maxTokens: 8, temperature: 0.8, topK: 40, seed: 1,
  onToken: (id: number) => id !== 0 };
const sampled: number[] = gpt2.generate([1, 2, 3], generateOptions);
gpt2.generate(Int32Array.of(1, 2), { onToken: (id) => { console.log(id); } });
const gpt2Disposed: boolean = gpt2.isDisposed;
gpt2.dispose();
fresh.dispose();
// @ts-expect-error dtype is one of the four a base is stored in
new nn.Gpt2(gpt2Config, 0, { dtype: 'i32' });
// @ts-expect-error config.json needs n_embd, n_layer, n_head and vocab_size
new nn.Gpt2({ n_layer: 2 });
// @ts-expect-error the prompt is token ids
gpt2.generate('once upon a time');
// @ts-expect-error an unknown LoRA option
nn.lora(gpt2, { r: 4 });
// @ts-expect-error dtype is read-only
gpt2.dtype = 'f16';

// ---------------------------------------------------------------- Llama-family models and PEFT files
const llamaConfig: LlamaConfig = { model_type: 'qwen2', vocab_size: 96, hidden_size: 64, num_hidden_layers: 2,
  num_attention_heads: 4, num_key_value_heads: 1, intermediate_size: 128, max_position_embeddings: 64,
  rms_norm_eps: 1e-6, rope_theta: 1e6, rope_scaling: null, tie_word_embeddings: true, torch_dtype: 'bfloat16' };
const modelOptions: ModelOptions = { dtype: 'q8_0', checkpointBlocks: true };
const LlamaClass: LlamaConstructor = nn.Llama;
const seeded: Llama = new LlamaClass(llamaConfig, 2, { trainable: true });
const llamaBytes: Uint8Array = seeded.save();
const llama: Llama = nn.Llama.load(llamaBytes, seeded.config, modelOptions);
const sharded: Llama = nn.Llama.load([llamaBytes], llamaConfig);
const llamaDevice: Device = sharded.to('cpu').device;
const llamaLater: Promise<number[]> = sharded.generateAsync([1, 2], { maxTokens: 2 });
const fromFile: Promise<Llama> = nn.Llama.loadAsync(new Blob([llamaBytes.slice()]), llamaConfig, { dtype: 'bf16' });
const llamaDType: BaseDType = llama.dtype;
const heads: unknown = llama.config.num_key_value_heads;
llama.checkpointBlocks = !llama.checkpointBlocks;
const llamaLogits: Tensor = llama.logits(gpt2Tokens);
const llamaAdapters: Tensor[] = llama.addLora({ rank: 8, targets: ['q_proj', 'v_proj'] });
llama.loss(gpt2Tokens).backward();
const llamaParams: Tensor[] = llama.parameters();
const llamaLayers: string[] = llama.layers();
const embed: Tensor | undefined = llama.namedTensors()['model.embed_tokens.weight'];
const llamaSampled: number[] = llama.generate([1, 2], { maxTokens: 4, temperature: 0 });
const peft: PeftAdapter = nn.exportPeft(llama);
const peftLater: Promise<PeftAdapter> = nn.exportPeftAsync(llama);
const peftConfig: PeftConfig = peft.config;
const peftBytes: Uint8Array = peft.safetensors;
nn.loadPeft(sharded, peftBytes, peftConfig);
nn.loadPeft(seeded, peftBytes, { peft_type: 'LORA', r: 8, target_modules: '.*\\.(q|v)_proj' });
const llamaAdapterBytes: Uint8Array = llama.saveAdapters();
seeded.mergeAdapters();
seeded.loadAdapters(llamaAdapterBytes);
const asModel: PretrainedModel = Math.random() < 0.5 ? llama : gpt2;
nn.lora(asModel, { targets: ['q_proj'] });
const llamaDisposed: boolean = llama.isDisposed;
llama.dispose();
// @ts-expect-error config.json needs hidden_size, num_hidden_layers, ...
new nn.Llama({ model_type: 'llama' });
// @ts-expect-error the bytes of model.safetensors, not a path
nn.Llama.load('model.safetensors', llamaConfig);
// @ts-expect-error adapter_config.json needs peft_type, r and target_modules
nn.loadPeft(llama, peftBytes, { r: 8 });

const LoraLinearClass: LoraLinearConstructor = nn.LoraLinear;
const frozen = fc.normal(['in', 'out'], [32, 4], 0, 0.1, 1).quantize('q8_0', 'in');
const loraLayer: LoraLinear = new LoraLinearClass(frozen, fc.zeros(['out'], [4]), 'in', 'out');
const adaptOptions: LoraAdaptOptions = { rank: 2, alpha: 4, dropout: 0, seed: 1 };
loraLayer.adapt(adaptOptions);
const loraFields: [string, string, Tensor, Tensor | null, Tensor | null, Tensor | null, number, boolean] =
  [loraLayer.in, loraLayer.out, loraLayer.weight, loraLayer.bias, loraLayer.a, loraLayer.b, loraLayer.scale, loraLayer.isDisposed];
const loraY: Tensor = loraLayer.forward(fc.ones(['batch', 'in'], [2, 32]), 7);
const merged: Tensor = loraLayer.merge();
const loraParams: Tensor[] = loraLayer.parameters();
loraLayer.dispose();
new nn.LoraLinear(frozen, null, 'in', 'out').dispose();
// @ts-expect-error adapt has no targets
loraLayer.adapt({ targets: ['c_attn'] });
// @ts-expect-error the bias is a Tensor or null
new nn.LoraLinear(frozen, undefined, 'in', 'out');

// ---------------------------------------------------------------- errors
try {
  a.add(fc.ones(['r'], [7]));
} catch (e) {
  if (e instanceof FucinaError) {
    const code: FucinaErrorCode = e.code;
    const name: 'FucinaError' = e.name;
    if (e.code === 'ShapeMismatch') console.log(e.message);
    // @ts-expect-error not an error code
    if (e.code === 'ShapeMismatchh') console.log(code, name);
  }
  if (e instanceof fc.FucinaError) console.log(e.code);
}
const made: FucinaError = new FucinaError('InvalidArgument', 'InvalidArgument: made by hand');
// @ts-expect-error codes are the library's
new FucinaError('Oops', 'Oops: no');
if (kept.y instanceof fc.Tensor) expectType<Tensor>(kept.y);

// ---------------------------------------------------------------- datasets
const idxBytes = new Uint8Array([0, 0, 8, 1, 0, 0, 0, 2, 7, 9]);
const parsed: IdxArray = parseIdx(idxBytes);
const dims: number[] = parsed.dims;
const read: Promise<IdxArray> = readIdx('data/train-labels-idx1-ubyte.gz');
void readIdx(new URL('https://example.com/labels.gz'));
const order: Int32Array = shuffledIndices(10, 42);
shuffledIndices(10, 42n);
const mnistOptions: FashionMnistOptions = { base: '/data/fashion-mnist', train: false };
const split: DatasetSplit = await loadFashionMnist(mnistOptions);
const splitFields: [Float32Array, Int32Array, number, number, number] = [split.images, split.labels, split.count, split.h, split.w];
const batch: Batch = makeBatch(fc, split, order, 0, 4);
const batchTensors: [Tensor, Tensor] = [batch.images, batch.labels];
// @ts-expect-error makeBatch needs the engine first
makeBatch(split, order, 0, 4);
// @ts-expect-error parseIdx takes bytes
parseIdx('file.idx');

// ---------------------------------------------------------------- views, flips and shifts
const rowShifts = fc.constant(['r'], [2], [1, -1], 'i32');
const unbound: Tensor[] = a.unbindInto('c');
const viewsAndShifts: Tensor[] = [a.alignTo(['n', 'c', 'r']), a.viewWithStrides(['w', 'k'], [2, 3], [1, 1]),
  a.viewWithStrides(['d'], [2], [2], 1), a.materialize(), a.sliceStep('c', -1, -4, -1), a.sliceStep('c', 0, 3),
  a.zeroPad2d('r', 'c', 1, -1, 0, 2), a.constantPad2d('r', 'c', 0, 1, 1, 0, -1), a.constantPad2d('r', 'c', 1, 1, 1, 1),
  a.repeatAxis('r', 2), a.repeatAxis('c', 3, true), a.flip('c'), a.roll('c', -4), a.rollBy('c', 'r', rowShifts),
  a.shiftBy('c', 'r', rowShifts), a.relposShift('r', 'c'), ...unbound];
// @ts-expect-error the pads are four numbers, not an array
a.zeroPad2d('r', 'c', [1, 1, 1, 1]);
console.log(viewsAndShifts);
// ---------------------------------------------------------------- diagonals, masked selection and indexed updates
const sq3 = fc.variable(['i', 'j'], [3, 3], [1, 2, 3, 4, 5, 6, 7, 8, 9]);
const rowIdx = fc.constant(['k'], [2], [2, 0], 'i32');
const mask3 = fc.constant(['c'], [3], [1, 0, 1], 'u8');
const indexingOps: Tensor[] = [sq3.diagonal('i', 'j', 1, 'd'), sq3.trace('i', 'j'), sq3.diag(['i', 'j'], ['d']), sq3.diag(['i', 'j'], ['d'], -1),
  a.sum('r').diag(['c'], ['p', 'q']), a.sum('r').diag(['c'], ['p', 'q'], 1), a.diagEmbed('c', 'p', 'q'), a.diagEmbed('c', 'p', 'q', -2),
  a.indexAdd('c', rowIdx, fc.ones(['r', 'c'], [2, 2])), a.scatter('c', fc.zeros(['r', 'c'], [2, 1], 'i64'), fc.ones(['r', 'c'], [2, 1])),
  a.maskedSelect(mask3, 'k'), a.maskedScatter(mask3, fc.ones(['s'], [4])), a.setSlice('c', 1, fc.ones(['r', 'c'], [2, 2])),
  a.setRows('c', rowIdx, fc.ones(['r', 'c'], [2, 2])), a.zeroSlice('c', 0, 2), a.zeroRows('r', fc.constant(['k'], [1], [1], 'i64'))];
// @ts-expect-error diag names its axes in arrays
sq3.diag('i', 'j');
void indexingOps;

// ---------------------------------------------------------------- packed products
const packedW: PackedRhs = fc.packRhs(fc.ones(['o', 'e'], [3, 32]), 'e');
const packedFields: [string, number, string[], number[], 'f32' | 'q8_0', string, number, boolean] = [packedW.axis, packedW.depth,
  packedW.tags, packedW.shape, packedW.dtype, packedW.sourceDtype, packedW.bytes, packedW.isDisposed];
const packedText: string = packedW.toString();
const xe = fc.ones(['t', 'e'], [2, 32]);
const packedOps: Tensor[] = [xe.dotPacked(packedW), xe.dotPacked(packedW, fc.zeros(['o'], [3])), xe.dotPacked(packedW, null),
  xe.rmsNormMulDotPacked(fc.ones(['e'], [32]), packedW), xe.rmsNormMulDotPacked(fc.ones(['e'], [32]), packedW, 1e-5),
  fc.ones(['t', 'e'], [2, 64]).splitSwiGluDotPacked(packedW), fc.ones(['t', 'e'], [2, 64]).gegluQuantDotPacked(packedW)];
// @ts-expect-error dotPacked takes a PackedRhs, not the weight
xe.dotPacked(fc.ones(['o', 'e'], [3, 32]));
packedW.dispose();

// Everything above is used once more so that noUnusedLocals holds.
console.log(variant, threads, backend, device, copy, z, o, f, u, n, tags, shape, dtype, requiresGrad, isDisposed, arr, item, half, text,
  binaries, scalars, unaries, reductions, norms, losses, indexing, inventory, losses2, convs, constantResults, contractions, structure, spatial, inferred, rotated, attended,
  noGrad, enabled, counters, c1, c2, c3, c4, v1, v2, grads, gcNumbers, decodedW, meta, params, optDisposed, norm, normOnDevice, sampledLater, convLayerHere, layerNormHere, embeddingHere, cnnHere, gptHere, linearHere, linearFields,
  y1, linearParams, channelAxis, convFields, lnFields, embFields, mlpLayers, cnnFields, context, blockLayers, firstLayer,
  gptFields, logits, gptLoss, gptSampled, seed, made, dims, read, splitFields, batchTensors, baseDType, vocabSize, modelDevice, moved, gpt2Later, llamaDevice, llamaLater, peftLater, gpt2Logits,
  adapters, layerNames, wte, sampled, gpt2Disposed, loraFields, loraY, merged, loraParams, inPlace, taken, routeWeights, routeIndices, packedY, packedFields, packedText, packedOps,
  gpuCounters, where, synced, deviceRead, onDevice, gpuInit, smallerGpu, gpuLimits, fromFile, llamaDType, heads, llamaLogits, llamaAdapters, llamaParams,
  llamaLayers, embed, llamaSampled, llamaDisposed);
