// The adversarial tables: for every public function and method of the package, a
// valid call and the kinds of its arguments. adversarial.test.mjs generates the bad calls from
// them: each argument in turn replaced by every bad value of its kind. ENGINE and PARTIAL list
// well-typed calls the engine must refuse; callbacks, heap exhaustion and optimizers have
// hand-written rows in the test file.

// ---- argument kinds: a valid value, with the bad values users pass for that kind
const arg = (kind, value, extra) => ({ kind, value, extra });
export const tensor = (name) => arg('tensor', name);
export const tensors = (...names) => arg('tensors', names);
export const axis = (v) => arg('axis', v);
export const tags = (v) => arg('tags', v);
export const shape = (v) => arg('shape', v);
export const int = (v) => arg('int', v);        // any integer
export const nat = (v) => arg('nat', v);        // an integer >= 0
export const pos = (v) => arg('pos', v);        // an integer >= 1
export const num = (v) => arg('number', v);
export const bool = (v) => arg('bool', v);
export const dtype = (v) => arg('dtype', v);
export const values = (v) => arg('values', v);
export const floats = (v) => arg('floats', v);
export const fn = (v) => arg('fn', v);
export const pairPos = (v) => arg('pairPos', v);
export const pairNat = (v) => arg('pairNat', v);
/** An options object: a valid one, and the kind of each key (each key gets its kind's bad values). */
export const options = (v, keys) => arg('options', v, keys);
/** A loss's reduction or options: as options, plus bad reduction names. */
export const loss = (v, keys = {}) => arg('loss', v, keys);
export const raw = (v, bad) => arg('raw', v, bad);  // a one-off kind: the bad values given here

// Bad values per kind; an '@name' string is a fixture (fixtures() in adversarial.test.mjs).
const NOT_INT = [NaN, Infinity, -Infinity, 1.5, 2 ** 53, 2 ** 64, '1', null, {}];
export const BAD = {
  tensor: ['@gone', '@foreign', 42, null, {}, 'x', [1]],
  tensors: ['x', null, ['@gone'], ['@foreign'], [42], [null]],
  axis: [7, null, ['r'], {}],
  tags: ['r', null, [1], [null], [{}], {}],
  shape: ['x', null, [-1], [1.5], [NaN], [Infinity], [2 ** 53], ['2'], [null], {}],
  int: NOT_INT,
  nat: [...NOT_INT, -1],
  pos: [...NOT_INT, -1, 0],
  number: ['1', null, {}, [], true],
  bool: [1, 'true', null, {}],
  dtype: ['f128', 7, null, 'F32', {}],
  values: ['ab', [1, 'x'], [1, null], null, {}, 7, new DataView(new ArrayBuffer(8))],
  floats: ['ab', [1, 'x'], [1, null], [NaN], [Infinity], null, {}, 7, new Int32Array(3)],
  fn: [42, null, 'f', {}],
  pairPos: [0, -1, 1.5, NaN, [1], [1, NaN], [1, 0], [1, 2, 3], 'x', null],
  pairNat: [-1, 1.5, NaN, [0, -1], [1], 'x', null],
  options: [{ bogus: 1 }, 7, 'x', [], null, true],
  loss: ['avg', 'MEAN', 7, [], null, { bogus: 1 }, { reduction: 'avg' }, { reduction: 7 }],
};

// ---- the tables. self: the fixture a method is called on ('x' unless given).
const packedBad = [null, 42, {}, 'x', '@w', '@packedGone', '@prep'];
const unaryOps = ['neg', 'abs', 'exp', 'log', 'sqrt', 'tanh', 'sigmoid', 'relu', 'gelu', 'geluErf', 'quickGelu',
  'silu', 'log1p', 'rsqrt', 'reciprocal', 'sin', 'cos', 'floor', 'ceil', 'round', 'sign', 'fastTanh', 'softcap30', 'softcap15',
  'isnan', 'isinf', 'isfinite', 'logicalNot', 'anyAll', 'allAll', 'sumAll', 'meanAll', 'contiguous', 'grad', 'zeroGrad',
  'detach', 'toArray', 'tags', 'shape', 'dtype', 'device', 'requiresGrad'];
const axisOps = ['sum', 'mean', 'max', 'min', 'logsumexp', 'cumsum', 'prod', 'norm', 'softmax', 'logSoftmax', 'cumprod',
  'argmax', 'argmin', 'any', 'all'];
const poolOptions = { stride: 'pairPos', padding: 'nat', height: 'axis', width: 'axis' };
const convOptions = { stride: 'pairPos', padding: 'pairNat', dilation: 'pairPos', groups: 'pos', maxPool: 'pos', bias: 'tensor',
  axes: 'options' };
const conv1dOptions = { stride: 'pos', padding: 'nat', dilation: 'pos', groups: 'pos', bias: 'tensor', axes: 'options' };
const causalOptions = { dilation: 'pos', bias: 'tensor', axes: 'options' };
const unfoldOptions = { stride: 'pairPos', padding: 'pairNat', dilation: 'pairPos', axes: 'options' };

/** Tensor methods: name -> { self, args } (a getter or a method without arguments: args []). */
export const TENSOR = {
  ...Object.fromEntries(unaryOps.map((op) => [op, { args: [] }])),
  ...Object.fromEntries(axisOps.map((op) => [op, { args: [axis('c')] }])),
  ...Object.fromEntries(['add', 'sub', 'mul', 'div', 'maximum', 'minimum', 'pow', 'logicalAnd', 'logicalOr', 'logicalXor']
    .map((op) => [op, { args: [tensor('p')] }])),
  argsort: { args: [axis('c'), bool(true)] },
  multinomial: { self: 'p', args: [axis('c'), nat(2), nat(5), bool(false)] },
  // In-place helpers write into (acc) or consume (tk1, tk2) fixtures of their own.
  addAxisVectorInPlace: { self: 'acc', args: [axis('c'), tensor('v')] },
  addAxisVectorUnaryInPlace: { self: 'acc', args: [axis('c'), tensor('v'), raw('relu', ['swish', '', 7, null, {}])] },
  addScaledInPlace: { self: 'acc', args: [tensor('p'), num(0.5)] },
  takeAddNoGrad: { self: 'tk1', args: [tensor('v')] },
  takeScaleNoGrad: { self: 'tk2', args: [num(2)] },
  routerTopK: { self: 'p', args: [axis('c'), pos(2)] },
  ...Object.fromEntries(['scale', 'addScalar', 'subScalar', 'divScalar', 'powScalar', 'leakyRelu', 'elu']
    .map((op) => [op, { args: [num(2)] }])),
  item: { self: 's', args: [] },
  backward: { self: 's', args: [tensor('one')], skipValid: true },  // a leaf: nothing to run twice
  to: { self: 'p', args: [dtype('f16')] },
  clamp: { args: [num(0), num(1)] },
  variance: { args: [axis('c'), int(1)] },
  dot: { args: [tensor('v'), axis('c')] },
  addDot: { args: [tensor('w'), axis('c'), tensor('bias')] },
  matmul: { args: [tensor('m'), bool(false)] },
  transpose: { args: [axis('r'), axis('c')] },
  broadcastTo: { args: [tags(['n', 'r', 'c']), shape([2, 2, 3])] },
  permuteTo: { args: [tags(['c', 'r'])] },
  withTags: { args: [tags(['a', 'b'])] },
  indexSelect: { args: [axis('c'), tensor('idx')] },
  narrow: { args: [axis('c'), nat(0), nat(2)] },
  insertAxis: { args: [axis('n'), nat(0)] },
  squeeze: { self: 'sq', args: [axis('one')] },
  merge: { args: [tags(['r', 'c']), axis('rc')] },
  split: { args: [axis('c'), tags(['a', 'b']), shape([3, 1])] },
  flatten: { args: [axis('all')] },
  reshape: { args: [tags(['n']), shape([6])] },
  select: { args: [axis('c'), int(1)] },
  slice: { args: [axis('c'), nat(0), nat(2), pos(1)] },
  pad: { args: [axis('c'), nat(1), nat(1), num(0)] },
  maskedFill: { args: [tensor('mask'), num(0)] },
  tril: { args: [axis('r'), axis('c'), int(0)] },
  triu: { args: [axis('r'), axis('c'), int(0)] },
  bandPart: { args: [axis('r'), axis('c'), int(1), int(1)] },
  layerNorm: { args: [axis('c'), options({ eps: 1e-5 }, { eps: 'number', weight: 'tensor', bias: 'tensor' })] },
  rmsNorm: { args: [axis('c'), num(1e-6)] },
  rmsNormMul: { args: [axis('c'), tensor('v'), num(1e-6)] },
  l2Normalize: { args: [axis('c'), num(1e-12)] },
  crossEntropy: { args: [tensor('lab'), axis('c'), loss({ labelSmoothing: 0.1 }, { labelSmoothing: 'number' })] },
  nllLoss: { args: [tensor('lab'), axis('c'), loss('sum')] },
  mseLoss: { args: [tensor('p'), loss('none')] },
  huberLoss: { args: [tensor('p'), loss({ delta: 1 }, { delta: 'number' })] },
  bceLoss: { self: 'p', args: [tensor('p'), loss('mean')] },
  bceWithLogitsLoss: { args: [tensor('p'), loss('sum')] },
  klDivLoss: { args: [tensor('p'), loss({ logTarget: false }, { logTarget: 'bool' })] },
  gather: { args: [axis('c'), tensor('gidx')] },
  takeAlongAxis: { args: [axis('c'), tensor('gidx')] },
  scatterAdd: { args: [axis('c'), tensor('gidx'), tensor('p')] },
  swiglu: { self: 'even', args: [axis('c')] },
  geglu: { self: 'even', args: [axis('c')] },
  glu: { self: 'even', args: [axis('c')] },
  splitGated: { self: 'even', args: [axis('c'), raw('silu', ['swish', 'SILU', 7, null, {}])] },
  gated: { args: [tensor('p'), raw('gelu', ['tanh', 7, null, {}])] },
  situ: { args: [tensor('p'), num(30)] },
  unary: { args: [raw('relu', ['swish', '', 7, null, {}])] },
  biasAdd: { args: [axis('c'), floats([1, 2, 3])] },
  snake: { args: [tensor('v')] },
  prelu: { args: [tensor('v')] },
  sumMany: { args: [tags(['r', 'c'])] },
  standardizeAxis: { args: [axis('c'), num(1e-5)] },
  normAll: { args: [num(2)] },
  linearRecurrence: { args: [tensor('p'), axis('c')] },
  topK: { args: [axis('c'), nat(2), bool(true)] },
  sort: { args: [axis('c'), bool(false)] },
  rmsNormMulAdd: { args: [axis('c'), tensor('v'), tensor('v'), num(1e-6)] },
  groupNorm: { self: 'even', args: [pos(2), axis('c'), options({ batch: ['r'] }, { weight: 'tensor', bias: 'tensor', batch: 'tags', eps: 'number' })] },
  cosineSimilarity: { args: [tensor('p'), axis('c'), num(1e-8)] },
  crossEntropyExt: { args: [tensor('lab'), axis('c'), loss({ labelSmoothing: 0.1 },
    { labelSmoothing: 'number', ignoreIndex: 'int', weight: 'tensor', zLoss: 'number' })] },
  linearCrossEntropyExt: { self: 'lin', args: [tensor('wlin'), tensor('labLin'), axis('in'), axis('c'),
    loss({ chunkRows: 1 }, { labelSmoothing: 'number', ignoreIndex: 'int', weight: 'tensor', zLoss: 'number', chunkRows: 'pos' })] },
  linearDistillExt: { self: 'lin', args: [tensor('wlin'), tensor('teacherLin'), axis('in'), axis('c'),
    loss({ temperature: 2 }, { temperature: 'number', alpha: 'number', labels: 'tensor', teacherProbs: 'bool', ignoreIndex: 'int', chunkRows: 'pos' })] },
  dotTernarySte: { args: [tensor('v'), axis('c')] },
  rmsNormMulRopeHalfPrepared: { self: 'q', args: [tensor('qw'), tensor('qcos'), tensor('qsin'), axis('d'),
    options({ offset: 0 }, { position: 'axis', offset: 'nat', eps: 'number' })] },
  rope: { self: 'q', args: [options({ base: 100 }, { position: 'axis', dim: 'axis', base: 'number', offset: 'nat',
    mode: ['full', 7, null] })] },
  dropout: { args: [num(0.5), nat(1)] },
  quantize: { self: 'w32', args: [dtype('q8_0'), axis('c')] },
  conv2d: { self: 'img', args: [tensor('wconv'), options({ stride: 1 }, convOptions)] },
  conv2dRelu: { self: 'img', args: [tensor('wconv'), options({ padding: 1 }, convOptions)] },
  conv1d: { self: 'seq', args: [tensor('wseq'), options({ stride: 1 }, conv1dOptions)] },
  convTranspose1d: { self: 'seq', args: [tensor('wseqT'), options({ stride: 2 }, { ...conv1dOptions, outputPadding: 'nat' })] },
  causalConv1d: { self: 'seq', args: [tensor('wseq'), options({ dilation: 2 }, causalOptions)] },
  groupedCausalConv1d: { self: 'seq', args: [tensor('wseq'), pos(1), options({}, causalOptions)] },
  causalDepthwiseConv1d: { self: 'seq', args: [tensor('wseq'), options({}, { bias: 'tensor', axes: 'options' })] },
  unfold: { self: 'img', args: [pairPos(2), options({ stride: 1 }, unfoldOptions)] },
  fold: { self: 'cols', args: [pairPos(1), pairPos(1), options({}, unfoldOptions)] },
  channelAffine: { self: 'img', args: [tensor('c1'), tensor('c1'), axis('c')] },
  maxPool2d: { self: 'img', args: [pairPos(2), options({}, poolOptions)] },
  avgPool2d: { self: 'img', args: [pairPos(2), options({}, poolOptions)] },
  upsample2xNearest: { self: 'img', args: [axis('h'), axis('w')] },
  compare: { args: [tensor('p'), raw('lt', ['equal', 'EQ', 7, null, {}])] },
  // views, flips and shifts
  alignTo: { args: [tags(['n', 'c', 'r'])] },
  viewWithStrides: { args: [tags(['w', 'k']), shape([2, 2]), shape([1, 1]), nat(1)] },
  materialize: { args: [] },
  sliceStep: { args: [axis('c'), int(-1), int(-4), int(-1)] },
  zeroPad2d: { args: [axis('r'), axis('c'), int(1), int(-1), int(0), int(2)] },
  constantPad2d: { args: [axis('r'), axis('c'), int(0), int(1), int(1), int(0), num(-1)] },
  unbindInto: { args: [axis('c')] },
  repeatAxis: { args: [axis('r'), nat(2), bool(true)] },
  flip: { args: [axis('c')] },
  roll: { args: [axis('c'), int(-4)] },
  rollBy: { args: [axis('c'), axis('r'), tensor('lab')] },
  shiftBy: { args: [axis('c'), axis('r'), tensor('lab')] },
  relposShift: { args: [axis('r'), axis('c')] },
  // diagonals, masked selection and indexed updates; rows: {r: 2, c: 2}
  diagonal: { args: [axis('r'), axis('c'), int(0), axis('d')] },
  trace: { args: [axis('r'), axis('c')] },
  diag: { self: 'v', args: [tags(['c']), tags(['i', 'j']), int(1)] },
  diagEmbed: { self: 'v', args: [axis('c'), axis('i'), axis('j'), int(-1)] },
  indexAdd: { args: [axis('c'), tensor('idx'), tensor('rows')] },
  scatter: { args: [axis('c'), tensor('gidx'), tensor('p')] },
  maskedSelect: { args: [tensor('mask'), axis('k')] },
  maskedScatter: { args: [tensor('mask'), tensor('p')] },
  setSlice: { args: [axis('c'), nat(1), tensor('rows')] },
  setRows: { args: [axis('c'), tensor('idx'), tensor('rows')] },
  zeroSlice: { args: [axis('c'), nat(0), nat(2)] },
  zeroRows: { args: [axis('c'), tensor('idx')] },
  // the prepared convolution: a PreparedConv2d handle, live or disposed
  conv2dPrepared: { self: 'img', args: [raw('@prep', [null, 42, {}, 'x', '@wconv', '@prepGone'])] },
  conv2dPreparedRelu: { self: 'img', args: [raw('@prep', [null, 42, {}, 'x', '@wconv', '@prepGone'])] },
  // the packed products: a PackedRhs, live or disposed; dotPacked's bias may be null
  dotPacked: { self: 'v', args: [raw('@packed', packedBad), raw('@bias', ['@gone', '@foreign', '@v', 42, {}, 'x'])] },
  rmsNormMulDotPacked: { self: 'v', args: [tensor('v'), raw('@packed', packedBad), num(1e-6)] },
  splitSwiGluDotPacked: { self: 'even', args: [raw('@packedHalf', [...packedBad, '@packed'])] },
  gegluQuantDotPacked: { self: 'x64', args: [raw('@packedQ8', [...packedBad, '@packed'])] },
};
/** Public Tensor members with nothing to get wrong, and why. */
export const TENSOR_EXEMPT = { dispose: 'idempotent, no arguments', isDisposed: 'a flag that never throws',
  data: 'no arguments, async (tests/js/webgpu.test.mjs reads every device)',
  toString: 'no arguments, never throws (a disposed tensor says so; tests/js/polish.test.mjs)' };

// scale: null is the default 1/sqrt(D).
const attentionOptions = { heads: 'axis', time: 'axis', dim: 'axis', causal: 'bool', scale: ['1', {}, [], true] };
const vjp = { forward: ([a]) => a.scale(2), backward: (_i, _o, gy) => [gy.scale(2)] };

/** fc methods. */
export const FC = {
  variable: { args: [tags(['d']), shape([2]), values([1, 2])] },
  constant: { args: [tags(['d']), shape([2]), values([1, 2]), dtype('i32')] },
  full: { args: [tags(['d']), shape([2]), num(3), dtype('f32')] },
  zeros: { args: [tags(['d']), shape([2]), dtype('f32')] },
  ones: { args: [tags(['d']), shape([2]), dtype('f16')] },
  scalar: { args: [num(1), dtype('f32')] },
  uniform: { args: [tags(['d']), shape([2]), num(0), num(1), nat(3)] },
  normal: { args: [tags(['d']), shape([2]), num(0), num(1), nat(3)] },
  encodeSafetensors: { args: [raw({ w: '@x' }, [null, 7, 'x', [], { w: '@gone' }, { w: '@foreign' }, { w: 42 }]),
    raw({ k: 'v' }, [null, 7, 'x', { k: 1 }, { k: null }])] },
  decodeSafetensors: { args: [raw('@bytes', ['@corrupt', null, 'x', [1, 2], new Uint16Array(4)])] },
  concat: { args: [tensors('x', 'p'), axis('r')] },
  stack: { args: [tensors('x', 'p'), axis('s')] },
  einsum: { args: [tensor('x'), tensor('v'), tags(['r'])] },
  einsumMany: { args: [tensors('x', 'v', 'p'), tags(['r'])] },
  bandMask: { args: [axis('q'), axis('k'), nat(2), nat(3), raw(-1, [-2, 1.5, NaN, '0', null]), raw(0, [-2, 1.5, NaN, '0', null])] },
  where: { args: [tensor('mask'), tensor('x'), tensor('p')] },
  groupedAttention: { args: [tensor('q4'), tensor('q4'), tensor('q4'), options({ causal: false }, attentionOptions)] },
  noGrad: { args: [fn(() => 1)] },
  scope: { args: [fn(() => 1)] },
  checkpoint: { args: [fn((a) => a.exp()), tensors('x')] },
  checkpointTail: { args: [fn('@tail')] },
  customVjp: { args: [raw(vjp, [null, 7, {}, { forward: () => 1 }, { backward: () => [] }]), tensors('x')] },
  gradcheck: { args: [fn((a) => a.mul(a).sumAll()), tensors('x'),
    options({}, { eps: 'number', absTol: 'number', relTol: 'number', printMismatch: 'bool' })] },
  prepareConv2dWeights: { args: [tensor('wconv'), options({ padding: 1 }, convOptions)] },
  packRhs: { args: [tensor('w'), axis('c')] },
};
export const FC_EXEMPT = { isGradEnabled: 'no arguments', memory: 'no arguments', resetPeak: 'no arguments', trimCache: 'no arguments',
  sync: 'no arguments, async', defaultDevice: "a setter: its bad values are in tests/js/webgpu.test.mjs" };

const sgdOptions = { lr: 'number', momentum: 'number', dampening: 'number', nesterov: 'bool', weightDecay: 'number' };
const adamOptions = { lr: 'number', betas: [[0.9], [0.9, 'x'], 'x', null], eps: 'number', weightDecay: 'number' };
const lr = (v) => raw(v, ['1', null, -1, NaN, Infinity]);

/** fc.optim functions. */
export const OPTIM = {
  sgd: { args: [tensors('x'), options({ lr: 0.1 }, sgdOptions)] },
  adam: { args: [tensors('x'), options({ lr: 0.1 }, adamOptions)] },
  adamw: { args: [tensors('x'), options({ lr: 0.1 }, adamOptions)] },
  clipGradNorm: { args: [tensors('x'), num(1)] },
  clipGradNormTensor: { args: [tensors('x'), num(1)] },
  linearWarmup: { args: [nat(1), nat(10), lr(0.1)] },
  cosineDecay: { args: [nat(1), pos(10), lr(0.1), lr(0)] },
  warmupCosine: { args: [lr(0.1), nat(2), raw(10, [2, 1.5, NaN, '10']), lr(0)] },
};

const gptKeys = { vocab: 'pos', context: 'pos', dModel: 'pos', heads: 'pos', layers: 'pos', mlp: 'pos', checkpointBlocks: 'bool' };
const cnnKeys = { image: 'pos', channels: 'pos', conv1: 'pos', conv2: 'pos', hidden: 'pos', classes: 'pos' };
export const GPT = { vocab: 8, context: 4, dModel: 4, heads: 1, layers: 1, mlp: 4 };
export const GPT2 = { vocab_size: 8, n_positions: 4, n_embd: 4, n_layer: 1, n_head: 1 };
const gpt2Keys = { dtype: ['i32', 'f64', 'f128', 7, null], trainable: 'bool', checkpointBlocks: 'bool' };
const gpt2Configs = [null, 7, 'x', [], { n_embd: 4 }, { ...GPT2, n_head: 3 }, { ...GPT2, vocab_size: -1 },
  { ...GPT2, vocab_size: 1.5 }, { ...GPT2, n_embd: '4' }, { ...GPT2, n_layer: 0 }, { ...GPT2, n_positions: 0 },
  { ...GPT2, activation_function: 'relu' }, { ...GPT2, tie_word_embeddings: false }, { ...GPT2, n_layer: 1n },
  { ...GPT2, layer_norm_epsilon: -1 }];
export const LLAMA = { model_type: 'llama', vocab_size: 8, hidden_size: 4, num_hidden_layers: 1, num_attention_heads: 2,
  num_key_value_heads: 1, intermediate_size: 8, max_position_embeddings: 4 };
const llamaConfigs = [null, 7, 'x', [], { hidden_size: 4 }, { ...LLAMA, num_key_value_heads: 3 }, { ...LLAMA, vocab_size: -1 },
  { ...LLAMA, vocab_size: 1.5 }, { ...LLAMA, hidden_size: '4' }, { ...LLAMA, num_hidden_layers: 0 },
  { ...LLAMA, model_type: 'gpt2' }, { ...LLAMA, hidden_act: 'gelu' }, { ...LLAMA, rope_scaling: { rope_type: 'yarn' } },
  { ...LLAMA, rms_norm_eps: -1 }, { ...LLAMA, num_hidden_layers: 1n }, { ...LLAMA, head_dim: 3 }];
const loraKeys = { rank: 'pos', alpha: ['8', null, -1, NaN, Infinity], dropout: ['0.1', null, -0.1, 1, NaN],
  targets: [[], ['nope'], 'c_attn', [7], [''], null], seed: 'nat' };
export const CNN = { image: 10, conv1: 1, conv2: 1, hidden: 2, classes: 2 };

/** fc.nn: functions, and classes (construct: true) with their methods under 'Class#method'. */
export const NN = {
  Linear: { construct: true, args: [axis('in'), axis('out'), pos(2), pos(2), nat(0), options({ bias: false }, { bias: 'bool' })] },
  Conv2d: { construct: true, args: [axis('c'), axis('out'), pos(1), pos(2), pos(1), nat(0),
    options({}, { stride: 'pairPos', padding: 'pairNat', dilation: 'pairPos', groups: 'pos', axes: 'options' })] },
  LayerNorm: { construct: true, args: [axis('e'), pos(4), num(1e-5)] },
  Embedding: { construct: true, args: [axis('v'), axis('e'), pos(4), pos(2), num(0.02), nat(0)] },
  Mlp: { construct: true, args: [options({ sizes: [2, 2] }, { sizes: [[2], [2, 0], [2, 1.5], 'x', null] }), nat(0)] },
  Cnn: { construct: true, args: [options(CNN, cnnKeys), nat(0)] },
  Gpt: { construct: true, args: [options(GPT, gptKeys), nat(0)] },
  subSeed: { args: [nat(1), nat(2)] },
  saveParameters: { args: [tensors('x'), raw({}, [null, 7, { k: 1 }])] },
  loadParameters: { args: [tensors('x'), raw('@params', ['@corrupt', null, 'x', '@bytes'])] },
  // Layer methods, on a model the test builds (model fixtures named after the class).
  'Linear#forward': { self: '#Linear', args: [tensor('lin')] },
  'Conv2d#forward': { self: '#Conv2d', args: [tensor('img')] },
  'Conv2d#forwardRelu': { self: '#Conv2d', args: [tensor('img')] },
  'LayerNorm#forward': { self: '#LayerNorm', args: [tensor('emb')] },
  'Embedding#forward': { self: '#Embedding', args: [tensor('ids')] },
  'Mlp#forward': { self: '#Mlp', args: [tensor('lin')] },
  'Cnn#forward': { self: '#Cnn', args: [tensor('img10')] },
  'Gpt#forward': { self: '#Gpt', args: [tensor('tokens')] },
  'Gpt#loss': { self: '#Gpt', args: [tensor('tokens')] },
  // to(the device it is on) moves nothing: the shared fixtures stay as they are.
  ...Object.fromEntries(['Linear', 'Conv2d', 'LayerNorm', 'Embedding', 'Mlp', 'Cnn', 'Gpt']
    .map((c) => [`${c}#to`, { self: `#${c}`, args: [raw('cpu', ['gpu', 7, null, {}])] }])),
  // freezeProjections changes its model (its valid call, in a scope, frees the new weights): a model of its own.
  'Gpt#freezeProjections': { self: '#GptToFreeze', args: [raw('f32', ['i32', 'f128', 7, null, {}])] },
  'Gpt#generate': { self: '#Gpt', args: [raw([1, 2], [[], [16], [-1], [1.5], ['1'], [NaN], 'x', null, {}]),
    options({ maxTokens: 2 }, { maxTokens: 'nat', temperature: [-1, NaN, Infinity, '1', null], topK: [-1, 1.5, null],
      seed: 'nat', onToken: 'fn' })] },
  'Gpt#generateAsync': { self: '#Gpt', async: true, args: [raw([1, 2], [[], [16], [-1], [1.5], ['1'], [NaN], 'x', null, {}]),
    options({ maxTokens: 2 }, { maxTokens: 'nat', temperature: [-1, NaN, Infinity, '1', null], topK: [-1, 1.5, null],
      seed: 'nat', onToken: 'fn' })] },
  // GPT-2 and LoRA (bound C++). Methods that change a model each have a model of their own.
  Gpt2: { construct: true, args: [raw(GPT2, gpt2Configs), nat(0), options({}, gpt2Keys)] },
  'Gpt2.load': { args: [raw('@gpt2Bytes', ['@corrupt', '@adapterBytes', null, 'x', [1, 2]]), raw(GPT2, gpt2Configs),
    options({}, gpt2Keys)] },
  'Gpt2#logits': { self: '#Gpt2', args: [tensor('tokens')] },
  'Gpt2#loss': { self: '#Gpt2', args: [tensor('tokens')] },
  'Gpt2#generate': { self: '#Gpt2', args: [raw([1, 2], [[], [8], [-1], [1.5], ['1'], [NaN], 'x', null, {}]),
    options({ maxTokens: 2 }, { maxTokens: 'nat', temperature: [-1, NaN, Infinity, '1', null], topK: [-1, 1.5, null],
      seed: 'nat', onToken: 'fn' })] },
  'Gpt2#generateAsync': { self: '#Gpt2', async: true, args: [raw([1, 2], [[], [8], [-1], [1.5], ['1'], [NaN], 'x', null, {}]),
    options({ maxTokens: 2 }, { maxTokens: 'nat', temperature: [-1, NaN, Infinity, '1', null], topK: [-1, 1.5, null],
      seed: 'nat', onToken: 'fn' })] },
  'Gpt2#checkpointBlocks': { self: '#Gpt2', setter: true, args: [bool(true)] },
  'Gpt2#to': { self: '#Gpt2To', args: [raw('cpu', ['tpu', 'CPU', 7, null, {}])] },
  'Gpt2#addLora': { self: '#Gpt2Add', args: [options({ rank: 2 }, loraKeys)] },
  'Gpt2#loadAdapters': { self: '#Gpt2Load', args: [raw('@adapterBytes', ['@corrupt', '@gpt2Bytes', '@bytes', null, 'x']),
    raw(undefined, [{ rank: 0 }, { bogus: 1 }, 7, null])] },
  lora: { args: [raw('@#Gpt2ForLora', [null, {}, 7, '@#Gpt']), options({ rank: 2 }, loraKeys)] },
  // Llama-family models (bound C++), and PEFT's files.
  Llama: { construct: true, args: [raw(LLAMA, llamaConfigs), nat(0), options({}, gpt2Keys)] },
  'Llama.load': { args: [raw('@llamaBytes', ['@corrupt', '@adapterBytes', '@gpt2Bytes', null, 'x', [1, 2], [], ['@llamaBytes', 'x']]),
    raw(LLAMA, llamaConfigs), options({}, gpt2Keys)] },
  'Llama.loadAsync': { async: true, args: [raw('@llamaBlob', ['@llamaBytes', null, 'x', [], [null]]), raw(LLAMA, llamaConfigs),
    options({}, gpt2Keys)] },
  'Llama#logits': { self: '#Llama', args: [tensor('tokens')] },
  'Llama#loss': { self: '#Llama', args: [tensor('tokens')] },
  'Llama#generate': { self: '#Llama', args: [raw([1, 2], [[], [8], [-1], [1.5], ['1'], [NaN], 'x', null, {}]),
    options({ maxTokens: 2 }, { maxTokens: 'nat', temperature: [-1, NaN, Infinity, '1', null], topK: [-1, 1.5, null],
      seed: 'nat', onToken: 'fn' })] },
  'Llama#generateAsync': { self: '#Llama', async: true, args: [raw([1, 2], [[], [8], [-1], [1.5], ['1'], [NaN], 'x', null, {}]),
    options({ maxTokens: 2 }, { maxTokens: 'nat', temperature: [-1, NaN, Infinity, '1', null], topK: [-1, 1.5, null],
      seed: 'nat', onToken: 'fn' })] },
  'Llama#checkpointBlocks': { self: '#Llama', setter: true, args: [bool(true)] },
  'Llama#to': { self: '#LlamaTo', args: [raw('cpu', ['tpu', 'CPU', 7, null, {}])] },
  'Llama#addLora': { self: '#LlamaAdd', args: [options({ rank: 2, targets: ['q_proj'] }, loraKeys)] },
  'Llama#loadAdapters': { self: '#LlamaLoad', args: [raw('@llamaAdapterBytes', ['@corrupt', '@llamaBytes', '@adapterBytes', null, 'x']),
    raw(undefined, [{ rank: 0 }, { bogus: 1 }, 7, null])] },
  exportPeft: { args: [raw('@#LlamaLora', [null, {}, 7, '@#Gpt', '@#Llama', '@#LlamaGone'])] },
  exportPeftAsync: { async: true, args: [raw('@#LlamaLora', [null, {}, 7, '@#Gpt', '@#Llama', '@#LlamaGone'])] },
  loadPeft: { args: [raw('@#LlamaForPeft', [null, {}, 7, '@#Gpt', '@#LlamaGone']),
    raw('@llamaPeftBytes', ['@corrupt', '@llamaBytes', '@adapterBytes', null, 'x']),
    raw('@llamaPeftConfig', [null, 7, 'x', [], {}, { peft_type: 'LORA' }, { peft_type: 'LORA', r: 2, target_modules: ['nope'] },
      { peft_type: 'LORA', r: 2, target_modules: ['q_proj', 'down_proj'], use_dora: true },
      { peft_type: 'IA3', r: 2, target_modules: ['q_proj', 'down_proj'] },
      { peft_type: 'LORA', r: 3, target_modules: ['q_proj', 'down_proj'] }])] },
  LoraLinear: { construct: true, args: [tensor('wl'), raw(null, ['@gone', '@foreign', '@v', '@wl', 42, {}]), axis('in'),
    raw('out', [7, null, '', 'in', 'zz'])] },
  'LoraLinear#adapt': { self: '#LoraLinear', args: [options({ rank: 2 }, { rank: 'pos', alpha: loraKeys.alpha,
    dropout: loraKeys.dropout, seed: 'nat' })] },
  'LoraLinear#forward': { self: '#LoraLinear', args: [tensor('lin'), nat(3)] },
};
export const NN_EXEMPT = {
  ...Object.fromEntries(['Linear', 'Conv2d', 'LayerNorm', 'Embedding', 'Mlp', 'Cnn', 'Gpt', 'Gpt2', 'Llama', 'LoraLinear']
    .map((c) => [`${c}#parameters`, 'no arguments'])),
  ...Object.fromEntries(['Linear', 'Conv2d', 'Mlp', 'Cnn'].map((c) => [`${c}#pack`, 'no arguments'])),
  // No arguments: what they refuse (a disposed model or layer, no adapters) is in ENGINE and PARTIAL.
  ...Object.fromEntries(['config', 'dtype', 'device', 'isDisposed', 'namedTensors', 'layers', 'save', 'saveAdapters', 'mergeAdapters', 'dispose']
    .flatMap((m) => [[`Gpt2#${m}`, 'no arguments'], [`Llama#${m}`, 'no arguments']])),
  ...Object.fromEntries(['merge', 'weight', 'bias', 'a', 'b', 'in', 'out', 'scale', 'isDisposed', 'dispose']
    .map((m) => [`LoraLinear#${m}`, 'no arguments'])),
};

/** Optimizer methods and accessors, on an optimizer the test builds. */
export const OPTIMIZER = ['step', 'zeroGrad', 'lr', 'params', 'isDisposed', 'dispose'];

/** The package's exported functions (data helpers and init); async ones are awaited. */
export const MODULE = {
  parseIdx: { args: [raw('@idxBytes', ['@idxTruncated', '@idxCount', '@idxType', null, 'x', [0, 0, 8, 1]])] },
  readIdx: { async: true, args: [raw('@idxFile', ['@gzTruncated', '/nonexistent/file', 42, null])] },
  shuffledIndices: { args: [raw(5, [-1, 1.5, NaN, 2 ** 32, 2 ** 53, '5', null]), raw(1, ['x', 1.5, NaN, null, {}])] },
  loadFashionMnist: { async: true, skipValid: true, args: [raw({ train: false }, [{ bogus: 1 }, 'x', 7, { base: '/nonexistent' }])] },
  makeBatch: { args: [raw('@fc', [null, {}]), raw('@split', [null, {}, 'x']), raw([0], [[5], [-1], [NaN], [0.5], 'x', null]),
    nat(0), nat(1)] },
  init: { async: true, skipValid: true, args: [raw({ variant: 'simd' }, [{ variant: 'x' }, { thread: 1 }, 7, 'simd', null,
    { variant: 'threaded-simd', threads: 0 }, { variant: 'threaded-simd', threads: 2.5 }, { variant: 'threaded-simd', threads: 2 ** 53 },
    { variant: 'simd', backend: 'gpu' }, { variant: 'simd', backend: null }])] },
};
export const MODULE_EXEMPT = { FucinaError: 'a class', Tensor: 'a class', Optimizer: 'a class', PackedRhs: 'a class',
  relaxedSimdSupported: 'no arguments' };

/** Well-typed calls the engine itself must refuse: unknown axes, wrong dtypes, shapes, indices. */
export const ENGINE = {
  'sum over an unknown axis': (f) => f.x.sum('nope'),
  'softmax over an unknown axis': (f) => f.x.softmax('nope'),
  'dot over an unshared axis': (f) => f.x.dot(f.v, 'r'),
  'transpose to an unknown axis': (f) => f.x.transpose('r', 'zz'),
  'permuteTo missing an axis': (f) => f.x.permuteTo(['r']),
  'broadcastTo fewer axes': (f) => f.x.broadcastTo(['r'], [2]),
  'reshape to another count': (f) => f.x.reshape(['n'], [7]),
  'split into the wrong extents': (f) => f.x.split('c', ['a', 'b'], [2, 2]),
  'squeeze an axis of extent 2': (f) => f.x.squeeze('r'),
  'insertAxis past the rank': (f) => f.x.insertAxis('n', 3),
  'insertAxis with an existing name': (f) => f.x.insertAxis('r', 0),
  'merge into an existing name': (f) => f.x.merge(['r'], 'c'),
  'withTags of the wrong rank': (f) => f.x.withTags(['a']),
  'add of mismatched extents': (f) => f.x.add(f.c4),
  'narrow past the end': (f) => f.x.narrow('c', 2, 5),
  'select past the end': (f) => f.x.select('c', 3),
  'select before the start': (f) => f.x.select('c', -4),
  'slice with start > end': (f) => f.x.slice('c', 2, 1),
  'slice past the end': (f) => f.x.slice('c', 0, 9),
  'indexSelect of an index out of range': (f) => f.x.indexSelect('c', f.idxOut),
  'indexSelect with f32 indices': (f) => f.x.indexSelect('c', f.p),
  'gather of an index out of range': (f) => f.x.gather('c', f.gidxOut),
  'crossEntropy with f32 labels': (f) => f.x.crossEntropy(f.p.sum('c'), 'c'),
  'crossEntropy with a label out of range': (f) => f.x.crossEntropy(f.labOut, 'c'),
  'to() an unknown dtype': (f) => f.p.to('q4'),
  'to(q8_0), which quantize makes': (f) => f.p.to('q8_0'),
  'quantize to f16': (f) => f.w32.quantize('f16', 'c'),
  'quantize along an axis of extent 3': (f) => f.p.quantize('q8_0', 'c'),
  'exp of i32': (f) => f.lab.exp(),
  'exp of a grad-requiring f16': (f) => f.hv.exp(),
  'add of i32 and f32': (f) => f.idx.add(f.v),
  'a variable cast to i32': (f) => f.x.to('i32'),
  'item of 6 values': (f) => f.x.item(),
  'backward of a non-scalar': (f) => f.x.mul(f.x).backward(),
  'backward of a constant': (f) => f.p.sumAll().backward(),
  'a seed of the wrong shape': (f) => f.s.backward(f.c4),
  'concat of nothing': (f) => f.fc.concat([], 'r'),
  'einsum to an unknown axis': (f) => f.fc.einsum(f.x, f.v, ['zz']),
  'constant with too few values': (f) => f.fc.constant(['d'], [3], [1, 2]),
  'a duplicate axis name': (f) => f.fc.zeros(['d', 'd'], [1, 1]),
  'an empty axis name': (f) => f.fc.zeros([''], [1]),
  'dropout with p = 2': (f) => f.x.dropout(2, 1),
  'clamp with lo > hi': (f) => f.x.clamp(1, 0),
  'conv2d of a mismatched weight': (f) => f.img.conv2d(f.w),
  'maxPool2d with a kernel above the image': (f) => f.img.maxPool2d(5),
  'rope over an odd dim': (f) => f.x.rope({ position: 'r', dim: 'c' }),
  'groupedAttention of mismatched heads': (f) => f.fc.groupedAttention(f.q4, f.x, f.x),
  'decodeSafetensors of an empty array': (f) => f.fc.decodeSafetensors(new Uint8Array(0)),
  'decodeSafetensors with a lying header length': (f) => f.fc.decodeSafetensors(Uint8Array.from([255, 255, 255, 255, 0, 0, 0, 0, 123, 125])),
  'loadParameters of another model': (f) => f.fc.nn.loadParameters([f.p, f.x], f.params),
  'an optimizer with a negative lr': (f) => f.fc.optim.sgd([f.x], { lr: -1 }),
  'an optimizer over a constant': (f) => f.fc.optim.adam([f.p]),
  'gradcheck of constants only': (f) => f.fc.gradcheck((a) => a.sumAll(), [f.p]),
  'gradcheck with eps < 0': (f) => f.fc.gradcheck((a) => a.sumAll(), [f.x], { eps: -1 }),
  'a Gpt2 given tokens past its vocabulary': (f) => f['#Gpt2'].logits(f.tokensOut),
  'a Llama given tokens past its vocabulary': (f) => f['#Llama'].logits(f.tokensOut),
  'a Llama given more positions than it has': (f) => f['#Llama'].logits(f.fc.zeros(['batch', 't'], [1, 5], 'i32')),
  'a Llama given tokens with its own axis': (f) => f['#Llama'].logits(f.fc.zeros(['kv', 't'], [1, 2], 'i32')),
  'a Llama loaded with another config': (f) => f.fc.nn.Llama.load(f.llamaBytes, { ...LLAMA, intermediate_size: 16 }),
  'a q8_0 Llama of width 4 (q8_0 needs multiples of 32)': (f) => new f.fc.nn.Llama(LLAMA, 0, { dtype: 'q8_0' }),
  'a Gpt2 given f32 tokens': (f) => f['#Gpt2'].logits(f.p),
  'a Gpt2 given tokens without t': (f) => f['#Gpt2'].logits(f.idx),
  'a Gpt2 given more positions than it has': (f) => f['#Gpt2'].logits(f.fc.zeros(['batch', 't'], [1, 5], 'i32')),
  'a Gpt2 loss of one position': (f) => f['#Gpt2'].loss(f.fc.zeros(['batch', 't'], [1, 1], 'i32')),
  'a Gpt2 given tokens with its own axis': (f) => f['#Gpt2'].logits(f.fc.zeros(['e', 't'], [1, 2], 'i32')),
  'saveAdapters of a model without adapters': (f) => f['#Gpt2Bare'].saveAdapters(),
  'addLora on a model with adapters': (f) => f['#Gpt2Lora'].addLora(),
  'loadAdapters of another rank': (f) => f['#Gpt2Lora'].loadAdapters(f.adapterBytes4),
  'LoraLinear.forward without the input axis': (f) => f['#LoraLinear'].forward(f.v),
  'LoraLinear.forward of the wrong width': (f) => f['#LoraLinear'].forward(f.x.withTags(['r', 'in'])),
  'LoraLinear.adapt of rank 0': (f) => f['#LoraLinear'].adapt({ rank: 0 }),
  'LoraLinear of a 3-axis weight': (f) => new f.fc.nn.LoraLinear(f.img, null, 'c', 'h'),
  'LoraLinear of an i32 weight': (f) => new f.fc.nn.LoraLinear(f.gidx, null, 'r', 'c'),
  'addScaledInPlace into a variable': (f) => f.x.addScaledInPlace(f.p, 1),
  'addAxisVectorInPlace of a vector with another axis': (f) => f.acc.addAxisVectorInPlace('r', f.v),
  'addAxisVectorUnaryInPlace into a 16-bit tensor': (f) => f.h.addAxisVectorUnaryInPlace('d', f.h, 'relu'),
  'takeAddNoGrad of a variable (not consumed)': (f) => f.x.takeAddNoGrad(f.p),
  'takeScaleNoGrad of a variable (not consumed)': (f) => f.x.takeScaleNoGrad(2),
  'routerTopK with k past the experts': (f) => f.p.routerTopK('c', 4),
  'routerTopK of a variable': (f) => f.x.routerTopK('c', 1),
  // views, flips and shifts
  'alignTo without an axis of the tensor': (f) => f.x.alignTo(['r']),
  'alignTo naming an axis twice': (f) => f.x.alignTo(['r', 'c', 'r']),
  'viewWithStrides past the last element': (f) => f.x.viewWithStrides(['d'], [3], [2], 2),
  'viewWithStrides with strides past the end': (f) => f.x.viewWithStrides(['d', 'e'], [3, 3], [2 ** 52, 2 ** 52]),
  'sliceStep with step 0': (f) => f.x.sliceStep('c', 0, 2, 0),
  'zeroPad2d cropping more than the extent': (f) => f.x.zeroPad2d('r', 'c', -2, -2, 0, 0),
  'zeroPad2d of one axis twice': (f) => f.x.zeroPad2d('c', 'c', 1, 1, 1, 1),
  'flip of q8_0': (f) => f.w32.quantize('q8_0', 'c').flip('c'),
  'roll over an unknown axis': (f) => f.x.roll('nope', 1),
  'rollBy with f32 shifts': (f) => f.x.rollBy('c', 'r', f.p.sum('c')),
  'rollBy with shifts of the wrong extent': (f) => f.x.rollBy('c', 'r', f.idx),
  'shiftBy along its own shift axis': (f) => f.x.shiftBy('r', 'r', f.lab),
  'relposShift with one axis twice': (f) => f.x.relposShift('c', 'c'),
  // diagonals, masked selection and indexed updates
  'diagonal of one axis twice': (f) => f.x.diagonal('r', 'r', 0, 'd'),
  'diagonal into a kept axis': (f) => f.img.diagonal('h', 'w', 0, 'c'),
  'diag from three names': (f) => f.x.diag(['r', 'c', 'r'], ['d']),
  'diag of a matrix into two names': (f) => f.x.diag(['r', 'c'], ['i', 'j']),
  'diag (matrix to vector) of three axes': (f) => f.img.diag(['h', 'w'], ['d']),
  'diagEmbed into one name twice': (f) => f.v.diagEmbed('c', 'i', 'i'),
  'diagEmbed with an offset past int64': (f) => f.v.diagEmbed('c', 'i', 'j', 2 ** 53 - 1),
  'indexAdd of an index out of range': (f) => f.x.indexAdd('c', f.idxOut, f.fc.ones(['r', 'c'], [2, 1])),
  'indexAdd with f32 indices': (f) => f.x.indexAdd('c', f.v, f.x),
  'indexAdd of a source of the wrong extent': (f) => f.x.indexAdd('c', f.idx, f.x),
  'scatter of an index out of range': (f) => f.x.scatter('c', f.gidxOut, f.p),
  'maskedSelect with an i32 mask': (f) => f.x.maskedSelect(f.gidx, 'k'),
  'maskedSelect with a mask of other axes': (f) => f.x.maskedSelect(f.fc.constant(['k'], [2], [1, 0], 'u8'), 'k'),
  'maskedScatter from too small a source': (f) => f.x.maskedScatter(f.mask, f.bias),
  'setSlice past the end': (f) => f.x.setSlice('c', 2, f.rows),
  'setSlice of another dtype': (f) => f.x.setSlice('c', 0, f.gidx),
  'setRows with a negative index': (f) => f.x.setRows('c', f.fc.constant(['k'], [2], [-1, 0], 'i32'), f.rows),
  'zeroSlice with start > end': (f) => f.x.zeroSlice('c', 2, 1),
  'zeroSlice past the end': (f) => f.x.zeroSlice('c', 0, 4),
  'zeroRows of an index out of range': (f) => f.x.zeroRows('c', f.idxOut),
};

/** Models failing part-way, in construction (a last layer the heap cannot hold) or in forward
 * (input of the wrong size): what they made must be freed (run outside a scope, which would
 * free it anyway). */
export const PARTIAL = {
  'a Cnn given images too small for its second conv': (f) => f['#Cnn'].forward(f.img),
  'a Cnn given images of the wrong size': (f) => f['#Cnn'].forward(f.img9),
  'a Gpt given tokens past its vocabulary': (f) => f['#Gpt'].loss(f.tokensOut),
  'an Mlp given the wrong features': (f) => f['#Mlp'].forward(f.x),
  'an Mlp whose last layer does not fit': (f) => new f.fc.nn.Mlp({ sizes: [2, 2, 2 ** 30] }),
  'a Gpt whose MLP does not fit': (f) => new f.fc.nn.Gpt({ ...GPT, mlp: 2 ** 30 }),
  'a Cnn whose hidden layer does not fit': (f) => new f.fc.nn.Cnn({ ...CNN, hidden: 2 ** 30 }),
  // GPT-2: a model failing in construction or load frees what it made; a disposed one refuses
  // every method; a failed loadAdapters on a model without adapters leaves it without them.
  'a Gpt2 whose MLP does not fit': (f) => new f.fc.nn.Gpt2({ ...GPT2, n_inner: 2 ** 29 }),
  'a q8_0 Gpt2 of width 4 (q8_0 needs multiples of 32)': (f) => new f.fc.nn.Gpt2(GPT2, 0, { dtype: 'q8_0' }),
  'a trainable f16 Gpt2': (f) => new f.fc.nn.Gpt2(GPT2, 0, { dtype: 'f16', trainable: true }),
  'a Gpt2 loaded with another config': (f) => f.fc.nn.Gpt2.load(f.gpt2Bytes, { ...GPT2, n_embd: 8, n_head: 2 }),
  'a Gpt2 loaded with one layer fewer': (f) => f.fc.nn.Gpt2.load(f.gpt2Bytes2, GPT2),
  'loadAdapters of corrupt bytes on a model without adapters': (f) => f['#Gpt2Bare'].loadAdapters(f.corrupt),
  'loadAdapters of the wrong shapes on a model without adapters': (f) =>
    f['#Gpt2Bare'].loadAdapters(f.peftBytes, { rank: 3, targets: ['c_attn'] }),
  'loadAdapters of other layers on a model without adapters': (f) =>
    f['#Gpt2Bare'].loadAdapters(f.peftBytes, { rank: 2, targets: ['c_fc'] }),
  'loadAdapters of a peft file without its options': (f) => f['#Gpt2Bare'].loadAdapters(f.peftBytes),
  'loadAdapters with a target that matches no layer': (f) => f['#Gpt2Bare'].loadAdapters(f.peftBytes, { rank: 2, targets: ['nope'] }),
  'a Gpt2 refusing a call from onToken': (f) => f['#Gpt2'].generate([1], { maxTokens: 2, onToken: () => f['#Gpt2'].addLora({ rank: 0 }) }),
  ...Object.fromEntries([['logits', (m, f) => m.logits(f.tokens)], ['loss', (m, f) => m.loss(f.tokens)],
    ['parameters', (m) => m.parameters()], ['namedTensors', (m) => m.namedTensors()], ['layers', (m) => m.layers()], ['save', (m) => m.save()],
    ['generate', (m) => m.generate([1])], ['addLora', (m) => m.addLora()], ['saveAdapters', (m) => m.saveAdapters()],
    ['loadAdapters', (m, f) => m.loadAdapters(f.adapterBytes)], ['mergeAdapters', (m) => m.mergeAdapters()],
    ['config', (m) => m.config], ['dtype', (m) => m.dtype], ['device', (m) => m.device], ['to', (m) => m.to('cpu')],
    ['checkpointBlocks', (m) => m.checkpointBlocks],
    ['checkpointBlocks =', (m) => { m.checkpointBlocks = true; }], ['lora', (m, f) => f.fc.nn.lora(m)]]
    .flatMap(([what, run]) => [[`Gpt2 ${what} after dispose`, (f) => run(f['#Gpt2Gone'], f)],
      [`Llama ${what} after dispose`, (f) => run(f['#LlamaGone'], f)]])),
  ...Object.fromEntries([['adapt', (l) => l.adapt()], ['forward', (l, f) => l.forward(f.lin)], ['merge', (l) => l.merge()],
    ['scale', (l) => l.scale]].map(([what, run]) => [`LoraLinear ${what} after dispose`, (f) => run(f['#LoraGone'], f)])),
};
