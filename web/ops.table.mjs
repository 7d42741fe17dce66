// The op table: ONE declaration per op of the JS facade, the source of
//   - the facade method (web/facade.mjs installs a validating method per entry when it loads),
//   - the Embind binding (web/gen-ops.mjs writes web/ops.bindings.inc, included by bindings.cpp),
//   - the TypeScript declaration and doc comment (web/gen-ops.mjs splices them into web/index.d.ts).
//
// Adding an op (after its C++ method and its line in src/fucina/ops/ops.list):
//   1. add an entry below: { name, on, doc, args, cpp? } (see "Entries");
//   2. run `node web/gen-ops.mjs` (rewrites web/ops.bindings.inc and the generated blocks of
//      web/index.d.ts; tests/js/op_table.test.mjs fails while they are stale);
//   3. rebuild the wasm (scripts/build-wasm); use the op in tests/ts/consumer.ts (types.test) and
//      give it a row in tests/js/adversarial_cases.mjs (the adversarial suite asks for both).
// docs/design-notes.md ("One op table") has the whole picture.
//
// Entries:
//   name  the JS name, which is also the C++ method's name (Tensor::name) and the binding's;
//   on    'tensor': a method of Tensor (C++: self.name(ctx(), args...));
//         'engine': a function of the engine object fc (C++: Tensor::name(ctx(), args...));
//   doc   the doc comment of the .d.ts (one string, wrapped by the generator);
//   args  the arguments in order, made by the kind functions below; every method checks each
//         one and throws FucinaError InvalidArgument "<op>: <arg> must be ..." naming both;
//   returns  (optional) 'tensor' (the default): one Tensor; or { kind: 'tensors', ts } for
//         several (C++ gives a std::vector<Tensor>, JS an array of Tensors, ts its .d.ts type,
//         e.g. '[values: Tensor, indices: Tensor]'); or 'this' for an in-place op, which gives
//         back its receiver (the .d.ts says `this`);
//   consumes  (optional) true when the C++ op disposes its receiver (the storage-consuming
//         helpers): the facade then disposes the receiver's wrapper after a successful call;
//   cpp   (optional) the C++ call when it is not name(ctx(), args... in order): an expression
//         giving the result, or statements ending in `return <result>;`. Arguments are C++ locals
//         of their names, already converted (see gen-ops.mjs: tensor -> Tensor, axis -> Tag,
//         tags -> Tags, shape -> Extents, int -> int64_t, pair -> std::array<int64_t, 2>,
//         enum -> its C++ enum, optional tensor -> std::optional<Tensor>); the receiver is `self`.
// Options objects are flattened, field by field, into the binding's arguments; their fields are
// argument kinds too, and `type` names the interface the .d.ts declares for them. An example:
//   { name: 'glu', on: 'tensor', doc: 'a · sigmoid(b), with `axis` split into halves [a | b].',
//     args: [axis('axis')] }
// makes t.glu(axis), checked ("glu: axis must be an axis name (a string), got 7"), bound to
// self.glu(ctx(), Tag(axis)) and declared as `glu(axis: string): Tensor` with that comment.
//
// This module ships with the package (the facade reads it when it loads): it imports nothing and
// runs nothing; its functions are defaults and checks the facade calls.

// ---------------------------------------------------------------- argument kinds
// Every kind takes the argument's name and optional settings: default (makes the argument
// optional; for an options field, the value when the key is absent; a function gets the
// arguments given so far by name; nullish: true makes null mean the default too), doc (for
// options fields: the .d.ts comment), label (the name error messages use, when it differs).
const kind = (k) => (name, settings = {}) => ({ kind: k, name, ...settings });
/** A Tensor of this engine; optional: true allows undefined (nullable: true also null), given to C++ as std::optional. */
export const tensor = kind('tensor');
/** An array of Tensors (C++ std::vector<Tensor>). */
export const tensors = kind('tensors');
/** An axis name, a string (C++ Tag). */
export const axis = kind('axis');
/** An array of axis names (C++ Tags). */
export const tags = kind('tags');
/** An array of non-negative integer extents (C++ Extents). */
export const shape = kind('shape');
/** An integer in [min, max] (default: any safe integer); cpp: 'size' (size_t) or 'seed' (uint64_t), else int64_t. */
export const int = kind('int');
/** A number; nullable: true also takes null (C++ std::optional<double>). */
export const number = kind('number');
/** A boolean. */
export const bool = kind('bool');
/** An array or typed array of finite numbers (C++ std::vector<float>): plain values, not a tensor. */
export const floats = kind('floats');
/** A string among an enum's values (ENUMS below). */
export const oneOf = (name, e, settings = {}) => ({ kind: 'enum', name, enum: e, ...settings });
/** An integer >= min or an [h, w] pair of them (C++ std::array<int64_t, 2>). */
export const pair = kind('pair');
/**
 * An options object: undefined is {}, an unknown key is an error. fields: argument kinds (each
 * key's default applies when the key is absent). type: the interface the .d.ts declares (doc:
 * its comment; extends: an interface whose fields it repeats); or ts: a hand-written type
 * instead. shorthand: a string given in place of the object stands for { [shorthand]: string }.
 * check(o): a message when the object's keys do not go together.
 */
export const options = (name, fields, settings = {}) => ({ kind: 'options', name, fields, ...settings });

// ---------------------------------------------------------------- enums
// values: what JS accepts; ts: the .d.ts type; cpp: the binding's converter (std::string -> enum).
export const ENUMS = {
  dtype: { values: ['f32', 'f16', 'bf16', 'f64', 'i32', 'i64', 'u8', 'q8_0'], ts: 'DType', cpp: 'toDType' },
  reduction: { values: ['mean', 'sum', 'none'], ts: 'Reduction', cpp: 'toReduction' },
  compareOp: { values: ['eq', 'ne', 'lt', 'le', 'gt', 'ge'], ts: 'CompareOp', cpp: 'toCompareOp' },
  // Passed to C++ as strings, which checks them again (Tensor::unary, Tensor::gated).
  unaryName: { values: ['neg', 'abs', 'exp', 'log', 'sqrt', 'tanh', 'sigmoid', 'relu', 'leakyRelu', 'gelu', 'geluErf',
    'quickGelu', 'silu', 'elu', 'log1p', 'rsqrt', 'reciprocal', 'sin', 'cos', 'floor', 'ceil', 'round', 'sign', 'fastTanh',
    'softcap30', 'softcap15'], ts: 'UnaryName' },
  // to(): a dtype (a cast) or a device (a move); C++ tells them apart (Handle's to in ops.bindings.inc).
  castTarget: { values: ['f32', 'f16', 'bf16', 'f64', 'i32', 'i64', 'u8', 'q8_0', 'cpu', 'webgpu'], ts: 'DType | Device' },
  gateActivation: { values: ['silu', 'gelu', 'geluErf', 'sigmoid', 'relu', 'quickGelu'], ts: 'GateActivation' },
};

// ---------------------------------------------------------------- shared option fields
// nullish: null means the default too, as it always has for a loss's reduction.
const reduction = oneOf('reduction', ENUMS.reduction, { default: 'mean', nullish: true, doc: "'mean' (default), 'sum' or 'none'." });
/** A loss's options: an object, or just the reduction's name. */
const lossOptions = (type, fields = [], settings = {}) => options('options', [reduction, ...fields],
  { type, shorthand: 'reduction', ...(type === 'LossOptions' ? { doc: 'Options of a loss that only reduces.' } : { extends: 'LossOptions' }), ...settings });
const poolOptions = options('options', [
  pair('stride', { min: 1, default: (given) => given.kernel, doc: 'Step between windows (default: the kernel).' }),
  int('padding', { min: 0, default: 0, doc: 'Same padding on both axes, at most half the kernel (default 0).' }),
  axis('height', { default: 'h', doc: "The height axis (default 'h')." }),
  axis('width', { default: 'w', doc: "The width axis (default 'w')." }),
], { type: 'Pool2dOptions', doc: 'Options of {@link Tensor.maxPool2d} and {@link Tensor.avgPool2d}.' });
const poolCpp = (op) => `self.${op}(ctx(), kernel[0], kernel[1], stride[0], stride[1], padding, height, width)`;

// ---------------------------------------------------------------- convolution options
const convBias = tensor('bias', { optional: true, nullable: true, doc: 'A tensor with the single axis outChannels, added to every output position.' });
/** conv2d's options, also taken by the hand-written prepareConv2dWeights (facade.mjs). */
export const conv2dOptions = options('options', [
  convBias,
  pair('stride', { min: 1, default: 1, doc: 'Step between windows, >= 1 (default 1).' }),
  pair('padding', { min: 0, default: 0, doc: 'Zeros added on each side, >= 0 (default 0).' }),
  pair('dilation', { min: 1, default: 1, doc: 'Spacing of the kernel taps, >= 1 (default 1).' }),
  int('groups', { min: 1, default: 1, doc: 'Channel groups, dividing channels and outChannels (default 1).' }),
  int('maxPool', { min: 1, default: 1, doc: "conv2dRelu only: the result max pooled over maxPool x maxPool windows with stride maxPool, as maxPool2d(maxPool) pools it, in the same op; no full-size result is kept (default 1: no pooling)." }),
  options('axes', [
    axis('channels', { default: 'c', doc: "The input's channel axis (default 'c'); the weight has it too." }),
    axis('height', { default: 'h', doc: "The input's height axis (default 'h')." }),
    axis('width', { default: 'w', doc: "The input's width axis (default 'w')." }),
    axis('outChannels', { default: 'out', doc: "The weight's output-channel axis, which replaces channels in the result (default 'out')." }),
    axis('kernelH', { default: 'kh', doc: "The weight's kernel-height axis (default 'kh')." }),
    axis('kernelW', { default: 'kw', doc: "The weight's kernel-width axis (default 'kw')." }),
  ], { type: 'Conv2dAxes', doc: "Axis names of {@link Tensor.conv2d}'s input and weight.", fieldDoc: 'Axis names (defaults c, h, w, out, kh, kw).' }),
], { type: 'Conv2dOptions', doc: 'Options of {@link Tensor.conv2d} and {@link Tensor.conv2dRelu}.' });
const conv2dCpp = (op) => `const fucina::Conv2dOptions o{.channels = channels, .height = height, .width = width, .out_channels = outChannels,
                                   .kernel_h = kernelH, .kernel_w = kernelW, .stride_h = stride[0], .stride_w = stride[1],
                                   .pad_h = padding[0], .pad_w = padding[1], .dilation_h = dilation[0],
                                   .dilation_w = dilation[1], .groups = groups, .max_pool = maxPool};
          return bias ? self.${op}(ctx(), weight, *bias, o) : self.${op}(ctx(), weight, o);`;
const conv1dAxes = options('axes', [
  axis('channels', { default: 'c', doc: "The input's channel axis (default 'c'); the weight has it too." }),
  axis('length', { default: 't', doc: "The input's length axis (default 't')." }),
  axis('outChannels', { default: 'out', doc: "The weight's output-channel axis, which replaces channels in the result (default 'out')." }),
  axis('kernel', { default: 'k', doc: "The weight's kernel axis (default 'k')." }),
], { type: 'Conv1dAxes', doc: 'Axis names of the 1-D convolutions.', fieldDoc: 'Axis names (defaults c, t, out, k).' });
const causalOptions = (type, doc) => options('options', [convBias,
  int('dilation', { min: 1, default: 1, doc: 'Spacing of the kernel taps (default 1).' }), conv1dAxes], { type, doc });
const causalCpp = (withBias, plain) => `const fucina::Conv1dAxes axes{.channels = channels, .length = length, .out_channels = outChannels, .kernel = kernel};
          return bias ? self.${withBias} : self.${plain};`;
const unfoldOptions = options('options', [
  pair('stride', { min: 1, default: 1, doc: 'Step between windows (default 1).' }),
  pair('padding', { min: 0, default: 0, doc: 'Zeros on each side of h and w (default 0).' }),
  pair('dilation', { min: 1, default: 1, doc: 'Spacing of the kernel taps (default 1).' }),
  options('axes', [
    axis('channels', { default: 'c', doc: "The images' channel axis (default 'c')." }),
    axis('height', { default: 'h', doc: "The images' height axis (default 'h')." }),
    axis('width', { default: 'w', doc: "The images' width axis (default 'w')." }),
    axis('patch', { default: 'patch', doc: "The columns' patch axis (default 'patch')." }),
    axis('positions', { default: 'l', doc: "The columns' positions axis (default 'l')." }),
  ], { type: 'UnfoldAxes', doc: 'Axis names of {@link Tensor.unfold} and {@link Tensor.fold}.', fieldDoc: 'Axis names (defaults c, h, w, patch, l).' }),
], { type: 'UnfoldOptions', doc: 'Options of {@link Tensor.unfold} and {@link Tensor.fold}.' });
const unfoldCpp = (call) => `const fucina::UnfoldOptions o{.channels = channels, .height = height, .width = width, .patch = patch,
                                   .positions = positions, .stride_h = stride[0], .stride_w = stride[1], .pad_h = padding[0],
                                   .pad_w = padding[1], .dilation_h = dilation[0], .dilation_w = dilation[1]};
          return self.${call};`;

// ---------------------------------------------------------------- the ops
const unary = (name, doc) => ({ name, on: 'tensor', doc, args: [] });
const binary = (name, doc, y = 'y') => ({ name, on: 'tensor', doc, args: [tensor(y)] });
const scalar = (name, doc, s, settings) => ({ name, on: 'tensor', doc, args: [number(s, settings)] });
const overAxis = (name, doc) => ({ name, on: 'tensor', doc, args: [axis('axis')] });

export const OPS = [
  // ---- casts
  { name: 'to', on: 'tensor', doc: "The values cast to a dtype (differentiable to f32, f16 and bf16), or copied to a device ('cpu' or 'webgpu': to 'webgpu' an upload, of a tensor that does not require gradients; from 'webgpu' to 'cpu' DeviceReadIsAsync, read with `await t.data()`).",
    args: [oneOf('target', ENUMS.castTarget, { label: 'dtype or device' })],
    cpp: `if (target == "cpu" || target == "webgpu") return self.to(ctx(), toDevice(target));
          return self.to(ctx(), toDType(target));` },
  // ---- elementwise
  binary('add', 'Elementwise this + y, axes aligned by name and broadcast (as every binary op).'),
  binary('sub', 'Elementwise this − y.'),
  binary('mul', 'Elementwise this · y.'),
  binary('div', 'Elementwise this / y.'),
  binary('maximum', 'Elementwise maximum; the gradient goes to the larger operand (half each on ties).'),
  binary('minimum', 'Elementwise minimum; the gradient goes to the smaller operand (half each on ties).'),
  binary('pow', 'Elementwise this ** exponent.', 'exponent'),
  scalar('scale', 'this · factor.', 'factor'),
  scalar('addScalar', 'this + value.', 'value'),
  scalar('subScalar', 'this − value.', 'value'),
  scalar('divScalar', 'this / value.', 'value'),
  scalar('powScalar', 'this ** exponent.', 'exponent'),
  unary('neg', '−this.'),
  unary('abs', 'Elementwise absolute value.'),
  unary('exp', 'e ** this.'),
  unary('log', 'Natural logarithm.'),
  unary('sqrt', 'Square root.'),
  unary('tanh', 'Hyperbolic tangent.'),
  unary('sigmoid', '1 / (1 + e ** −this).'),
  unary('relu', 'max(this, 0).'),
  scalar('leakyRelu', 'this for x > 0, slope·x for x <= 0 (default slope 0.01).', 'slope', { default: 0.01 }),
  unary('gelu', "GELU, tanh approximation (torch's approximate='tanh')."),
  unary('geluErf', 'Exact GELU, x·Φ(x).'),
  unary('quickGelu', 'x·sigmoid(1.702x).'),
  unary('silu', 'x·sigmoid(x).'),
  scalar('elu', 'x for x > 0, alpha·(exp(x) − 1) for x <= 0 (default alpha 1).', 'alpha', { default: 1 }),
  unary('log1p', 'log(1 + this), accurate near 0.'),
  unary('rsqrt', '1 / sqrt(this).'),
  unary('reciprocal', '1 / this.'),
  unary('sin', 'Sine.'),
  unary('cos', 'Cosine.'),
  { name: 'clamp', on: 'tensor', doc: 'Values limited to [lo, hi]; the gradient passes where lo <= x <= hi (lo > hi throws).',
    args: [number('lo'), number('hi')] },
  // ---- reductions
  unary('sumAll', 'The sum of every element, a scalar.'),
  unary('meanAll', 'The mean of every element, a scalar.'),
  overAxis('sum', 'The sum over axis, which is dropped.'),
  overAxis('mean', 'The mean over axis, which is dropped.'),
  // ---- normalization, softmax, losses
  { name: 'layerNorm', on: 'tensor', doc: 'Normalises to zero mean and unit variance over axis, then applies weight and bias if given.',
    args: [axis('axis'), options('options', [
      number('eps', { default: 1e-5 }), tensor('weight', { optional: true }), tensor('bias', { optional: true })],
    // The two interfaces (weight and bias together, or neither) are hand-written in index.d.ts.
    { ts: 'LayerNormOptions | AffineLayerNormOptions',
      check: (o) => ((o.weight === undefined) !== (o.bias === undefined) ? 'give weight and bias together' : undefined) })],
    cpp: `if (!weight && !bias) return self.layerNorm(ctx(), axis, eps);
          if (!weight || !bias) invalid("layerNorm: give weight and bias together");
          return self.layerNorm(ctx(), axis, *weight, *bias, eps);` },
  { name: 'rmsNorm', on: 'tensor', doc: 'this / sqrt(mean(this² over axis) + eps) (default eps 1e-6).',
    args: [axis('axis'), number('eps', { default: 1e-6 })] },
  { name: 'rmsNormMul', on: 'tensor', doc: 'rmsNorm(axis, eps) · weight, fused; weight has the single axis `axis`.',
    args: [axis('axis'), tensor('weight'), number('eps', { default: 1e-6 })] },
  { name: 'rmsNormMulAdd', on: 'tensor', doc: 'rmsNorm(axis, eps) · weight + bias; weight and bias have the single axis `axis`.',
    args: [axis('axis'), tensor('weight'), tensor('bias'), number('eps', { default: 1e-6 })] },
  { name: 'groupNorm', on: 'tensor',
    doc: "torch's group_norm: channelAxis splits into `groups` groups, each normalized over its channels and every axis not in options.batch; then weight and bias (channelAxis alone) if given.",
    args: [int('groups', { min: 1 }), axis('channelAxis'), options('options', [
      tensor('weight', { optional: true, doc: 'Per-channel scale (give bias with it).' }),
      tensor('bias', { optional: true, doc: 'Per-channel shift (give weight with it).' }),
      tags('batch', { default: ['batch'], doc: "The batch axes, each normalized apart (default ['batch']; [] for one sample)." }),
      number('eps', { default: 1e-5, doc: 'Added to the variance (default 1e-5).' })],
    { type: 'GroupNormOptions', doc: 'Options of {@link Tensor.groupNorm}.',
      check: (o) => ((o.weight === undefined) !== (o.bias === undefined) ? 'give weight and bias together' : undefined) })],
    cpp: `const fucina::GroupNormOptions o{.batch = batch, .eps = eps};
          if (weight && bias) return self.groupNorm(ctx(), groups, channelAxis, *weight, *bias, o);
          if (weight || bias) invalid("groupNorm: give weight and bias together");
          return self.groupNorm(ctx(), groups, channelAxis, o);` },
  { name: 'cosineSimilarity', on: 'tensor', doc: "torch's cosine_similarity along axis (dropped), operands aligned by name (default eps 1e-8).",
    args: [tensor('y'), axis('axis'), number('eps', { default: 1e-8 })] },
  { name: 'rmsNormMulRopeHalfPrepared', on: 'tensor',
    doc: 'rope (half mode, prepared cos/sin tables {position, axis: D/2}) of rmsNorm(axis) · weight, fused: the per-head QK-norm of Qwen3 / Gemma 3 attention.',
    args: [tensor('weight'), tensor('cos'), tensor('sin'), axis('axis'), options('options', [
      axis('position', { default: 't', doc: "The position axis (default 't')." }),
      int('offset', { default: 0, min: 0, doc: 'Row of the tables for the first position (default 0).' }),
      number('eps', { default: 1e-6, doc: "rmsNorm's epsilon (default 1e-6)." })],
    { type: 'RmsNormRopeOptions', doc: 'Options of {@link Tensor.rmsNormMulRopeHalfPrepared}.' })],
    cpp: `return self.rmsNormMulRopeHalfPrepared(ctx(), weight, cos, sin, axis, {.position = position, .offset = offset, .eps = eps});` },
  { name: 'l2Normalize', on: 'tensor', doc: 'this / max(‖this‖₂ over axis, eps) (default eps 1e-12).',
    args: [axis('axis'), number('eps', { default: 1e-12 })] },
  overAxis('softmax', 'Softmax over axis (kept).'),
  overAxis('logSoftmax', 'log(softmax(axis)), computed stably.'),
  { name: 'crossEntropy', on: 'tensor',
    doc: "Softmax cross-entropy of these logits against integer labels (an i32/i64 tensor with the logits' axes without classAxis); the gradient is fused (softmax − target).",
    args: [tensor('labels'), axis('classAxis'), lossOptions('CrossEntropyOptions', [
      number('labelSmoothing', { default: 0, doc: "torch's label_smoothing in [0, 1) (default 0)." })],
    { doc: 'Options of {@link Tensor.crossEntropy}.' })],
    cpp: 'self.crossEntropy(ctx(), labels, classAxis, {.reduction = reduction, .label_smoothing = labelSmoothing})' },
  { name: 'nllLoss', on: 'tensor', doc: 'Negative log-likelihood of these log-probabilities at integer labels (axes as crossEntropy).',
    args: [tensor('labels'), axis('classAxis'), lossOptions('LossOptions')] },
  { name: 'mseLoss', on: 'tensor', doc: 'Mean (or summed) squared error against target, axes aligned by name.',
    args: [tensor('target'), lossOptions('LossOptions')] },
  // ---- indexing, pointwise losses, gated units
  { name: 'gather', on: 'tensor',
    doc: "torch.gather: indices (i32/i64) have exactly this tensor's axes, extents <= this's except along `axis`; the result has the indices' extents in this tensor's axis order.",
    args: [axis('axis'), tensor('indices')] },
  { name: 'takeAlongAxis', on: 'tensor',
    doc: "numpy.take_along_axis by name: indices have `axis`; their other axes match this tensor's extents or have extent 1, and missing axes broadcast.",
    args: [axis('axis'), tensor('indices')] },
  { name: 'scatterAdd', on: 'tensor', doc: 'torch.scatter_add, out of place: src (shaped as indices) added at the indices along `axis`.',
    args: [axis('axis'), tensor('indices'), tensor('src')] },
  { name: 'huberLoss', on: 'tensor', doc: 'torch.nn.HuberLoss against target (options may also be just the reduction).',
    // delta first: the order of the C++ arguments (and of the keys in messages).
    args: [tensor('target'), options('options', [
      number('delta', { default: 1, doc: 'Where the loss turns from quadratic to linear, > 0 (default 1).' }), reduction],
    { type: 'HuberLossOptions', extends: 'LossOptions', shorthand: 'reduction', doc: 'Options of {@link Tensor.huberLoss}.' })] },
  { name: 'bceLoss', on: 'tensor', doc: 'torch.nn.BCELoss of these probabilities in [0, 1]; each log is clamped at >= −100.',
    args: [tensor('target'), lossOptions('LossOptions')] },
  { name: 'bceWithLogitsLoss', on: 'tensor', doc: 'torch.nn.BCEWithLogitsLoss of these logits, in the stable form.',
    args: [tensor('target'), lossOptions('LossOptions')] },
  { name: 'klDivLoss', on: 'tensor', doc: "torch's kl_div: this tensor holds log-probabilities; 'mean' is elementwise (batchmean is sum / batch).",
    args: [tensor('target'), lossOptions('KlDivLossOptions', [
      bool('logTarget', { default: false, doc: 'The target holds log-probabilities too (default false).' })],
    { doc: 'Options of {@link Tensor.klDivLoss}.' })] },
  { name: 'crossEntropyExt', on: 'tensor',
    doc: "crossEntropy with torch's full options: target is integer labels (ignoreIndex, class weight, label smoothing) or probabilities with the logits' axes (soft targets); optional z-loss.",
    args: [tensor('target'), axis('classAxis'), lossOptions('CrossEntropyExtOptions', [
      number('labelSmoothing', { default: 0, doc: "torch's label_smoothing in [0, 1) (default 0)." }),
      int('ignoreIndex', { default: -100, doc: 'Rows with this label add nothing and are not counted in the mean (default −100).' }),
      tensor('weight', { optional: true, doc: 'Class weights: a constant with the single axis classAxis.' }),
      number('zLoss', { default: 0, doc: 'Adds zLoss · logsumexp² per counted row (default 0).' })],
    { doc: 'Options of {@link Tensor.crossEntropyExt} and {@link Tensor.linearCrossEntropyExt}.' })],
    cpp: `return self.crossEntropyExt(ctx(), target, classAxis, {.reduction = reduction, .label_smoothing = labelSmoothing,
          .ignore_index = ignoreIndex, .weight = weight ? &*weight : nullptr, .z_loss = zLoss});` },
  { name: 'linearCrossEntropyExt', on: 'tensor',
    doc: "crossEntropyExt of the logits this.dot(w, axis) over classAxis (integer labels), computed in chunks of rows without keeping the logits or their gradient (a language model's head); gradients to this and w.",
    args: [tensor('w'), tensor('labels'), axis('axis'), axis('classAxis'), lossOptions('LinearCrossEntropyOptions', [
      number('labelSmoothing', { default: 0, doc: "torch's label_smoothing in [0, 1) (default 0)." }),
      int('ignoreIndex', { default: -100, doc: 'Rows with this label add nothing and are not counted in the mean (default −100).' }),
      tensor('weight', { optional: true, doc: 'Class weights: a constant with the single axis classAxis.' }),
      number('zLoss', { default: 0, doc: 'Adds zLoss · logsumexp² per counted row (default 0).' }),
      int('chunkRows', { default: 256, min: 1, doc: 'Rows of logits made at a time (default 256).' })],
    { doc: 'Options of {@link Tensor.linearCrossEntropyExt}.' })],
    cpp: `return self.linearCrossEntropyExt(ctx(), w, labels, axis, classAxis, {.reduction = reduction,
          .label_smoothing = labelSmoothing, .ignore_index = ignoreIndex, .weight = weight ? &*weight : nullptr,
          .z_loss = zLoss, .chunk_rows = chunkRows});` },
  { name: 'linearDistillExt', on: 'tensor',
    doc: 'Distillation of the student logits this.dot(w, axis) against teacher logits (or probabilities): (1 − alpha)·T²·KL(teacher_T ‖ student_T) + alpha·CE(labels), chunked like linearCrossEntropyExt; gradients to this and w.',
    args: [tensor('w'), tensor('teacher'), axis('axis'), axis('classAxis'), lossOptions('DistillOptions', [
      number('temperature', { default: 1, doc: 'T > 0 (default 1).' }),
      number('alpha', { default: 0, doc: 'Weight of the hard-label cross-entropy, in [0, 1] (default 0).' }),
      tensor('labels', { optional: true, doc: 'Integer labels with the rows\' axes; needed when alpha > 0.' }),
      bool('teacherProbs', { default: false, doc: 'The teacher holds probabilities, not logits (default false).' }),
      int('ignoreIndex', { default: -100, doc: 'Label rows that add nothing to the cross-entropy (default −100).' }),
      int('chunkRows', { default: 256, min: 1, doc: 'Rows of logits made at a time (default 256).' })],
    { doc: 'Options of {@link Tensor.linearDistillExt}.' })],
    cpp: `return self.linearDistillExt(ctx(), w, teacher, axis, classAxis, {.temperature = temperature, .alpha = alpha,
          .labels = labels ? &*labels : nullptr, .teacher_probs = teacherProbs, .reduction = reduction,
          .ignore_index = ignoreIndex, .chunk_rows = chunkRows});` },
  overAxis('swiglu', 'silu(gate) · up, with `axis` split into halves [gate | up] (an even extent) and halved.'),
  overAxis('geglu', 'geluErf(gate) · up, with `axis` split as in swiglu.'),
  { name: 'gated', on: 'tensor', doc: 'act(gate) · this, gate with the same axes as this tensor (any order).',
    args: [tensor('gate'), oneOf('act', ENUMS.gateActivation)] },
  overAxis('glu', "torch's glu: `axis` split into halves [a | b] (an even extent), a · sigmoid(b)."),
  { name: 'splitGated', on: 'tensor', doc: 'act(gate) · up, with `axis` split into halves [gate | up]: swiglu and geglu for any act.',
    args: [axis('axis'), oneOf('act', ENUMS.gateActivation)] },
  { name: 'situ', on: 'tensor', doc: '(c·tanh(this/c)) · (c·tanh(silu(gate)/c)): the soft-clamped up times the soft-bounded SiLU gate (default c 30).',
    args: [tensor('gate'), number('c', { default: 30 })] },
  // ---- intentionally no-grad: constant results, even from variables (any dtype but q8_0)
  overAxis('argmax', 'The first index of the largest value along axis (dropped), i64; NaN counts as the largest.'),
  overAxis('argmin', 'The first index of the smallest value along axis (dropped), i64; NaN counts as the smallest.'),
  { name: 'argsort', on: 'tensor', doc: 'sort(axis, descending) indices: i64, stable.',
    args: [axis('axis'), bool('descending', { default: false })] },
  { name: 'multinomial', on: 'tensor',
    doc: "`samples` i64 indices along axis drawn from this tensor's weights (finite, >= 0, not all 0), as torch.multinomial; seeded, the same draws in every build.",
    args: [axis('axis'), int('samples', { min: 0 }), int('seed', { min: 0, cpp: 'seed' }), bool('replacement', { default: false })] },
  unary('isnan', 'A u8 mask: 1 where this is NaN.'),
  unary('isinf', 'A u8 mask: 1 where this is ±Infinity.'),
  unary('isfinite', 'A u8 mask: 1 where this is neither NaN nor ±Infinity.'),
  unary('logicalNot', 'A u8 mask: 1 where this is 0.'),
  binary('logicalAnd', 'A u8 mask: both nonzero (NaN counts as nonzero), axes aligned by name.'),
  binary('logicalOr', 'A u8 mask: either nonzero, axes aligned by name.'),
  binary('logicalXor', 'A u8 mask: exactly one nonzero, axes aligned by name.'),
  overAxis('any', 'A u8 mask: whether any value along axis (dropped) is nonzero; the empty any is 0.'),
  overAxis('all', 'A u8 mask: whether every value along axis (dropped) is nonzero; the empty all is 1.'),
  unary('anyAll', 'A u8 scalar: whether any element is nonzero.'),
  unary('allAll', 'A u8 scalar: whether every element is nonzero.'),
  // ---- in-place and storage-consuming helpers (inference loops): no graph; an operand that
  // requires grad is UnsupportedGradient
  { name: 'addAxisVectorInPlace', on: 'tensor', returns: 'this',
    doc: "this[..., i, ...] += v[i] along axis, written into this tensor's own f32 buffer (a tensor that shares its storage with a view or a saved value is refused); returns this tensor.",
    args: [axis('axis'), tensor('v')] },
  { name: 'addAxisVectorUnaryInPlace', on: 'tensor', returns: 'this',
    doc: 'As addAxisVectorInPlace, then the unary op `act` in place: the values of add(v).unary(act); returns this tensor.',
    args: [axis('axis'), tensor('v'), oneOf('act', ENUMS.unaryName)] },
  { name: 'addScaledInPlace', on: 'tensor', returns: 'this',
    doc: "this += alpha · y in place (torch's add_(y, alpha)), y's axes among this tensor's; storage rules as addAxisVectorInPlace; returns this tensor.",
    args: [tensor('y'), number('alpha', { default: 1 })] },
  { name: 'takeAddNoGrad', on: 'tensor', consumes: true,
    doc: "add(y), consuming this tensor: the result reuses its buffer when it can, and this tensor is disposed.",
    args: [tensor('y')] },
  { name: 'takeScaleNoGrad', on: 'tensor', consumes: true,
    doc: "scale(factor), consuming this tensor: the result reuses its buffer when it can, and this tensor is disposed.",
    args: [number('factor')] },
  { name: 'routerTopK', on: 'tensor',
    doc: "A mixture-of-experts router over `axis` (the experts) of these logits: [weights, indices (i64)], the k most probable experts of softmax(axis) with their probabilities renormalized to sum to 1; constants.",
    args: [axis('axis'), int('k', { min: 1 })],
    returns: { kind: 'tensors', ts: '[weights: Tensor, indices: Tensor]' },
    cpp: `const fucina::SortResult r = self.routerTopK(ctx(), axis, k);
          return std::vector<Tensor>{r.values, r.indices};` },
  // ---- rounding, soft caps and activations by name
  unary('floor', 'torch.floor; the gradient is zero.'),
  unary('ceil', 'torch.ceil; the gradient is zero.'),
  unary('round', 'torch.round (half to even); the gradient is zero.'),
  unary('sign', 'torch.sign (0 at 0); the gradient is zero.'),
  unary('fastTanh', 'A rational tanh (a truncated continued fraction), within 7e-6 of tanh everywhere; gradient 1 − y².'),
  unary('softcap30', 'Logit soft-capping, 30·tanh(this/30).'),
  unary('softcap15', 'Logit soft-capping, 15·tanh(this/15).'),
  { name: 'unary', on: 'tensor', doc: 'The unary op of that name (leakyRelu and elu with their default parameter), for configs that name their activation.',
    args: [oneOf('name', ENUMS.unaryName)] },
  { name: 'biasAdd', on: 'tensor', doc: 'Adds a plain list of numbers along `axis` (as long as its extent); the list is a constant.',
    args: [axis('axis'), floats('bias')] },
  binary('snake', "Snake (BigVGAN): this + sin²(alpha·this)/alpha, alpha's axes among this tensor's; gradients to both.", 'alpha'),
  binary('prelu', "torch's prelu: max(0, this) + weight·min(0, this), weight's axes among this tensor's; gradients to both.", 'weight'),
  // ---- more reductions, scans and orderings
  { name: 'sumMany', on: 'tensor', doc: 'The sum over several axes at once, which are dropped.', args: [tags('axes')] },
  overAxis('cumprod', 'Inclusive cumulative product along axis (kept); the gradient is exact with zeros.'),
  { name: 'standardizeAxis', on: 'tensor', doc: '(this − mean) / sqrt(biased variance + eps) along axis (layerNorm without weight and bias).',
    args: [axis('axis'), number('eps', { default: 1e-5 })] },
  { name: 'normAll', on: 'tensor', doc: 'The p-norm of every element (torch.linalg.vector_norm), p > 0 or Infinity (default 2); a scalar.',
    args: [number('p', { default: 2 })] },
  { name: 'linearRecurrence', on: 'tensor',
    doc: 'h_t = decay_t · h_(t−1) + this_t along `time`, h_(−1) = h0 (zeros when absent); every h_t, with this tensor\'s axes. decay has this tensor\'s axes, h0 them without `time`.',
    args: [tensor('decay'), axis('time'), tensor('h0', { optional: true })],
    cpp: `if (h0) return self.linearRecurrence(ctx(), decay, *h0, time);
          return self.linearRecurrence(ctx(), decay, time);` },
  { name: 'topK', on: 'tensor',
    doc: 'torch.topk along axis: [values, indices (i64 constants)], axis with extent k; ties keep the lower index first, NaN counts as largest.',
    args: [axis('axis'), int('k', { min: 0 }), bool('largest', { default: true })],
    returns: { kind: 'tensors', ts: '[values: Tensor, indices: Tensor]' },
    cpp: `const fucina::SortResult r = self.topK(ctx(), axis, k, largest);
          return std::vector<Tensor>{r.values, r.indices};` },
  { name: 'sort', on: 'tensor', doc: 'torch.sort along axis, stable: [values, indices (i64 constants)].',
    args: [axis('axis'), bool('descending', { default: false })],
    returns: { kind: 'tensors', ts: '[values: Tensor, indices: Tensor]' },
    cpp: `const fucina::SortResult r = self.sort(ctx(), axis, descending);
          return std::vector<Tensor>{r.values, r.indices};` },
  // ---- more reductions
  { name: 'variance', on: 'tensor', doc: 'torch.var over axis, dividing by n − correction (default 1); the axis is dropped.',
    args: [axis('axis'), int('correction', { default: 1 })] },
  overAxis('max', 'The maximum over axis, which is dropped; the gradient flows to the first maximum.'),
  overAxis('min', 'The minimum over axis, which is dropped; the gradient flows to the first minimum.'),
  overAxis('logsumexp', 'log(sum(exp(this))) over axis, computed stably; the axis is dropped.'),
  overAxis('cumsum', 'Inclusive cumulative sum along axis (kept).'),
  overAxis('prod', 'The product over axis, which is dropped.'),
  overAxis('norm', 'The 2-norm over axis, which is dropped; gradient 0 where the norm is 0.'),
  // ---- contractions
  { name: 'dot', on: 'tensor', doc: 'Contracts the shared axis `axis`; other shared axes are batch axes, the rest are kept.',
    args: [tensor('y'), axis('axis')] },
  { name: 'dotTernarySte', on: 'tensor',
    doc: 'BitNet b1.58: this.dot(w, axis) with w quantized per tensor to {−1, 0, +1}·mean|w|; straight-through gradients (dx through the quantized weight, dw as if unquantized).',
    args: [tensor('w'), axis('axis')] },
  { name: 'addDot', on: 'tensor',
    doc: "this.dot(y, axis) + bias in one GEMM (torch's addmm / Linear): bias's axes are a subset of the result's, broadcast by name; all three operands get gradients.",
    args: [tensor('y'), axis('axis'), tensor('bias')] },
  { name: 'matmul', on: 'tensor',
    doc: "Positional matrix product (torch.matmul, rank >= 2): this's last axis contracts with y's second-to-last (its last when transposeY), whatever their names; the leading axes are batch axes matched by name. Result: [...batch, m, n] with this's m name and y's n name.",
    args: [tensor('y'), bool('transposeY', { default: false })] },
  { name: 'transpose', on: 'tensor', doc: 'Swaps the names of axes a and b (extents travel with the data); a view.',
    args: [axis('a'), axis('b')] },
  // ---- views and structure: views where the strides allow, else one copy
  { name: 'broadcastTo', on: 'tensor', doc: "Broadcasts to exactly these axes and extents: this tensor's axes must be among them with the same extents; the others are new (a view that repeats the values).",
    args: [tags('tags'), shape('shape')] },
  { name: 'permuteTo', on: 'tensor', doc: 'The same axes in the given order (a permutation of tags).', args: [tags('order')] },
  { name: 'withTags', on: 'tensor', doc: 'Renames every axis, position by position (as many names as axes).', args: [tags('tags')] },
  { name: 'narrow', on: 'tensor', doc: 'Elements start .. start+length−1 along axis (a view).',
    args: [axis('axis'), int('start', { min: 0 }), int('length', { min: 0 })] },
  { name: 'indexSelect', on: 'tensor', doc: 'Embedding lookup: `axis` is replaced, in place, by the axes of the i32/i64 indices.',
    args: [axis('axis'), tensor('indices')] },
  unary('contiguous', 'The same tensor with contiguous row-major storage (a copy only if needed).'),
  { name: 'insertAxis', on: 'tensor', doc: 'A new axis of extent 1 at position (0 .. rank).',
    args: [axis('axis'), int('position', { min: 0, max: 2 ** 31 - 1, cpp: 'size' })] },
  { name: 'squeeze', on: 'tensor', doc: 'Removes an axis of extent 1 (InvalidArgument otherwise).', args: [axis('axis')] },
  { name: 'merge', on: 'tensor', doc: 'Fuses axes into one named `into`, row-major over the listed order, where the first was.',
    args: [tags('axes'), axis('into')] },
  { name: 'split', on: 'tensor', doc: 'Inverse of merge: axis becomes the axes `into` (row-major; the extents multiply to its extent).',
    args: [axis('axis'), tags('into'), shape('extents')] },
  { name: 'flatten', on: 'tensor', doc: 'Every axis fused into one named `into`, row-major over the current axis order.', args: [axis('into')] },
  { name: 'reshape', on: 'tensor', doc: 'New axes and extents over the same elements in row-major order of the current axes.',
    args: [tags('tags'), shape('shape')] },
  { name: 'select', on: 'tensor', doc: 'The slice at index along axis (negative counts from the end); drops the axis.',
    args: [axis('axis'), int('index')] },
  { name: 'slice', on: 'tensor', doc: 'Elements start, start+step, ... below end along axis (0 <= start <= end <= extent, step >= 1).',
    args: [axis('axis'), int('start', { min: 0 }), int('end', { min: 0 }), int('step', { min: 1, default: 1 })] },
  { name: 'pad', on: 'tensor', doc: '`before` and `after` elements of `value` (default 0) added on each side of axis.',
    args: [axis('axis'), int('before', { min: 0 }), int('after', { min: 0 }), number('value', { default: 0 })] },
  { name: 'maskedFill', on: 'tensor', doc: "value where mask (u8 or f32, axes a subset of this tensor's) is nonzero; gradient 0 there.",
    args: [tensor('mask'), number('value')] },
  // label 'bound': the name these ops' messages have always used for their limits.
  { name: 'tril', on: 'tensor', doc: 'Keeps the elements with col − row <= diagonal (default 0), zeroes the rest.',
    args: [axis('row'), axis('col'), int('diagonal', { default: 0, label: 'bound' })] },
  { name: 'triu', on: 'tensor', doc: 'Keeps the elements with col − row >= diagonal (default 0), zeroes the rest.',
    args: [axis('row'), axis('col'), int('diagonal', { default: 0, label: 'bound' })] },
  { name: 'bandPart', on: 'tensor', doc: 'Keeps row − col <= lower and col − row <= upper, zeroes the rest; −1 is unbounded (as TF).',
    args: [axis('row'), axis('col'), int('lower', { label: 'bound' }), int('upper', { label: 'bound' })] },
  { name: 'dropout', on: 'tensor',
    doc: 'Zeroes each element with probability p and scales the rest by 1/(1−p); the mask is a pure function of (seed, element index), the same in every build and recompute.',
    args: [number('p'), int('seed', { min: 0, cpp: 'seed' })] },
  // ---- convolution and pooling
  { name: 'conv2d', on: 'tensor',
    doc: "2-D cross-correlation (torch's conv2d) via im2col + GEMM. The input has axes c, h, w plus any batch axes, in any order; the weight has exactly out, c (= input c / groups), kh, kw. The result keeps the input's axis order with c replaced by out.",
    args: [tensor('weight'), conv2dOptions], cpp: conv2dCpp('conv2d') },
  { name: 'conv2dRelu', on: 'tensor',
    doc: "relu(conv2d(weight, options)) as one op: the bias and relu applied in the convolution's output loop, and one VJP whose gradients are the composed ops' (relu's mask read from the result). With options.maxPool, also max pooled in the same op: conv2dRelu then maxPool2d's values and gradients, without the full-size result.",
    args: [tensor('weight'), conv2dOptions], cpp: conv2dCpp('conv2dRelu') },
  { name: 'conv1d', on: 'tensor',
    doc: "1-D cross-correlation (torch's conv1d). The input has axes c and t plus any batch axes; the weight has exactly out, c (= input c / groups), k. The result keeps the input's axis order with c replaced by out.",
    args: [tensor('weight'), options('options', [convBias,
      int('stride', { min: 1, default: 1, doc: 'Step between windows, >= 1 (default 1).' }),
      int('padding', { min: 0, default: 0, doc: 'Zeros added on each side, >= 0 (default 0).' }),
      int('dilation', { min: 1, default: 1, doc: 'Spacing of the kernel taps, >= 1 (default 1).' }),
      int('groups', { min: 1, default: 1, doc: 'Channel groups, dividing channels and outChannels (default 1).' }),
      conv1dAxes], { type: 'Conv1dOptions', doc: 'Options of {@link Tensor.conv1d}.' })],
    cpp: `const fucina::Conv1dOptions o{.channels = channels, .length = length, .out_channels = outChannels, .kernel = kernel,
                                   .stride = stride, .padding = padding, .dilation = dilation, .groups = groups};
          return bias ? self.conv1d(ctx(), weight, *bias, o) : self.conv1d(ctx(), weight, o);` },
  { name: 'convTranspose1d', on: 'tensor',
    doc: "torch's conv_transpose1d, the adjoint of conv1d. The weight has exactly c (the input's), out (= result channels / groups), k; the result keeps the input's axis order with c replaced by out.",
    args: [tensor('weight'), options('options', [convBias,
      int('stride', { min: 1, default: 1, doc: 'Stride of the convolution this is the adjoint of (default 1).' }),
      int('padding', { min: 0, default: 0, doc: 'Removed from both ends of the full output (default 0).' }),
      int('outputPadding', { min: 0, default: 0, doc: 'Added to one end, smaller than the stride or the dilation (default 0).' }),
      int('dilation', { min: 1, default: 1, doc: 'Spacing of the kernel taps (default 1).' }),
      int('groups', { min: 1, default: 1, doc: 'Channel groups (default 1).' }),
      conv1dAxes], { type: 'ConvTranspose1dOptions', doc: 'Options of {@link Tensor.convTranspose1d}.' })],
    cpp: `const fucina::ConvTranspose1dOptions o{.channels = channels, .length = length, .out_channels = outChannels,
                                            .kernel = kernel, .stride = stride, .padding = padding,
                                            .output_padding = outputPadding, .dilation = dilation, .groups = groups};
          return bias ? self.convTranspose1d(ctx(), weight, *bias, o) : self.convTranspose1d(ctx(), weight, o);` },
  { name: 'causalConv1d', on: 'tensor',
    doc: 'conv1d left-padded by (k − 1)·dilation, so output t sees inputs up to t; the length is kept.',
    args: [tensor('weight'), causalOptions('CausalConv1dOptions', 'Options of {@link Tensor.causalConv1d}.')],
    cpp: causalCpp('causalConv1d(ctx(), weight, *bias, dilation, axes)', 'causalConv1d(ctx(), weight, dilation, axes)') },
  { name: 'groupedCausalConv1d', on: 'tensor', doc: 'causalConv1d with channels in `groups` independent groups.',
    args: [tensor('weight'), int('groups', { min: 1 }), causalOptions('CausalConv1dOptions', 'Options of {@link Tensor.causalConv1d}.')],
    cpp: causalCpp('groupedCausalConv1d(ctx(), weight, *bias, groups, dilation, axes)', 'groupedCausalConv1d(ctx(), weight, groups, dilation, axes)') },
  { name: 'causalDepthwiseConv1d', on: 'tensor',
    doc: 'The causal convolution with one group per input channel (the short convolution of Mamba-style blocks); the weight is {out, c: 1, k}, out a multiple of c.',
    args: [tensor('weight'), options('options', [convBias, conv1dAxes],
      { type: 'CausalDepthwiseConv1dOptions', doc: 'Options of {@link Tensor.causalDepthwiseConv1d}.' })],
    cpp: `const fucina::Conv1dAxes axes{.channels = channels, .length = length, .out_channels = outChannels, .kernel = kernel};
          return bias ? self.causalDepthwiseConv1d(ctx(), weight, *bias, axes) : self.causalDepthwiseConv1d(ctx(), weight, axes);` },
  { name: 'unfold', on: 'tensor',
    doc: "torch's unfold (im2col): every kernel window of the images {batch.., c, h, w} as columns {batch.., patch (c·kh·kw), l (positions)}.",
    args: [pair('kernel', { min: 1 }), unfoldOptions], cpp: unfoldCpp('unfold(ctx(), kernel[0], kernel[1], o)') },
  { name: 'fold', on: 'tensor',
    doc: "torch's fold (col2im), unfold's adjoint: columns {batch.., patch, l} summed back into images of outputSize.",
    args: [pair('outputSize', { min: 1 }), pair('kernel', { min: 1 }), unfoldOptions],
    cpp: unfoldCpp('fold(ctx(), outputSize[0], outputSize[1], kernel[0], kernel[1], o)') },
  { name: 'channelAffine', on: 'tensor', doc: 'this · scale + shift per channel (a frozen batch norm); scale and shift have the single axis channelAxis; gradients to all three.',
    args: [tensor('scale'), tensor('shift'), axis('channelAxis')] },
  { name: 'maxPool2d', on: 'tensor',
    doc: "Max over kernel windows of axes h and w (−inf padding); the gradient goes to each window's first maximum; stride defaults to the kernel.",
    args: [pair('kernel', { min: 1 }), poolOptions], cpp: poolCpp('maxPool2d') },
  { name: 'avgPool2d', on: 'tensor',
    doc: "Mean over kernel windows of axes h and w; zero padding counts in the divisor (torch's count_include_pad=True).",
    args: [pair('kernel', { min: 1 }), poolOptions], cpp: poolCpp('avgPool2d') },
  { name: 'upsample2xNearest', on: 'tensor',
    doc: "Doubles axes height and width (default 'h', 'w') by repeating each element in a 2x2 block; the gradient sums each block.",
    args: [axis('height', { default: 'h' }), axis('width', { default: 'w' })] },
  // ---- quantization and comparison (constants, no gradient)
  { name: 'quantize', on: 'tensor',
    doc: "Block quantization of an f32, f16 or bf16 tensor to q8_0: blocks of 32 consecutive elements along `axis` (its extent a multiple of 32), each stored as an f16 scale d = max|x|/127 and 32 int8 values round(x/d) (ties away from zero), 34 bytes per 32 values. The result is a constant with the same tags and shape; to('f32') dequantizes.",
    // Any dtype name passes here; the engine refuses those it cannot quantize to, naming them.
    args: [oneOf('dtype', ENUMS.dtype, { ts: "'q8_0'" }), axis('axis')] },
  { name: 'compare', on: 'tensor',
    doc: "Elementwise comparison `this op y` (== != < <= > >=), axes aligned by name and broadcast as in add: a u8 tensor of 1 (true) and 0 (false), never differentiable. Any dtypes on either side (i64 with i64 compares exactly, anything else by value in f64); NaN compares false except under 'ne'. An unknown op is InvalidArgument.",
    args: [tensor('y'), oneOf('op', ENUMS.compareOp)] },

  // ---- engine functions: ops over several tensors
  { name: 'concat', on: 'engine', doc: "Joins tensors with the same axes along axis (in the first tensor's axis order).",
    args: [tensors('tensors'), axis('axis')] },
  { name: 'stack', on: 'engine', doc: 'Adds axis (first) to each tensor and joins along it.', args: [tensors('tensors'), axis('axis')] },
  { name: 'bandMask', on: 'engine',
    doc: 'A u8 {row: rows, col: cols} mask: 1 where row − col <= lower and col − row <= upper (−1 leaves a side unbounded; lower −1, upper 0 is causal).',
    args: [axis('row'), axis('col'), int('rows', { min: 0 }), int('cols', { min: 0 }), int('lower', { min: -1 }), int('upper', { min: -1 })] },
  { name: 'einsumMany', on: 'engine',
    doc: 'einsum of any number of operands, composed of binary einsums in a cost-chosen order (the pair with the smallest intermediate first); the result has exactly outTags.',
    args: [tensors('operands'), tags('outTags')] },
  { name: 'einsum', on: 'engine',
    doc: 'Named-axis einsum: axes shared by a and b are batch axes if outTags keeps them, else contracted; axes only one has are kept if in outTags, else summed away. Result axes are exactly outTags, in order.',
    args: [tensor('a'), tensor('b'), tags('outTags')] },
  { name: 'where', on: 'engine', doc: 'a where cond (u8, or f32 nonzero) else b, axes aligned by name; gradients to a and b.',
    args: [tensor('cond'), tensor('a'), tensor('b')] },
  { name: 'groupedAttention', on: 'engine',
    doc: "softmax(scale·q·kᵀ [+ causal mask])·v per head. q {batch..., heads: H, time: Tq, dim: D}, k {batch..., heads: Hkv, time: Tk, dim: D}, v {batch..., heads: Hkv, time: Tk, dim: Dv}; H a multiple of Hkv (query head h reads kv head h / (H / Hkv)). Result {batch... (q's order), heads, time, dim: Dv}.",
    args: [tensor('q'), tensor('k'), tensor('v'), options('options', [
      axis('heads', { default: 'head', doc: "The heads axis (default 'head')." }),
      axis('time', { default: 't', doc: "The time axis (default 't')." }),
      axis('dim', { default: 'd', doc: "The feature axis (default 'd')." }),
      bool('causal', { default: true, doc: 'End-aligned causal mask: query i sees keys j <= i + Tk - Tq (default true).' }),
      number('scale', { default: null, nullable: true, doc: 'Multiplies the scores (default 1/sqrt(D)).' }),
    ], { type: 'AttentionOptions', doc: 'Options of {@link Fucina.groupedAttention}: the axis names and the masking.' })],
    cpp: 'Tensor::groupedAttention(ctx(), q, k, v, {.heads = heads, .time = time, .dim = dim, .causal = causal, .scale = scale})' },
  // ---- views, flips and shifts
  { name: 'alignTo', on: 'tensor',
    doc: "torch's align_to: exactly these axes, in this order; this tensor's axes must be among them (keeping their extents), the others are new axes of extent 1. A view.",
    args: [tags('tags')] },
  { name: 'viewWithStrides', on: 'tensor',
    doc: "torch.as_strided: element (i0, i1, ...) of the result is element offset + Σ i_k·strides[k] of this tensor's elements in row-major order of its axes. Strides and offset count elements; every element reached must exist. A view (of a contiguous copy when this tensor is strided); elements read several times accumulate their gradients.",
    args: [tags('tags'), shape('shape'), shape('strides'), int('offset', { min: 0, default: 0 })] },
  unary('materialize', 'A fresh contiguous copy that shares no storage, even when this tensor is already contiguous.'),
  { name: 'sliceStep', on: 'tensor',
    doc: "Python's x[start:end:step] along axis: negative start and end count from the end and are clamped as Python clamps them; a negative step walks down from start (end <= −extent−1 reaches index 0). Step 0 is InvalidArgument. A view for a positive step, a copy for a negative one.",
    args: [axis('axis'), int('start'), int('end'), int('step', { default: 1 })] },
  { name: 'zeroPad2d', on: 'tensor',
    doc: "torch.nn.functional.pad with zeros of two named axes: left and right on wAxis, top and bottom on hAxis. A negative pad crops.",
    args: [axis('hAxis'), axis('wAxis'), int('left'), int('right'), int('top'), int('bottom')],
    cpp: 'self.zeroPad2d(ctx(), hAxis, wAxis, {left, right, top, bottom})' },
  { name: 'constantPad2d', on: 'tensor',
    doc: 'zeroPad2d with `value` (default 0) in place of zeros. A negative pad crops.',
    args: [axis('hAxis'), axis('wAxis'), int('left'), int('right'), int('top'), int('bottom'), number('value', { default: 0 })],
    cpp: 'self.constantPad2d(ctx(), hAxis, wAxis, {left, right, top, bottom}, value)' },
  { name: 'unbindInto', on: 'tensor', doc: 'torch.unbind: one view per index along axis (which they drop), in order.',
    args: [axis('axis')], returns: { kind: 'tensors', ts: 'Tensor[]' } },
  { name: 'repeatAxis', on: 'tensor',
    doc: "times copies along axis: tiled [x, x, ...] (torch's repeat on one dim), or with interleave each element repeated in place (torch.repeat_interleave, grouped-query attention's KV heads). The gradient sums the copies.",
    args: [axis('axis'), int('times', { min: 0 }), bool('interleave', { default: false })] },
  { name: 'flip', on: 'tensor', doc: 'torch.flip along one axis (a copy).', args: [axis('axis')] },
  { name: 'roll', on: 'tensor', doc: 'torch.roll along one axis: element i moves to (i + shift) mod extent; any shift wraps.',
    args: [axis('axis'), int('shift')] },
  { name: 'rollBy', on: 'tensor',
    doc: 'A roll per slice: shifts is an i32/i64 tensor with exactly the axis byAxis (this tensor\'s extent), and the slice at index b of byAxis is rolled along axis by shifts[b].',
    args: [axis('axis'), axis('byAxis'), tensor('shifts')] },
  { name: 'shiftBy', on: 'tensor',
    doc: 'As rollBy, but shifting with zero fill: element i moves to i + shifts[b] when that is inside the axis; vacated places are 0.',
    args: [axis('axis'), axis('byAxis'), tensor('shifts')] },
  { name: 'relposShift', on: 'tensor',
    doc: "Transformer-XL's relative-position shift of scores x[.., q, k]: pad a zero column before k, read (Q, K+1) as (K+1, Q), drop the first row, read back as (Q, K). The result has the other axes in this tensor's order, then queryAxis, keyAxis.",
    args: [axis('queryAxis'), axis('keyAxis')] },

  // ---- diagonals, masked selection and indexed updates
  { name: 'diagonal', on: 'tensor',
    doc: 'torch.diagonal: a view of the offset diagonal of axes a and b (> 0 above the main one), which are dropped; the new axis `into` (it may reuse a or b) comes last. An offset past the matrix gives an empty axis.',
    args: [axis('a'), axis('b'), int('offset'), axis('into')] },
  { name: 'trace', on: 'tensor', doc: 'The sum of the main diagonal of axes a and b (torch.trace); other axes are kept as a batch.',
    args: [axis('a'), axis('b')] },
  { name: 'diag', on: 'tensor',
    doc: "torch.diag in both directions: diag([axis], [intoA, intoB], offset) puts `axis` on the offset diagonal of a new square [intoA, intoB] (as diagEmbed; other axes are a batch); diag([a, b], [into], offset) is the diagonal of a two-axis tensor. Other lengths are InvalidArgument.",
    args: [tags('from', { ts: 'readonly [string] | readonly [string, string]' }), tags('into', { ts: 'readonly [string] | readonly [string, string]' }),
      int('offset', { default: 0 })],
    cpp: `if (from.size() == 2 && into.size() == 1) return self.diag(ctx(), from[0], from[1], offset, into[0]);
      if (from.size() != 1 || into.size() != 2) invalid("diag: from and into must be [axis] and [intoA, intoB] (vector to matrix) or [a, b] and [into] (matrix to vector), got " + std::to_string(from.size()) + " and " + std::to_string(into.size()) + " names");
      return self.diag(ctx(), from[0], into[0], into[1], offset);` },
  { name: 'diagEmbed', on: 'tensor',
    doc: 'torch.diag_embed: `axis` (extent n) is replaced, in place, by two new axes intoA and intoB of extent n + |offset|, zero but for the offset diagonal, which holds the values.',
    args: [axis('axis'), axis('intoA'), axis('intoB'), int('offset', { default: 0 })] },
  { name: 'indexAdd', on: 'tensor',
    doc: "torch.index_add, out of place: source row j along `axis` is added to row indices[j] (1-D i32/i64 indices; source has this tensor's axes and extents but the indices' extent along `axis`). Repeats accumulate, in index order; gradients to this tensor and source.",
    args: [axis('axis'), tensor('indices'), tensor('source')] },
  { name: 'scatter', on: 'tensor',
    doc: 'torch.scatter, out of place: each src element (src shaped as the indices, as in scatterAdd) overwrites its target; of several aiming at one element, the last along `axis` wins. Gradients as torch: zero where written; src gets the gradient gathered at the indices.',
    args: [axis('axis'), tensor('indices'), tensor('src')] },
  { name: 'maskedSelect', on: 'tensor',
    doc: "torch.masked_select: the elements where mask (u8 or f32, nonzero set; axes among this tensor's) is set, row-major in this tensor's axis order, as one axis `into`.",
    args: [tensor('mask'), axis('into')] },
  { name: 'maskedScatter', on: 'tensor',
    doc: 'torch.masked_scatter: the k positions mask sets (as maskedSelect) take the first k elements of source, row-major in its own axis order (ShapeMismatch when it has fewer).',
    args: [tensor('mask'), tensor('source')] },
  { name: 'setSlice', on: 'tensor',
    doc: "Out of place torch.slice_scatter: [start, start + its extent) along `axis` replaced by source (same dtype, this tensor's axes and extents but along `axis`).",
    args: [axis('axis'), int('start', { min: 0 }), tensor('source')] },
  { name: 'setRows', on: 'tensor',
    doc: 'Out of place torch.index_copy: rows indices[j] along `axis` replaced by source row j (indices and source as indexAdd); of repeated indices the last wins.',
    args: [axis('axis'), tensor('indices'), tensor('source')] },
  { name: 'zeroSlice', on: 'tensor', doc: 'A copy with [start, end) along `axis` zeroed (0 <= start <= end <= extent); gradient zero there.',
    args: [axis('axis'), int('start', { min: 0 }), int('end', { min: 0 })] },
  { name: 'zeroRows', on: 'tensor', doc: 'A copy with the rows at the 1-D i32/i64 indices along `axis` zeroed (torch.index_fill with 0).',
    args: [axis('axis'), tensor('indices')] },
];

/**
 * Ops of src/fucina/ops/ops.list that the facade writes by hand (in facade.mjs, bindings.cpp and
 * index.d.ts outside the generated blocks), with the reason; tests/js/op_table.test.mjs checks
 * they exist at run time and in the .d.ts.
 */
export const HAND_WRITTEN = {
  rope: 'two call forms: rope(options), or rope(cos, sin, options) with constant tables',
  packRhs: 'returns a PackedRhs handle (web/facade.mjs), not a Tensor',
  dotPacked: 'takes a PackedRhs handle, which the table has no argument kind for',
  rmsNormMulDotPacked: 'takes a PackedRhs handle',
  splitSwiGluDotPacked: 'takes a PackedRhs handle',
  gegluQuantDotPacked: 'takes a PackedRhs handle',
  prepareConv2dWeights: 'returns a PreparedConv2d handle (dispose() frees it), not a Tensor; takes conv2d\'s options',
  conv2dPrepared: 'takes a PreparedConv2d handle, not a Tensor',
  conv2dPreparedRelu: 'takes a PreparedConv2d handle, not a Tensor',
};

/** Ops of ops.list deliberately not in JS, with the reason (none so far). */
export const NOT_IN_JS = {};
