// The PyTorch parity fixtures (tests/fixtures/parity/<family>.json, written by
// tests/fixtures/parity/generate.py with python3-torch, run by hand) as the JS suites replay them:
// each fixture op's JS call and each input made as the case describes it. ops_parity.test.mjs
// replays them on the cpu and reference backends, webgpu_parity.mjs on the webgpu device, in Node
// and in a page: so this module imports nothing (parity_families.mjs reads the files in Node).

// How each fixture op maps onto the JS call: (inputs by name, args, fc) => Tensor, or [values, extras].
export const OPS = {
  floor: (i) => i.x.floor(),
  ceil: (i) => i.x.ceil(),
  round: (i) => i.x.round(),
  sign: (i) => i.x.sign(),
  fastTanh: (i) => i.x.fastTanh(),
  softcap30: (i) => i.x.softcap30(),
  softcap15: (i) => i.x.softcap15(),
  unary: (i, a) => i.x.unary(a.name),
  biasAdd: (i, a) => i.x.biasAdd(a.axis, a.bias),
  snake: (i) => i.x.snake(i.alpha),
  prelu: (i) => i.x.prelu(i.weight),
  glu: (i, a) => i.x.glu(a.axis),
  gated: (i, a) => i.x.gated(i.gate, a.act),
  splitGated: (i, a) => i.x.splitGated(a.axis, a.act),
  situ: (i, a) => i.x.situ(i.gate, a.c),
  sumMany: (i, a) => i.x.sumMany(a.axes),
  cumprod: (i, a) => i.x.cumprod(a.axis),
  standardizeAxis: (i, a) => i.x.standardizeAxis(a.axis, a.eps),
  normAll: (i, a) => i.x.normAll(a.p === 'inf' ? Infinity : a.p),
  linearRecurrence: (i, a) => i.x.linearRecurrence(i.decay, a.time, i.h0),
  topK: (i, a) => sorted(i.x.topK(a.axis, a.k, a.largest)),
  sort: (i, a) => sorted(i.x.sort(a.axis, a.descending)),
  rmsNormMulAdd: (i, a) => i.x.rmsNormMulAdd(a.axis, i.weight, i.bias, a.eps),
  groupNorm: (i, a) => i.x.groupNorm(a.groups, a.channel, { weight: i.weight, bias: i.bias, batch: a.batch, eps: a.eps }),
  cosineSimilarity: (i, a) => i.x.cosineSimilarity(i.y, a.axis, a.eps),
  rmsNormMulRopeHalfPrepared: (i, a) => i.x.rmsNormMulRopeHalfPrepared(i.weight, i.cos, i.sin, a.axis,
    { position: a.position, offset: a.offset, eps: a.eps }),
  crossEntropyExt: (i, a) => i.x.crossEntropyExt(i.target, a.class, { ...ceOptions(a), weight: i.weight }),
  linearCrossEntropyExt: (i, a) => i.x.linearCrossEntropyExt(i.w, i.target, a.axis, a.class,
    { ...ceOptions(a), weight: i.weight, chunkRows: a.chunk_rows }),
  linearDistillExt: (i, a) => i.x.linearDistillExt(i.w, i.teacher, a.axis, a.class, {
    temperature: a.temperature, alpha: a.alpha, labels: i.target, teacherProbs: a.teacher_probs,
    reduction: a.reduction, ignoreIndex: a.ignore_index, chunkRows: a.chunk_rows }),
  einsumMany: (i, a, fc) => fc.einsumMany(a.operands.map((n) => i[n]), a.out),
  dotTernarySte: (i, a) => i.x.dotTernarySte(i.w, a.axis),
  // elementwise (elementwise.json)
  add: (i) => i.x.add(i.y),
  sub: (i) => i.x.sub(i.y),
  mul: (i) => i.x.mul(i.y),
  div: (i) => i.x.div(i.y),
  maximum: (i) => i.x.maximum(i.y),
  minimum: (i) => i.x.minimum(i.y),
  pow: (i) => i.x.pow(i.y),
  scale: (i, a) => i.x.scale(a.factor),
  addScalar: (i, a) => i.x.addScalar(a.value),
  subScalar: (i, a) => i.x.subScalar(a.value),
  divScalar: (i, a) => i.x.divScalar(a.value),
  powScalar: (i, a) => i.x.powScalar(a.exponent),
  neg: (i) => i.x.neg(),
  abs: (i) => i.x.abs(),
  exp: (i) => i.x.exp(),
  log: (i) => i.x.log(),
  sqrt: (i) => i.x.sqrt(),
  tanh: (i) => i.x.tanh(),
  sigmoid: (i) => i.x.sigmoid(),
  relu: (i) => i.x.relu(),
  leakyRelu: (i, a) => i.x.leakyRelu(a.slope),
  gelu: (i) => i.x.gelu(),
  geluErf: (i) => i.x.geluErf(),
  quickGelu: (i) => i.x.quickGelu(),
  silu: (i) => i.x.silu(),
  elu: (i, a) => i.x.elu(a.alpha),
  log1p: (i) => i.x.log1p(),
  rsqrt: (i) => i.x.rsqrt(),
  reciprocal: (i) => i.x.reciprocal(),
  sin: (i) => i.x.sin(),
  cos: (i) => i.x.cos(),
  clamp: (i, a) => i.x.clamp(a.lo, a.hi),
  where: (i, a, fc) => fc.where(i.cond, i.a, i.b),
  maskedFill: (i, a) => i.x.maskedFill(i.mask, a.value),
  // reductions (reductions.json)
  sumAll: (i) => i.x.sumAll(),
  meanAll: (i) => i.x.meanAll(),
  sum: (i, a) => i.x.sum(a.axis),
  mean: (i, a) => i.x.mean(a.axis),
  variance: (i, a) => i.x.variance(a.axis, a.correction),
  max: (i, a) => i.x.max(a.axis),
  min: (i, a) => i.x.min(a.axis),
  logsumexp: (i, a) => i.x.logsumexp(a.axis),
  cumsum: (i, a) => i.x.cumsum(a.axis),
  prod: (i, a) => i.x.prod(a.axis),
  norm: (i, a) => i.x.norm(a.axis),
  softmax: (i, a) => i.x.softmax(a.axis),
  logSoftmax: (i, a) => i.x.logSoftmax(a.axis),
  // structure (structure.json)
  broadcastTo: (i, a) => i.x.broadcastTo(a.tags, a.shape),
  permuteTo: (i, a) => i.x.permuteTo(a.order),
  withTags: (i, a) => i.x.withTags(a.tags),
  narrow: (i, a) => i.x.narrow(a.axis, a.start, a.length),
  contiguous: (i) => i.x.contiguous(),
  transpose: (i, a) => i.x.transpose(a.a, a.b),
  insertAxis: (i, a) => i.x.insertAxis(a.name, a.position),
  squeeze: (i, a) => i.x.squeeze(a.axis),
  merge: (i, a) => i.x.merge(a.axes, a.into),
  split: (i, a) => i.x.split(a.axis, a.into, a.extents),
  flatten: (i, a) => i.x.flatten(a.into),
  reshape: (i, a) => i.x.reshape(a.tags, a.shape),
  select: (i, a) => i.x.select(a.axis, a.index),
  slice: (i, a) => i.x.slice(a.axis, a.start, a.end, a.step),
  concat: (i, a, fc) => fc.concat(numbered(i), a.axis),
  stack: (i, a, fc) => fc.stack(numbered(i), a.axis),
  pad: (i, a) => i.x.pad(a.axis, a.before, a.after, a.value),
  tril: (i, a) => i.x.tril(a.row, a.col, a.diagonal),
  triu: (i, a) => i.x.triu(a.row, a.col, a.diagonal),
  bandPart: (i, a) => i.x.bandPart(a.row, a.col, a.lower, a.upper),
  indexSelect: (i, a) => i.x.indexSelect(a.axis, i.indices),
  gather: (i, a) => i.x.gather(a.axis, i.indices),
  takeAlongAxis: (i, a) => i.x.takeAlongAxis(a.axis, i.indices),
  scatterAdd: (i, a) => i.x.scatterAdd(a.axis, i.indices, i.src),
  // losses (losses.json)
  crossEntropy: (i, a) => i.x.crossEntropy(i.labels, a.axis, { reduction: a.reduction, labelSmoothing: a.label_smoothing }),
  nllLoss: (i, a) => i.x.nllLoss(i.labels, a.axis, { reduction: a.reduction }),
  mseLoss: (i, a) => i.x.mseLoss(i.target, { reduction: a.reduction }),
  huberLoss: (i, a) => i.x.huberLoss(i.target, { delta: a.delta, reduction: a.reduction }),
  bceLoss: (i, a) => i.x.bceLoss(i.target, { reduction: a.reduction }),
  bceWithLogitsLoss: (i, a) => i.x.bceWithLogitsLoss(i.target, { reduction: a.reduction }),
  klDivLoss: (i, a) => i.x.klDivLoss(i.target, { reduction: a.reduction, logTarget: a.log_target }),
  // layers (layers.json)
  layerNorm: (i, a) => i.x.layerNorm(a.axis, { eps: a.eps, weight: i.weight, bias: i.bias }),
  rmsNorm: (i, a) => i.x.rmsNorm(a.axis, a.eps),
  rmsNormMul: (i, a) => i.x.rmsNormMul(a.axis, i.weight, a.eps),
  l2Normalize: (i, a) => i.x.l2Normalize(a.axis, a.eps),
  dot: (i, a) => i.x.dot(i.y, a.axis),
  addDot: (i, a) => i.x.addDot(i.y, a.axis, i.bias),
  matmul: (i, a) => i.x.matmul(i.y, a.transpose_y),
  einsum: (i, a, fc) => fc.einsum(i.a, i.b, a.out),
  conv2d: (i, a) => i.x.conv2d(i.weight, { bias: i.bias, stride: a.stride, padding: a.padding, dilation: a.dilation, groups: a.groups }),
  maxPool2d: (i, a) => i.x.maxPool2d(a.kernel, { stride: a.stride, padding: a.padding }),
  avgPool2d: (i, a) => i.x.avgPool2d(a.kernel, { stride: a.stride, padding: a.padding }),
  upsample2xNearest: (i) => i.x.upsample2xNearest(),
  rope: (i, a) => (i.cos ? i.x.rope(i.cos, i.sin, { mode: a.mode, base: a.base, offset: a.offset })
    : i.x.rope({ mode: a.mode, base: a.base, offset: a.offset })),
  groupedAttention: (i, a, fc) => fc.groupedAttention(i.q, i.k, i.v, { causal: a.causal, scale: a.scale }),
  swiglu: (i, a) => i.x.swiglu(a.axis),
  geglu: (i, a) => i.x.geglu(a.axis),
  // convolutions (conv.json)
  conv1d: (i, a) => i.x.conv1d(i.weight, { bias: i.bias, stride: a.stride, padding: a.padding, dilation: a.dilation, groups: a.groups }),
  convTranspose1d: (i, a) => i.x.convTranspose1d(i.weight, { bias: i.bias, stride: a.stride, padding: a.padding,
    outputPadding: a.output_padding, dilation: a.dilation, groups: a.groups }),
  causalConv1d: (i, a) => i.x.causalConv1d(i.weight, { bias: i.bias, dilation: a.dilation }),
  groupedCausalConv1d: (i, a) => i.x.groupedCausalConv1d(i.weight, a.groups, { bias: i.bias, dilation: a.dilation }),
  causalDepthwiseConv1d: (i) => i.x.causalDepthwiseConv1d(i.weight, { bias: i.bias }),
  conv2dRelu: (i, a) => i.x.conv2dRelu(i.weight, { bias: i.bias, stride: [a.stride_h, a.stride_w], padding: [a.pad_h, a.pad_w],
    dilation: [a.dilation_h, a.dilation_w], groups: a.groups, maxPool: a.max_pool ?? 1 }),
  unfold: (i, a) => i.x.unfold([a.kernel_h, a.kernel_w], unfoldOptions(a)),
  fold: (i, a) => i.x.fold([a.out_h, a.out_w], [a.kernel_h, a.kernel_w], unfoldOptions(a)),
  channelAffine: (i, a) => i.x.channelAffine(i.scale, i.shift, a.channel),
  // intentionally no-grad (nograd.json)
  isnan: (i) => i.x.isnan(),
  isinf: (i) => i.x.isinf(),
  isfinite: (i) => i.x.isfinite(),
  logicalNot: (i) => i.x.logicalNot(),
  logicalAnd: (i) => i.x.logicalAnd(i.y),
  logicalOr: (i) => i.x.logicalOr(i.y),
  logicalXor: (i) => i.x.logicalXor(i.y),
  any: (i, a) => i.x.any(a.axis),
  all: (i, a) => i.x.all(a.axis),
  anyAll: (i) => i.x.anyAll(),
  allAll: (i) => i.x.allAll(),
  argmax: (i, a) => i.x.argmax(a.axis),
  argmin: (i, a) => i.x.argmin(a.axis),
  argsort: (i, a) => i.x.argsort(a.axis, a.descending),
  bandMask: (i, a, fc) => fc.bandMask(a.row, a.col, a.rows, a.cols, a.lower, a.upper),
  // in-place and storage-consuming helpers (inplace.json); the in-place ones write into an own
  // copy of x (an input shares its buffer with its leaf, which they refuse)
  addAxisVectorInPlace: (i, a) => i.x.to('f32').addAxisVectorInPlace(a.axis, i.v),
  addAxisVectorUnaryInPlace: (i, a) => i.x.to('f32').addAxisVectorUnaryInPlace(a.axis, i.v, a.act),
  addScaledInPlace: (i, a) => i.x.to('f32').addScaledInPlace(i.y, a.alpha),
  takeAddNoGrad: (i) => i.x.takeAddNoGrad(i.y),
  takeScaleNoGrad: (i, a) => i.x.takeScaleNoGrad(a.factor),
  routerTopK: (i, a) => sorted(i.x.routerTopK(a.axis, a.k)),
  // casts, quantization, comparison (casts.json)
  to: (i, a) => i.x.to(a.dtype),
  quantize: (i, a) => i.x.quantize('q8_0', a.axis).to('f32'),
  compare: (i, a) => i.x.compare(i.y, a.op),
  // views, flips and shifts (views.json)
  alignTo: (i, a) => i.x.alignTo(a.tags),
  viewWithStrides: (i, a) => i.x.viewWithStrides(a.tags, a.shape, a.strides, a.offset),
  materialize: (i) => i.x.materialize(),
  sliceStep: (i, a) => i.x.sliceStep(a.axis, a.start, a.end, a.step),
  zeroPad2d: (i, a) => i.x.zeroPad2d(a.h, a.w, a.left, a.right, a.top, a.bottom),
  constantPad2d: (i, a) => i.x.constantPad2d(a.h, a.w, a.left, a.right, a.top, a.bottom, a.value),
  unbindInto: (i, a, fc) => fc.stack(i.x.unbindInto(a.axis), a.into),
  repeatAxis: (i, a) => i.x.repeatAxis(a.axis, a.times, a.interleave),
  flip: (i, a) => i.x.flip(a.axis),
  roll: (i, a) => i.x.roll(a.axis, a.shift),
  rollBy: (i, a) => i.x.rollBy(a.axis, a.by, i.shifts),
  shiftBy: (i, a) => i.x.shiftBy(a.axis, a.by, i.shifts),
  relposShift: (i, a) => i.x.relposShift(a.query, a.key),
  // diagonals, masked selection and indexed updates (indexing.json)
  diagonal: (i, a) => i.x.diagonal(a.a, a.b, a.offset, a.into),
  trace: (i, a) => i.x.trace(a.a, a.b),
  diag: (i, a) => ('axis' in a ? i.x.diag([a.axis], [a.into_a, a.into_b], a.offset) : i.x.diag([a.a, a.b], [a.into], a.offset)),
  diagEmbed: (i, a) => i.x.diagEmbed(a.axis, a.into_a, a.into_b, a.offset),
  indexAdd: (i, a) => i.x.indexAdd(a.axis, i.indices, i.source),
  scatter: (i, a) => i.x.scatter(a.axis, i.indices, i.src),
  maskedSelect: (i, a) => i.x.maskedSelect(i.mask, a.into),
  maskedScatter: (i) => i.x.maskedScatter(i.mask, i.source),
  setSlice: (i, a) => i.x.setSlice(a.axis, a.start, i.source),
  setRows: (i, a) => i.x.setRows(a.axis, i.indices, i.source),
  zeroSlice: (i, a) => i.x.zeroSlice(a.axis, a.start, a.end),
  zeroRows: (i, a) => i.x.zeroRows(a.axis, i.indices),
};
const ceOptions = (a) => ({ reduction: a.reduction, labelSmoothing: a.label_smoothing, ignoreIndex: a.ignore_index, zLoss: a.z_loss });
const sorted = ([v, idx]) => [v, { indices: idx }];
const unfoldOptions = (a) => ({ stride: [a.stride_h, a.stride_w], padding: [a.pad_h, a.pad_w], dilation: [a.dilation_h, a.dilation_w] });
// The inputs t0, t1, ... of concat and stack, in order.
const numbered = (i) => Object.keys(i).filter((k) => /^t\d+$/.test(k)).sort((p, q) => p.slice(1) - q.slice(1)).map((k) => i[k]);

// JSON has no NaN or infinity: the generator writes them as strings.
export const num = (v) => (typeof v === 'string' ? (v === 'nan' ? NaN : v === '-inf' ? -Infinity : Infinity) : v);
export const nums = (e) => ({ ...e, values: e.values.map(num) });

// An input as the case describes it; a strided one is laid out in reversed axis order and
// permuted back, so the op sees a non-contiguous view. Returns [leaf, view].
export function makeInput(fc, e) {
  if (e.dtype !== 'f64') {
    const t = fc.constant(e.tags, e.shape, e.values, e.dtype);
    return [t, t];
  }
  const make = e.requires_grad ? fc.variable.bind(fc) : fc.constant.bind(fc);
  if (!e.strided || e.tags.length < 2) {
    const t = make(e.tags, e.shape, Float32Array.from(e.values));
    return [t, t];
  }
  const reversed = [...e.tags].reverse();
  const leaf = make(reversed, [...e.shape].reverse(), reversedLayout(e.shape, e.values));
  return [leaf, leaf.permuteTo(e.tags)];
}

// The values of a row-major tensor of this shape laid out with its axes reversed (a transpose
// of every axis), computed in JS so that it needs no read of a device tensor.
function reversedLayout(shape, vals) {
  const out = new Float32Array(vals.length);
  const rank = shape.length, idx = new Array(rank).fill(0);
  const rstride = new Array(rank);  // the reversed layout's stride of each original axis
  for (let a = 0, s = 1; a < rank; ++a) { rstride[a] = s; s *= shape[a]; }
  for (let i = 0; i < vals.length; ++i) {
    let at = 0;
    for (let a = 0; a < rank; ++a) at += idx[a] * rstride[a];
    out[at] = vals[i];
    for (let a = rank - 1; a >= 0 && ++idx[a] === shape[a]; --a) idx[a] = 0;
  }
  return out;
}

/** Values read back (in want's axis order) within atol + rtol·|want| of the fixture's (NaN where
 * it has NaN). */
export function closeValues(what, got, want, { atol = 1e-5, rtol = 1e-4 } = {}) {
  check(got.length === want.values.length, `${what}: size ${got.length}, want ${want.values.length}`);
  want.values.forEach((w, k) => {
    if (Number.isNaN(w)) return check(Number.isNaN(got[k]), `${what}[${k}]: ${got[k]} vs NaN`);
    check(Math.abs(got[k] - w) <= atol + rtol * Math.abs(w), `${what}[${k}]: ${got[k]} vs ${w}`);
  });
}

/** Throws an Error saying what unless ok. */
export function check(ok, what) {
  if (!ok) throw new Error(what);
}
