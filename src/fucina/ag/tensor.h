/// @file
/// Tensor: a cheap refcounted handle (copy = share) to one value and at most one GradState.
/// Constants have no GradState; variables have a leaf one; op results get one (with a VJP record)
/// when an operand requires gradients and gradients are enabled.
#pragma once

#include <array>
#include <atomic>
#include <functional>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "fucina/ag/grad_state.h"
#include "fucina/core/raw_tensor.h"
#include "fucina/exec/context.h"
#include "fucina/exec/scope.h"

namespace fucina {

/// How a loss reduces its per-element values.
enum class Reduction { mean, sum, none };

/// The relation Tensor::compare tests elementwise: ==, !=, <, <=, >, >=.
enum class CompareOp { eq, ne, lt, le, gt, ge };

struct CrossEntropyOptions {
  Reduction reduction = Reduction::mean;
  double label_smoothing = 0.0;  ///< in [0, 1): the target puts (1-s) on the label and s/C everywhere
};

class Tensor;
class PackedRhs;  // ag/packed.h

/// crossEntropyExt's and linearCrossEntropyExt's options: torch.nn.functional.cross_entropy's
/// (ignore_index, weight, label_smoothing, reduction) plus a z-loss and the linear forms' chunk.
/// Integer labels: row r's loss is -(1-s)·w[y]·logp[y] - (s/C)·sum_c w[c]·logp[c] + z·lse²
/// (lse the row's logsumexp), 0 for a row whose label is ignore_index; mean divides the sum by
/// the sum of w[y] over the counted rows (their count without weights), NaN when that is 0, as
/// torch. Soft targets t (probabilities): -sum_c w[c]·t'[c]·logp[c] + z·lse² with
/// t' = (1-s)·t + s/C, and mean divides by the number of rows (torch's rule; ignore_index
/// does not apply). The z term is not weighted by w.
struct CrossEntropyExtOptions {
  Reduction reduction = Reduction::mean;
  double label_smoothing = 0.0;   ///< s, in [0, 1)
  int64_t ignore_index = -100;    ///< rows with this label add nothing and are not counted
  /// Class weights: a constant f32 tensor with the single axis `class_axis` (extent C), or null
  /// for none. Read when the op is called (the op keeps its own reference to the values).
  const Tensor* weight = nullptr;
  double z_loss = 0.0;            ///< z >= 0: adds z·logsumexp² per counted row (PaLM's z-loss)
  int64_t chunk_rows = 256;       ///< linearCrossEntropyExt: rows per chunk of logits (>= 1)
};

/// linearDistillExt's options. Per row, with q = softmax(student/T) and p the teacher's
/// distribution (softmax(teacher/T), or the teacher tensor itself when teacher_probs):
/// KD = T²·KL(p, q) = T²·sum_c p[c]·(log p[c] - log q[c]) (terms with p[c] = 0 are 0), and
/// CE the hard-label cross-entropy of the student logits at temperature 1 (ignore_index rows are
/// 0). The loss is (1 - alpha)·KD + alpha·CE. mean: KD summed over rows / rows (torch's
/// kl_div 'batchmean') plus CE summed / counted rows (cross_entropy's mean); sum: both summed;
/// none: per row.
struct DistillOptions {
  double temperature = 1.0;        ///< T > 0
  double alpha = 0.0;              ///< weight of the hard-label term, in [0, 1]
  const Tensor* labels = nullptr;  ///< i32/i64 labels (the rows' axes); required when alpha > 0
  bool teacher_probs = false;      ///< the teacher tensor holds probabilities, not logits
  Reduction reduction = Reduction::mean;
  int64_t ignore_index = -100;
  int64_t chunk_rows = 256;        ///< rows per chunk of logits (>= 1)
};

/// rmsNormMulRopeHalfPrepared's axes and epsilon: the rope position axis and offset into the
/// prepared tables (as RopeOptions), and rmsNorm's eps.
struct RmsNormRopeOptions {
  Tag position = "t";
  int64_t offset = 0;
  double eps = 1e-6;
};

/// conv2d's axes and geometry. The input holds `channels`, `height` and `width` plus any other
/// (batch-like) axes, in any order; the weight holds exactly {out_channels, channels, kernel_h,
/// kernel_w} (its `channels` extent is the input's channels / groups), in any order.
struct Conv2dOptions {
  Tag channels = "c", height = "h", width = "w";
  Tag out_channels = "out", kernel_h = "kh", kernel_w = "kw";
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_h = 0, pad_w = 0;            ///< zero padding on both sides
  int64_t dilation_h = 1, dilation_w = 1;
  int64_t groups = 1;  ///< channels and out_channels split into this many independent groups
  /// conv2dRelu only: max pooling of the result over max_pool x max_pool windows, stride
  /// max_pool, no padding (maxPool2d's), fused (Note [Pooled conv2dRelu]); 1: none.
  int64_t max_pool = 1;
};

/// conv1d's axes and geometry, as Conv2dOptions's with one spatial axis: the input holds
/// `channels` and `length` plus any other (batch-like) axes, in any order; the weight holds
/// exactly {out_channels, channels, kernel} (its `channels` extent is the input's channels / groups).
struct Conv1dOptions {
  Tag channels = "c", length = "t";
  Tag out_channels = "out", kernel = "k";
  int64_t stride = 1;
  int64_t padding = 0;  ///< zero padding on both sides
  int64_t dilation = 1;
  int64_t groups = 1;  ///< channels and out_channels split into this many independent groups
};

/// convTranspose1d's axes and geometry. The input holds `channels` and `length` plus any other
/// axes; the weight holds exactly {channels, out_channels, kernel} as torch's (in_channels,
/// out_channels / groups, kernel): its `channels` extent is the input's, its `out_channels` extent
/// the result's / groups.
struct ConvTranspose1dOptions {
  Tag channels = "c", length = "t";
  Tag out_channels = "out", kernel = "k";
  int64_t stride = 1;
  int64_t padding = 0;         ///< removed from both ends of the full output
  int64_t output_padding = 0;  ///< added to one end; smaller than the stride or the dilation
  int64_t dilation = 1;
  int64_t groups = 1;
};

/// The axis names of the causal 1-D convolutions (as Conv1dOptions's).
struct Conv1dAxes {
  Tag channels = "c", length = "t";
  Tag out_channels = "out", kernel = "k";
};

/// unfold's and fold's axes and geometry. Images hold `channels`, `height` and `width`; columns
/// hold `patch` (channels·kernel_h·kernel_w, channel-major as torch's) and `positions` (the
/// out_h·out_w kernel positions, row-major); both sides keep every other axis as a batch axis.
struct UnfoldOptions {
  Tag channels = "c", height = "h", width = "w";
  Tag patch = "patch", positions = "l";
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_h = 0, pad_w = 0;  ///< zero padding on both sides
  int64_t dilation_h = 1, dilation_w = 1;
};

/// rope's axes and frequencies. Pairs of the `dim` axis (extent D, even) are rotated by the angle
/// (offset + p)·θ_i at position p, θ_i = base^(-2i/D), i < D/2. half pairs (i, i + D/2) (GPT-NeoX,
/// HF llama); interleaved pairs (2i, 2i+1) (original RoPE, GPT-J).
struct RopeOptions {
  Tag position = "t";
  Tag dim = "d";
  double base = 10000.0;
  int64_t offset = 0;  ///< position of the first element along `position` (a KV-cache's length)
  enum class Mode { half, interleaved } mode = Mode::half;
};

/// groupedAttention's axis names, mask and score scale (default 1/sqrt(D)).
struct AttentionOptions {
  Tag heads = "head";
  Tag time = "t";
  Tag dim = "d";
  bool causal = true;  ///< end-aligned: query i sees keys j <= i + Tk - Tq
  std::optional<double> scale = std::nullopt;
};

/// groupNorm's batch axes (statistics are per batch element and group) and epsilon.
struct GroupNormOptions {
  Tags batch = {"batch"};  ///< each must be an axis of the input (else ShapeMismatch)
  double eps = 1e-5;
};

struct SortResult;  // topK's and sort's result, defined after Tensor
class PreparedConv2d;  // prepareConv2dWeights's handle, defined after Tensor

namespace internal {
// A value computed on first read, once (Note [Checkpoint tail], ag/checkpoint.h). Shared by the
// pending Tensor and by the computations of results that read it, so that disposing the Tensor
// does not strand them.
class PendingValue {
 public:
  explicit PendingValue(std::function<RawTensor()> compute) : compute_(std::move(compute)) {}
  const RawTensor& get();  // computes on the first call; on a throw it stays pending

 private:
  std::mutex mutex_;
  std::function<RawTensor()> compute_;  // dropped once run, with what it captured
  RawTensor value_;
};

// What a pending result's computation reads of an operand: its value, or its pending value.
class ValueSource {
 public:
  ValueSource(RawTensor value, std::shared_ptr<PendingValue> pending)
      : value_(std::move(value)), pending_(std::move(pending)) {}
  const RawTensor& get() const { return pending_ ? pending_->get() : value_; }

 private:
  RawTensor value_;
  std::shared_ptr<PendingValue> pending_;
};
}  // namespace internal

// Shared body of Tensor handles. Internal; reached through Tensor::impl().
class TensorImpl final : public Releasable {
 public:
  TensorImpl(ExecContext& ctx, internal::RawTensor value, std::shared_ptr<GradState> state);
  // A pending value (Note [Checkpoint tail], ag/checkpoint.h): `meta` carries its tags, shape and
  // dtype; `compute` makes it on first read.
  TensorImpl(ExecContext& ctx, internal::RawTensor meta, std::function<internal::RawTensor()> compute,
             std::shared_ptr<GradState> state);
  ~TensorImpl();
  TensorImpl(const TensorImpl&) = delete;
  TensorImpl& operator=(const TensorImpl&) = delete;

  // Drops the value and gradient state (dispose / scope close). Idempotent.
  void release() override;
  bool released() const { return released_; }
  const internal::RawTensor& value() const;  // throws TensorReleased after release()
  // Tags, shape and dtype (and nothing else: a pending value's storage is a placeholder), without
  // computing a pending value. Throws TensorReleased after release().
  const internal::RawTensor& meta() const;
  bool pending() const { return has_pending_.load(std::memory_order_acquire); }
  // The value, or the pending value, without computing it (for a pending result's computation).
  internal::ValueSource source() const;
  const std::shared_ptr<GradState>& gradState() const { return grad_state_; }
  // The value as contiguous f32: the value itself, or a copy made once and kept.
  const internal::RawTensor& contiguousF32(ExecContext* ctx) const;
  // Forgets that copy: the value was written in place (an optimizer's update of a 16-bit leaf).
  void dropF32Cache();

 private:
  mutable std::mutex cache_mutex_;  // also guards computing a pending value
  mutable internal::RawTensor f32_cache_;
  mutable internal::RawTensor value_;  // a pending value's placeholder until it is computed
  mutable std::shared_ptr<internal::PendingValue> pending_;
  mutable std::atomic<bool> has_pending_{false};
  std::shared_ptr<GradState> grad_state_;
  std::shared_ptr<MemoryAccount> account_;
  bool released_ = false;
};

class Tensor {
 public:
  Tensor() = default;  ///< an empty handle; every use throws InvalidArgument

  // --- constants (no GradState) ---
  static Tensor fromSlice(ExecContext& ctx, Tags tags, Extents shape, std::span<const float> values);
  static Tensor fromSlice(ExecContext& ctx, Tags tags, Extents shape, std::initializer_list<float> values);
  static Tensor zeros(ExecContext& ctx, Tags tags, Extents shape, DType dtype = DType::f32);
  static Tensor ones(ExecContext& ctx, Tags tags, Extents shape, DType dtype = DType::f32);
  static Tensor full(ExecContext& ctx, Tags tags, Extents shape, double value, DType dtype = DType::f32);
  static Tensor scalar(ExecContext& ctx, double value, DType dtype = DType::f32);
  static Tensor fromRaw(ExecContext& ctx, internal::RawTensor value);  ///< wraps, no copy
  /// Integer constants (labels, indices): i32 by default, or i64/u8; exact up to |v| < 2^24 in f32 views.
  static Tensor fromInts(ExecContext& ctx, Tags tags, Extents shape, std::span<const int64_t> values,
                         DType dtype = DType::i32);
  static Tensor fromInts(ExecContext& ctx, Tags tags, Extents shape,
                         std::initializer_list<int64_t> values, DType dtype = DType::i32);
  /// Seeded random f32 constants: element i (row-major) is a pure function of (seed, i), the same
  /// in every build. uniform draws from [lo, hi); normal from N(mean, std^2) (Box–Muller).
  static Tensor uniform(ExecContext& ctx, Tags tags, Extents shape, double lo, double hi, uint64_t seed);
  static Tensor normal(ExecContext& ctx, Tags tags, Extents shape, double mean, double std, uint64_t seed);
  // --- variables (leaf GradState): f32, or f16/bf16 whose gradient is always f32 ---
  /// values are rounded to dtype (nearest even); f64, integer and q8_0 are UnsupportedGradient.
  static Tensor variableFromSlice(ExecContext& ctx, Tags tags, Extents shape, std::span<const float> values,
                                  DType dtype = DType::f32);
  static Tensor variableFromSlice(ExecContext& ctx, Tags tags, Extents shape, std::initializer_list<float> values,
                                  DType dtype = DType::f32);
  /// A leaf holding a copy of value, in value's dtype (f32, f16 or bf16).
  static Tensor variable(ExecContext& ctx, const Tensor& value);

  bool defined() const { return impl_ != nullptr; }
  DType dtype() const;
  /// Where its storage lives (only Device::cpu in this build).
  Device device() const;
  const Tags& tags() const;
  const Extents& shape() const;
  int64_t numel() const;
  size_t rank() const { return tags().size(); }
  int64_t extent(Tag tag) const;
  bool requiresGrad() const;
  GradState* gradState() const;

  // --- autograd: backward, and reading, seeding and resetting gradients ---
  void backward(ExecContext& ctx) const;
  void backwardWithGrad(ExecContext& ctx, const Tensor& grad_output) const;
  /// The accumulated gradient: f32 whatever this tensor's dtype (none for constants and before a
  /// backward pass). f64 tensors: UnsupportedGradient (they never have one).
  std::optional<Tensor> grad(ExecContext& ctx) const;      ///< deep copy, a constant
  std::optional<Tensor> gradView(ExecContext& ctx) const;  ///< shares the accumulator's buffer
  void zeroGrad() const;
  Tensor detach(ExecContext& ctx) const;  ///< constant sharing this value's storage

  // --- values ---
  std::span<float> data();                   ///< MutableDataRequiresNoGrad when requiresGrad()
  std::span<const float> dataConst() const;  ///< f32, contiguous: a view, or a cached copy
  float item() const;                        ///< one-element tensors
  std::vector<float> toVector() const;
  /// Casts: a contiguous copy in dtype (16-bit targets round to nearest even; q8_0 sources
  /// dequantize; a q8_0 target is DTypeMismatch: use quantize). Differentiable between f32, f16
  /// and bf16, the gradient crossing as f32; to any other dtype of a tensor that requires
  /// gradients is GradientCastUnsupported.
  Tensor to(ExecContext& ctx, DType dtype) const;
  /// A copy on `device`, made through the context ctx.on(device) (Note [Device reads]): to webgpu
  /// an upload; to the cpu from webgpu DeviceReadIsAsync (the read is the facade's `await
  /// t.data()`). Moving a tensor that requires gradients is UnsupportedOnDevice: its gradient
  /// would have to come back synchronously. Make leaves on the device instead (variable of a
  /// device tensor). The same device: this tensor.
  Tensor to(ExecContext& ctx, Device device) const;
  /// Block quantization (ops/quantize.cpp, Note [q8_0 layout] in core/q8.h) of an f32, f16 or
  /// bf16 tensor (any strides): dtype must be DType::q8_0 (else InvalidArgument); blocks of 32
  /// run along block_axis, whose extent must be a multiple of 32 (else InvalidArgument; a missing
  /// axis is ShapeMismatch). Per block d = max|x| / 127, stored as f16, and q = x / d rounded to
  /// nearest, ties away from zero, clamped to [-127, 127] (d == 0: every q is 0). The result is a
  /// constant (no gradient flows through quantization), with this tensor's tags and shape, stored
  /// as the other axes in tag order with the block axis innermost; to(ctx, DType::f32) dequantizes.
  Tensor quantize(ExecContext& ctx, DType dtype, Tag block_axis) const;
  void dispose();  ///< releases value and gradient state now, for every copy of this handle

  // --- pointwise arithmetic (ops/pointwise.cpp): operands align by tag, missing axes broadcast.
  // Dtypes (Note [Dtype rules], ops/typed.h): f32 differentiates; f64 computes in double (no
  // gradient; f64 with f32/f16/bf16 gives f64); 16-bit constants compute in f32; add, sub, mul
  // and neg also take two tensors of one integer dtype (i32, i64, u8), wrapping on overflow. ---
  Tensor add(ExecContext& ctx, const Tensor& y) const;
  Tensor sub(ExecContext& ctx, const Tensor& y) const;
  Tensor mul(ExecContext& ctx, const Tensor& y) const;
  Tensor div(ExecContext& ctx, const Tensor& y) const;
  Tensor maximum(ExecContext& ctx, const Tensor& y) const;  ///< ties split the gradient evenly
  Tensor minimum(ExecContext& ctx, const Tensor& y) const;
  Tensor pow(ExecContext& ctx, const Tensor& exponent) const;
  Tensor scale(ExecContext& ctx, double factor) const;
  Tensor addScalar(ExecContext& ctx, double value) const;
  Tensor subScalar(ExecContext& ctx, double value) const;
  Tensor divScalar(ExecContext& ctx, double value) const;
  Tensor powScalar(ExecContext& ctx, double exponent) const;
  /// 1 where `this op y` holds, else 0, as a u8 constant (no gradient, even from variables);
  /// operands align and broadcast by tag as in add, and may have any element dtypes: i64 with
  /// i64 compares exactly, anything else in double. NaN compares false, except under ne.
  Tensor compare(ExecContext& ctx, const Tensor& y, CompareOp op) const;
  // --- unary (ops/unary.cpp); dtypes as the pointwise ops (neg also on integers) ---
  Tensor neg(ExecContext& ctx) const;
  Tensor abs(ExecContext& ctx) const;
  Tensor exp(ExecContext& ctx) const;
  Tensor log(ExecContext& ctx) const;
  Tensor sqrt(ExecContext& ctx) const;
  Tensor tanh(ExecContext& ctx) const;
  Tensor sigmoid(ExecContext& ctx) const;
  Tensor relu(ExecContext& ctx) const;
  Tensor leakyRelu(ExecContext& ctx, double slope = 0.01) const;  ///< gradient at 0: slope
  Tensor gelu(ExecContext& ctx) const;     ///< tanh approximation (torch's approximate='tanh')
  Tensor geluErf(ExecContext& ctx) const;  ///< exact, x·Φ(x)
  Tensor quickGelu(ExecContext& ctx) const;  ///< x·sigmoid(1.702x)
  Tensor silu(ExecContext& ctx) const;
  Tensor elu(ExecContext& ctx, double alpha = 1.0) const;
  Tensor log1p(ExecContext& ctx) const;
  Tensor rsqrt(ExecContext& ctx) const;
  Tensor reciprocal(ExecContext& ctx) const;
  Tensor sin(ExecContext& ctx) const;
  Tensor cos(ExecContext& ctx) const;
  /// Gradient 1 where lo <= x <= hi (boundaries included, as torch), else 0. lo > hi: InvalidArgument.
  Tensor clamp(ExecContext& ctx, double lo, double hi) const;
  /// torch.floor/ceil/round (half to even)/sign; their gradient is zero (torch's convention).
  Tensor floor(ExecContext& ctx) const;
  Tensor ceil(ExecContext& ctx) const;
  Tensor round(ExecContext& ctx) const;
  Tensor sign(ExecContext& ctx) const;
  /// A rational tanh (a truncated Lambert continued fraction, clamped to [-1, 1]): at most 7e-6
  /// from tanh over all reals. Gradient 1 - y² of its own output.
  Tensor fastTanh(ExecContext& ctx) const;
  /// Logit soft-capping c·tanh(x/c), c = 30 or 15 (Gemma 2's attention and final logits).
  Tensor softcap30(ExecContext& ctx) const;
  Tensor softcap15(ExecContext& ctx) const;
  /// The unary op of that name ("relu", "gelu", "silu", ..., see unaryNames()), for configs that
  /// pick an activation by name; leakyRelu and elu take their default parameter. An unknown name
  /// is InvalidArgument listing the names.
  Tensor unary(ExecContext& ctx, std::string_view name) const;
  static std::span<const std::string_view> unaryNames();
  /// Adds a plain float slice along `axis` (its extent long, else ShapeMismatch); the slice is a
  /// constant, so only this tensor gets a gradient.
  Tensor biasAdd(ExecContext& ctx, Tag axis, std::span<const float> bias) const;
  /// Snake (BigVGAN): x + sin²(α·x)/α, α's axes among this tensor's (per channel, typically);
  /// gradients to x and α.
  Tensor snake(ExecContext& ctx, const Tensor& alpha) const;
  /// torch.nn.functional.prelu: max(0, x) + w·min(0, x), w's axes among this tensor's; the
  /// gradient at x = 0 is w's side (torch's). Gradients to x and w.
  Tensor prelu(ExecContext& ctx, const Tensor& weight) const;
  // --- gated units (ops/gated.cpp): `axis` splits into halves [gate | up], the result has it
  // halved (an odd extent is InvalidArgument). Forward and VJP are one fused pass each.
  Tensor swiglu(ExecContext& ctx, Tag axis) const;  ///< silu(gate)·up
  Tensor geglu(ExecContext& ctx, Tag axis) const;   ///< geluErf(gate)·up
  /// The activations gated and splitGated take by name: silu, gelu (tanh), geluErf, sigmoid,
  /// relu, quickGelu; another name is InvalidArgument listing them.
  /// act(gate)·up with this tensor as up; gate has the same axes (any order, else ShapeMismatch).
  Tensor gated(ExecContext& ctx, const Tensor& gate, std::string_view act) const;
  /// torch.nn.functional.glu: halves [a | b] along `axis`, a·sigmoid(b).
  Tensor glu(ExecContext& ctx, Tag axis) const;
  /// Halves [gate | up] along `axis`, act(gate)·up: swiglu and geglu for any act.
  Tensor splitGated(ExecContext& ctx, Tag axis, std::string_view act) const;
  /// With this tensor as up: (c·tanh(up/c))·(c·tanh(silu(gate)/c)), the soft-clamped up times
  /// the soft-bounded SiLU gate; gate as in gated. c > 0, else InvalidArgument.
  Tensor situ(ExecContext& ctx, const Tensor& gate, double c = 30) const;
  // --- seeded randomness (ops/dropout.cpp) ---
  /// Zeroes each element with probability p and scales the rest by 1/(1-p). The mask is a pure
  /// function of (seed, element index in row-major order of this tensor's axes), so forward,
  /// backward and a checkpoint recompute agree, on any thread count and in every build.
  Tensor dropout(ExecContext& ctx, double p, uint64_t seed) const;
  // --- reductions (ops/reduce.cpp); f64 computes in double, 16-bit constants in f32 ---
  Tensor sumAll(ExecContext& ctx) const;
  Tensor meanAll(ExecContext& ctx) const;
  Tensor sum(ExecContext& ctx, Tag axis) const;
  Tensor mean(ExecContext& ctx, Tag axis) const;
  // The following drop the reduced axis (cumsum keeps it). An empty axis is InvalidArgument
  // where the result is undefined (max, min; variance needs more elements than `correction`).
  Tensor variance(ExecContext& ctx, Tag axis, int64_t correction = 1) const;  ///< torch.var
  Tensor max(ExecContext& ctx, Tag axis) const;  ///< gradient to the first maximum only
  Tensor min(ExecContext& ctx, Tag axis) const;  ///< gradient to the first minimum only
  Tensor logsumexp(ExecContext& ctx, Tag axis) const;  ///< stable; -inf over an empty axis
  Tensor cumsum(ExecContext& ctx, Tag axis) const;     ///< inclusive, keeps the axis
  Tensor prod(ExecContext& ctx, Tag axis) const;       ///< gradient exact with zeros (no division)
  Tensor norm(ExecContext& ctx, Tag axis) const;       ///< 2-norm; gradient 0 where the norm is 0
  /// Sums over several axes at once (each once, else InvalidArgument); {} is a copy.
  Tensor sumMany(ExecContext& ctx, const Tags& axes) const;
  /// torch.cumprod, keeps the axis; the gradient is exact with zeros (no division by x).
  Tensor cumprod(ExecContext& ctx, Tag axis) const;
  /// (x - mean) / sqrt(var + eps) along axis, biased variance: layerNorm without the affine part.
  Tensor standardizeAxis(ExecContext& ctx, Tag axis, double eps = 1e-5) const;
  /// The p-norm of all elements (torch.linalg.vector_norm), p > 0 or +infinity (max |x|). The
  /// gradient is 0 where the norm is 0; for infinity it splits evenly among the elements at the max.
  Tensor normAll(ExecContext& ctx, double p = 2) const;
  /// h_t = decay_t·h_{t-1} + x_t along time_axis with h_{-1} = h0 (zeros without it), every h_t
  /// returned with this tensor's axes. decay has this tensor's axes (any order); h0 has them
  /// without time_axis. Gradients to x, decay and h0 through one reverse scan.
  Tensor linearRecurrence(ExecContext& ctx, const Tensor& decay, Tag time_axis) const;
  Tensor linearRecurrence(ExecContext& ctx, const Tensor& decay, const Tensor& h0, Tag time_axis) const;
  /// torch.topk along `axis` (0 <= k <= extent): values (differentiable: the gradient scatters
  /// back through the indices) and i64 indices (constants), `axis` with extent k. Ties keep the
  /// lower index first; NaN counts as larger than any number, as in torch.
  SortResult topK(ExecContext& ctx, Tag axis, int64_t k, bool largest = true) const;
  /// torch.sort along `axis`, always stable (equal values keep their order); as topK.
  SortResult sort(ExecContext& ctx, Tag axis, bool descending = false) const;
  // --- intentionally no-grad: constant results, even from variables ---
  /// The first index of the largest (smallest) value along axis, which is dropped: i64. NaN counts
  /// as the extreme, as in torch; an empty axis is InvalidArgument. Any element type but q8_0.
  Tensor argmax(ExecContext& ctx, Tag axis) const;
  Tensor argmin(ExecContext& ctx, Tag axis) const;
  /// sort(axis, descending).indices: i64, stable.
  Tensor argsort(ExecContext& ctx, Tag axis, bool descending = false) const;
  /// `samples` i64 indices along axis drawn from this tensor's weights (finite, >= 0, not all 0;
  /// they need not sum to 1), as torch.multinomial: axis gets extent samples. Without replacement
  /// each row needs that many positive weights. Seeded: draw j of row r is a pure function of
  /// (seed, r·samples + j), the same in every build.
  Tensor multinomial(ExecContext& ctx, Tag axis, int64_t samples, uint64_t seed, bool replacement = false) const;
  /// u8 masks (1 true, 0 false). Operands of any element type but q8_0; nonzero (NaN too) is
  /// true for the logical ops, which align and broadcast by tag as add does.
  Tensor isnan(ExecContext& ctx) const;
  Tensor isinf(ExecContext& ctx) const;
  Tensor isfinite(ExecContext& ctx) const;
  Tensor logicalNot(ExecContext& ctx) const;
  Tensor logicalAnd(ExecContext& ctx, const Tensor& y) const;
  Tensor logicalOr(ExecContext& ctx, const Tensor& y) const;
  Tensor logicalXor(ExecContext& ctx, const Tensor& y) const;
  /// Whether any (all) value along axis is nonzero, the axis dropped; anyAll/allAll over every
  /// element, a scalar. The empty any is 0 and the empty all is 1.
  Tensor any(ExecContext& ctx, Tag axis) const;
  Tensor all(ExecContext& ctx, Tag axis) const;
  Tensor anyAll(ExecContext& ctx) const;
  Tensor allAll(ExecContext& ctx) const;
  /// A u8 {row: rows, col: cols} mask, 1 where row - col <= lower and col - row <= upper (-1
  /// leaves that side unbounded): bandPart's band, for masking scores.
  static Tensor bandMask(ExecContext& ctx, Tag row, Tag col, int64_t rows, int64_t cols, int64_t lower, int64_t upper);
  // --- in-place and storage-consuming helpers (ops/inplace.cpp, Note [In-place helpers]): for
  // inference loops; an operand that requires grad is UnsupportedGradient ---
  /// this[..., i, ...] += v[i] along axis, written into this tensor's storage, which must be f32
  /// and its own (no view or saved value shares it: else InvalidArgument). v has the one axis
  /// `axis` with this tensor's extent (else ShapeMismatch). Returns this tensor.
  Tensor addAxisVectorInPlace(ExecContext& ctx, Tag axis, const Tensor& v) const;
  /// As addAxisVectorInPlace, then the unary op `act` (a name of unaryNames()) in place: the
  /// values of add(v).unary(act), through two temporaries of this tensor's size.
  Tensor addAxisVectorUnaryInPlace(ExecContext& ctx, Tag axis, const Tensor& v, std::string_view act) const;
  /// this += alpha·y in place (torch's add_(y, alpha=)): y's axes a subset of this tensor's, same
  /// extents (it broadcasts over the rest); storage rules as addAxisVectorInPlace. Returns this.
  Tensor addScaledInPlace(ExecContext& ctx, const Tensor& y, double alpha) const;
  /// add(y) and scale(factor) that consume this tensor: the result reuses its buffer when it is
  /// f32, its own and already the result's shape, and this handle (every copy of it) is disposed
  /// afterwards either way. Same values as add and scale; constants.
  Tensor takeAddNoGrad(ExecContext& ctx, const Tensor& y) const;
  Tensor takeScaleNoGrad(ExecContext& ctx, double factor) const;
  /// A mixture-of-experts router over `axis` (the experts) of these logits: the k most probable
  /// experts of softmax(axis) (indices i64, as topK: ties to the lower index) and their weights
  /// renormalized to sum to 1 over the k (Mixtral's router). Constants; 1 <= k <= extent.
  SortResult routerTopK(ExecContext& ctx, Tag axis, int64_t k) const;
  // --- contraction (ops/contract.cpp) ---
  /// Contracts the axis both operands share; other shared axes are batch axes. Result axes: this
  /// tensor's remaining axes, then y's remaining axes that this tensor lacks.
  Tensor dot(ExecContext& ctx, const Tensor& y, Tag axis) const;
  /// dot(y, axis) + bias in one GEMM (torch's addmm / Linear): bias's axes are a subset of the
  /// result's (same extents), broadcast over the rest by tag; its gradient is gy summed to them.
  Tensor addDot(ExecContext& ctx, const Tensor& y, Tag axis, const Tensor& bias) const;
  /// Positional matrix product (torch.matmul for rank >= 2): this {batch..., m, k} times
  /// y {batch..., k', n} ({batch..., n, k'} when transpose_y) contracts this's LAST axis with y's
  /// second-to-last (last) whatever their names. The leading axes of both are batch axes, matched
  /// by tag. Result: {batch... (this's order), m, n}, n keeping y's tag (which must differ from m).
  Tensor matmul(ExecContext& ctx, const Tensor& y, bool transpose_y = false) const;
  // --- inference-only packed products (ops/packed.cpp, ag/packed.h): constants; an operand that
  // requires grad while gradients are on is GradientPackedMatmulUnsupported (dense) or
  // GradientQuantizedMatmulUnsupported (quantized, and the fused forms) ---
  /// dot(w, packed.axis()) of the w packed (+ bias, whose axes are exactly packed.tags()). Result
  /// axes: this tensor's other axes, then packed.tags(); it must have none of packed.tags().
  Tensor dotPacked(ExecContext& ctx, const PackedRhs& packed) const;
  Tensor dotPacked(ExecContext& ctx, const PackedRhs& packed, const Tensor& bias) const;
  /// rmsNormMul(packed.axis(), weight, eps) then dotPacked(packed), in one call.
  Tensor rmsNormMulDotPacked(ExecContext& ctx, const Tensor& weight, const PackedRhs& packed, double eps = 1e-6) const;
  /// swiglu(packed.axis()) then dotPacked(packed): this tensor's packed.axis() is [gate | up], twice
  /// the packed depth.
  Tensor splitSwiGluDotPacked(ExecContext& ctx, const PackedRhs& packed) const;
  /// geglu(packed.axis()) then dotPacked(packed) with a quantized (q8_0) packed weight.
  Tensor gegluQuantDotPacked(ExecContext& ctx, const PackedRhs& packed) const;
  /// Named-axis einsum: axes both operands have are batch axes if `out` keeps them, else
  /// contracted; axes one operand alone has are kept if in `out`, else summed away. The result's
  /// axes are exactly `out`, in its order; every tag of `out` must be in a or b, once.
  static Tensor einsum(ExecContext& ctx, const Tensor& a, const Tensor& b, const Tags& out);
  /// N-ary named einsum: a chain of binary einsums, the pair to join picked greedily (as
  /// opt_einsum's greedy path) by the smallest intermediate, ties to the earliest pair. Each join
  /// keeps the axes that `out` or a remaining operand has; an axis several operands share and
  /// `out` lacks is contracted once every operand holding it has been joined. Values and gradients
  /// are those of that nested binary form. One operand: summed to `out` and permuted. No operands:
  /// InvalidArgument; an axis of `out` in no operand or twice in it: ShapeMismatch.
  static Tensor einsumMany(ExecContext& ctx, std::span<const Tensor> operands, const Tags& out);
  /// BitNet b1.58: contracts `axis` as dot does, with w quantized per tensor to q·s, s = mean|w|,
  /// q = round(clamp(w/s, -1, 1)) in {-1, 0, +1} (s = 0: a zero weight). Straight-through
  /// estimator: this tensor's gradient goes through the quantized weight, w's is dot's
  /// gradient as if w were not quantized.
  Tensor dotTernarySte(ExecContext& ctx, const Tensor& w, Tag axis) const;
  /// Swaps the names of axes a and b (result[a=i, b=j] = this[a=j, b=i]; extents travel with
  /// the data): a view.
  Tensor transpose(ExecContext& ctx, Tag a, Tag b) const;
  // --- convolution (ops/conv.cpp) and pooling (ops/pool.cpp) ---
  /// 2-D cross-correlation (torch.nn.functional.conv2d), lowered to GEMM through im2col. The
  /// result has the input's axes in the input's order with `channels` replaced by `out_channels`;
  /// height and width become floor((H + 2·pad - dilation·(K-1) - 1) / stride) + 1. The bias form
  /// adds a tensor with axes {out_channels} (composed with add, so its gradient is the sum).
  Tensor conv2d(ExecContext& ctx, const Tensor& weight, const Conv2dOptions& options = {}) const;
  Tensor conv2d(ExecContext& ctx, const Tensor& weight, const Tensor& bias,
                const Conv2dOptions& options = {}) const;
  /// relu(conv2d(...)) as one op: the bias and relu in the convolution's output loop, one VJP
  /// whose gradients are conv2d's, add's and relu's composed (Note [conv2dRelu's VJP]).
  Tensor conv2dRelu(ExecContext& ctx, const Tensor& weight, const Conv2dOptions& options = {}) const;
  Tensor conv2dRelu(ExecContext& ctx, const Tensor& weight, const Tensor& bias,
                    const Conv2dOptions& options = {}) const;
  /// conv2d / conv2dRelu with the weight (and bias) prepared once by prepareConv2dWeights
  /// (ops/conv_prepared.cpp): the same values within f32 tolerance, the same result axes.
  /// Inference only: an input that requires grad (gradients enabled) is
  /// GradientPreparedConv2dUnsupported; use conv2d / conv2dRelu to train.
  Tensor conv2dPrepared(ExecContext& ctx, const PreparedConv2d& prepared) const;
  Tensor conv2dPreparedRelu(ExecContext& ctx, const PreparedConv2d& prepared) const;
  /// 1-D cross-correlation (torch.nn.functional.conv1d) on the GEMM path of conv2d, an image of
  /// height 1. The result has the input's axes in the input's order with `channels` replaced by
  /// `out_channels`; the length becomes floor((L + 2·padding - dilation·(K-1) - 1) / stride) + 1.
  /// The bias form adds a tensor with axes {out_channels} (composed with add).
  Tensor conv1d(ExecContext& ctx, const Tensor& weight, const Conv1dOptions& options = {}) const;
  Tensor conv1d(ExecContext& ctx, const Tensor& weight, const Tensor& bias, const Conv1dOptions& options = {}) const;
  /// torch.nn.functional.conv_transpose1d, the adjoint of conv1d in its input: the result has the
  /// input's axes with `channels` replaced by `out_channels` (extent groups times the weight's), and
  /// length (L - 1)·stride - 2·padding + dilation·(K-1) + output_padding + 1 (at least 1, else
  /// ShapeMismatch). The bias has axes {out_channels}.
  Tensor convTranspose1d(ExecContext& ctx, const Tensor& weight, const ConvTranspose1dOptions& options = {}) const;
  Tensor convTranspose1d(ExecContext& ctx, const Tensor& weight, const Tensor& bias,
                         const ConvTranspose1dOptions& options = {}) const;
  /// conv1d (stride 1) left-padded by (K-1)·dilation, so output t sees inputs at or before t: the
  /// output is as long as the input (an empty length gives an empty result). Weight {out_channels,
  /// channels, kernel} as conv1d's; groupedCausalConv1d splits the channels into `groups`.
  Tensor causalConv1d(ExecContext& ctx, const Tensor& weight, int64_t dilation = 1, const Conv1dAxes& axes = {}) const;
  Tensor causalConv1d(ExecContext& ctx, const Tensor& weight, const Tensor& bias, int64_t dilation = 1,
                      const Conv1dAxes& axes = {}) const;
  Tensor groupedCausalConv1d(ExecContext& ctx, const Tensor& weight, int64_t groups, int64_t dilation = 1,
                             const Conv1dAxes& axes = {}) const;
  Tensor groupedCausalConv1d(ExecContext& ctx, const Tensor& weight, const Tensor& bias, int64_t groups,
                             int64_t dilation = 1, const Conv1dAxes& axes = {}) const;
  /// The causal convolution with groups = the input's channels (the short convolution of
  /// Mamba-style blocks): weight {out_channels, channels (extent 1), kernel}.
  Tensor causalDepthwiseConv1d(ExecContext& ctx, const Tensor& weight, const Conv1dAxes& axes = {}) const;
  Tensor causalDepthwiseConv1d(ExecContext& ctx, const Tensor& weight, const Tensor& bias,
                               const Conv1dAxes& axes = {}) const;
  /// torch.nn.functional.unfold (im2col): every kernel_h x kernel_w window of the images, the
  /// axes channels, height and width replaced by patch and positions, placed last after the other
  /// axes in the input's order. fold (col2im, torch.nn.functional.fold) sums such columns back into
  /// out_h x out_w images, channels = patch / (kernel_h·kernel_w). Each is the other's adjoint,
  /// and its VJP.
  Tensor unfold(ExecContext& ctx, int64_t kernel_h, int64_t kernel_w, const UnfoldOptions& options = {}) const;
  Tensor fold(ExecContext& ctx, int64_t out_h, int64_t out_w, int64_t kernel_h, int64_t kernel_w,
              const UnfoldOptions& options = {}) const;
  /// x·scale + shift per channel (a frozen batch norm): scale and shift have the single axis
  /// channel_axis; the result has this tensor's axes. Gradients to all three.
  Tensor channelAffine(ExecContext& ctx, const Tensor& scale, const Tensor& shift, Tag channel_axis) const;
  /// Pooling over the axes h and w of every other axis's planes; axes keep their names and order.
  /// maxPool2d pads with -inf and sends each window's gradient to its first maximum; avgPool2d
  /// pads with zeros and always divides by kernel_h·kernel_w (torch's count_include_pad=True).
  /// pad <= kernel / 2 on each axis, as torch requires, and at most the input's h and w.
  Tensor maxPool2d(ExecContext& ctx, int64_t kernel_h, int64_t kernel_w, int64_t stride_h,
                   int64_t stride_w, int64_t pad = 0, Tag h = "h", Tag w = "w") const;
  Tensor avgPool2d(ExecContext& ctx, int64_t kernel_h, int64_t kernel_w, int64_t stride_h,
                   int64_t stride_w, int64_t pad = 0, Tag h = "h", Tag w = "w") const;
  /// Doubles h and w by repeating each element in a 2x2 block; the VJP sums each block.
  Tensor upsample2xNearest(ExecContext& ctx, Tag h = "h", Tag w = "w") const;
  // --- softmax family (ops/softmax.cpp): along a named axis ---
  Tensor softmax(ExecContext& ctx, Tag axis) const;
  Tensor logSoftmax(ExecContext& ctx, Tag axis) const;
  // --- norms (ops/norm.cpp): statistics over a named axis ---
  /// (x - mean) / sqrt(var + eps), biased variance (as torch); the affine form multiplies by
  /// weight and adds bias, both indexed by `axis` alone.
  Tensor layerNorm(ExecContext& ctx, Tag axis, double eps = 1e-5) const;
  Tensor layerNorm(ExecContext& ctx, Tag axis, const Tensor& weight, const Tensor& bias, double eps = 1e-5) const;
  /// x / sqrt(mean(x^2) + eps); rmsNormMul also multiplies by weight (indexed by `axis`).
  Tensor rmsNorm(ExecContext& ctx, Tag axis, double eps = 1e-6) const;
  Tensor rmsNormMul(ExecContext& ctx, Tag axis, const Tensor& weight, double eps = 1e-6) const;
  /// x / max(||x||_2, eps) along axis (torch.nn.functional.normalize).
  Tensor l2Normalize(ExecContext& ctx, Tag axis, double eps = 1e-12) const;
  /// rmsNormMul(axis, weight, eps) + bias, bias indexed by `axis` alone.
  Tensor rmsNormMulAdd(ExecContext& ctx, Tag axis, const Tensor& weight, const Tensor& bias, double eps = 1e-6) const;
  /// Fused per-head QK-norm (Qwen3, Gemma 3): rope in half mode with prepared tables of
  /// rmsNorm(x, axis)·weight, axis being rope's dim; equal to rmsNormMul(axis, weight, eps)
  /// .rope(cos, sin, {position, axis, offset, half}). weight is indexed by `axis` alone; cos and
  /// sin are constant tables as rope's table form takes. Gradients to x and weight in one pass.
  Tensor rmsNormMulRopeHalfPrepared(ExecContext& ctx, const Tensor& weight, const Tensor& cos, const Tensor& sin,
                                    Tag axis, const RmsNormRopeOptions& options = {}) const;
  /// torch.nn.functional.group_norm: `channel_axis` splits into `groups` groups (its extent a
  /// multiple of groups, else InvalidArgument); each group is normalized over its channels and
  /// every axis not in options.batch. The affine form's weight and bias are indexed by channel_axis.
  Tensor groupNorm(ExecContext& ctx, int64_t groups, Tag channel_axis, const GroupNormOptions& options = {}) const;
  Tensor groupNorm(ExecContext& ctx, int64_t groups, Tag channel_axis, const Tensor& weight, const Tensor& bias,
                   const GroupNormOptions& options = {}) const;
  /// torch.nn.functional.cosine_similarity along axis: (x/max(|x|, eps))·(y/max(|y|, eps)) summed
  /// over axis; operands align and broadcast by tag.
  Tensor cosineSimilarity(ExecContext& ctx, const Tensor& y, Tag axis, double eps = 1e-8) const;
  // --- losses (ops/loss.cpp) ---
  /// Softmax cross-entropy of these logits against integer labels (i32 or i64) whose axes are the
  /// logits' axes without class_axis. The gradient of the logits is fused: softmax - target. With
  /// Reduction::none the result has those axes in the logits' order (not the labels').
  Tensor crossEntropy(ExecContext& ctx, const Tensor& labels, Tag class_axis,
                      CrossEntropyOptions options = {}) const;
  /// crossEntropy with torch's full options (CrossEntropyExtOptions), these being the logits.
  /// labels_or_probs: integer labels (i32/i64; the logits' axes without class_axis, each in
  /// [0, C) or ignore_index, else IndexOutOfRange), or soft targets (floating, the logits' axes).
  /// The result is a scalar, or per row for Reduction::none. Fused gradient (softmax - target
  /// form); soft targets get a gradient too.
  Tensor crossEntropyExt(ExecContext& ctx, const Tensor& labels_or_probs, Tag class_axis,
                         const CrossEntropyExtOptions& options = {}) const;
  /// crossEntropyExt(labels, class_axis) of the logits this.dot(weight, axis), computed
  /// options.chunk_rows rows at a time so that neither the logits nor their gradient exist
  /// whole (a language model's head): the backward recomputes each chunk. This tensor holds
  /// `axis` plus the row axes; weight is exactly {class_axis, axis}; labels are integers with the
  /// row axes (soft targets are not taken). Gradients to this tensor and weight.
  Tensor linearCrossEntropyExt(ExecContext& ctx, const Tensor& weight, const Tensor& labels, Tag axis, Tag class_axis,
                               const CrossEntropyExtOptions& options = {}) const;
  /// Distillation (DistillOptions) of the student logits this.dot(weight, axis) against teacher
  /// logits or probabilities with the student logits' axes, chunked as linearCrossEntropyExt.
  /// The teacher takes no gradient (one that requires it is UnsupportedGradient: detach it).
  /// Gradients to this tensor and weight.
  Tensor linearDistillExt(ExecContext& ctx, const Tensor& weight, const Tensor& teacher, Tag axis, Tag class_axis,
                          const DistillOptions& options = {}) const;
  /// Negative log-likelihood of log-probabilities (this tensor) at integer labels.
  Tensor nllLoss(ExecContext& ctx, const Tensor& labels, Tag class_axis,
                 Reduction reduction = Reduction::mean) const;
  /// (this - target)^2, reduced; both operands differentiable; axes aligned by tag.
  Tensor mseLoss(ExecContext& ctx, const Tensor& target, Reduction reduction = Reduction::mean) const;
  /// Pointwise losses as torch.nn's, this tensor the input: both operands have the same axes (any
  /// order; else ShapeMismatch), both are differentiable; mean is over every element.
  /// HuberLoss: 0.5·d² where |d| <= delta, else delta·(|d| - 0.5·delta), d = this - target.
  Tensor huberLoss(ExecContext& ctx, const Tensor& target, double delta = 1.0,
                   Reduction reduction = Reduction::mean) const;
  /// BCELoss of probabilities in [0, 1] (else InvalidArgument): -(t·log x + (1-t)·log(1-x)), each
  /// log clamped at >= -100 as torch; a clamped term has gradient 0 (torch's input gradient is
  /// (x-t)/max(x(1-x), 1e-12) instead, which differs only where a log is clamped).
  Tensor bceLoss(ExecContext& ctx, const Tensor& target, Reduction reduction = Reduction::mean) const;
  /// BCEWithLogitsLoss of logits, stable: max(x,0) - x·t + log1p(exp(-|x|)).
  Tensor bceWithLogitsLoss(ExecContext& ctx, const Tensor& target, Reduction reduction = Reduction::mean) const;
  /// torch.nn.functional.kl_div of log-probabilities (this) against target probabilities:
  /// t·(log t - x), 0 where t == 0 (there the target's gradient is -x); log_target: exp(t)·(t - x).
  /// mean is torch's elementwise 'mean'; 'batchmean' is sum / batch size, left to the caller.
  Tensor klDivLoss(ExecContext& ctx, const Tensor& target, Reduction reduction = Reduction::mean,
                   bool log_target = false) const;
  // --- views (ops/view.cpp); share storage ---
  /// Exactly these axes and extents: this tensor's axes must be among them with the same extents
  /// (an extent-1 axis does not stretch, unlike torch's expand); the others repeat the values.
  Tensor broadcastTo(ExecContext& ctx, Tags tags, Extents shape) const;
  Tensor permuteTo(ExecContext& ctx, const Tags& order) const;
  Tensor withTags(ExecContext& ctx, Tags tags) const;
  Tensor narrow(ExecContext& ctx, Tag axis, int64_t start, int64_t length) const;
  Tensor contiguous(ExecContext& ctx) const;
  // --- structure (ops/view.cpp): views where the strides allow, else one contiguous copy ---
  /// A new axis of extent 1 at `position` in [0, rank]; squeeze removes an extent-1 axis.
  Tensor insertAxis(ExecContext& ctx, Tag name, size_t position) const;
  Tensor squeeze(ExecContext& ctx, Tag axis) const;
  /// Fuses `axes` into one axis `into`, row-major over the listed order, placed where the first
  /// of them (in this tensor's axis order) was. split is its inverse: `axis` becomes `into`
  /// (row-major, extents multiplying to its extent) in place.
  Tensor merge(ExecContext& ctx, const Tags& axes, Tag into) const;
  Tensor split(ExecContext& ctx, Tag axis, Tags into, Extents extents) const;
  Tensor flatten(ExecContext& ctx, Tag into) const;  ///< every axis, in this tensor's order
  /// Row-major over this tensor's axis order; the element count must not change.
  Tensor reshape(ExecContext& ctx, Tags tags, Extents shape) const;
  /// The slice at `index` (negative counts from the end), dropping the axis.
  Tensor select(ExecContext& ctx, Tag axis, int64_t index) const;
  /// Elements start, start+step, ... below end, with 0 <= start <= end <= extent and step >= 1.
  Tensor slice(ExecContext& ctx, Tag axis, int64_t start, int64_t end, int64_t step = 1) const;
  // --- indexing (ops/gather.cpp) ---
  /// Rows of this tensor along `axis` at integer indices (i32/i64): the result has `axis` replaced,
  /// in place, by the indices' axes (table{vocab, d}.indexSelect("vocab", ids{batch, t}) ->
  /// {batch, t, d}). The VJP scatter-adds, so repeated indices accumulate.
  Tensor indexSelect(ExecContext& ctx, Tag axis, const Tensor& indices) const;
  /// Indices are i32/i64 in [0, extent of `axis`); an index outside is IndexOutOfRange. The VJPs
  /// scatter-add, so repeated indices accumulate.
  /// torch.gather: indices have exactly this tensor's axes (any order), extents <= this's except
  /// along `axis`; result[.., i, ..] = this[.., indices[.., i, ..], ..] with the indices' extents,
  /// in this tensor's axis order.
  Tensor gather(ExecContext& ctx, Tag axis, const Tensor& indices) const;
  /// numpy.take_along_axis by name: indices have `axis`; their other axes are axes of this tensor
  /// with equal extent or extent 1, and missing axes broadcast. The result has this tensor's axes
  /// and order, `axis` with the indices' extent.
  Tensor takeAlongAxis(ExecContext& ctx, Tag axis, const Tensor& indices) const;
  /// torch.scatter_add, out of place: this plus each src element added at its index along `axis`.
  /// indices and src have the same axes and extents, as gather's indices. Gradients: this gets
  /// gy, src gets gy gathered at the indices.
  Tensor scatterAdd(ExecContext& ctx, Tag axis, const Tensor& indices, const Tensor& src) const;
  // --- structure (ops/structure.cpp): new values ---
  /// Joins tensors with the same axes (any order; extents equal except along `axis`) along
  /// `axis`, in the first tensor's axis order. stack adds `new_axis` (first) to each, then joins.
  static Tensor concat(ExecContext& ctx, std::span<const Tensor> tensors, Tag axis);
  static Tensor stack(ExecContext& ctx, std::span<const Tensor> tensors, Tag new_axis);
  /// `before` and `after` elements of `value` on each side of axis.
  Tensor pad(ExecContext& ctx, Tag axis, int64_t before, int64_t after, double value = 0) const;
  /// a where cond (u8, or f32 nonzero) else b, axes aligned by tag; gradients to a and b only.
  static Tensor where(ExecContext& ctx, const Tensor& cond, const Tensor& a, const Tensor& b);
  /// value where mask (u8 or f32, axes a subset of this tensor's) is nonzero; gradient 0 there.
  Tensor maskedFill(ExecContext& ctx, const Tensor& mask, double value) const;
  /// Keeps elements with col - row <= diagonal (tril) or >= diagonal (triu), zeroes the rest.
  Tensor tril(ExecContext& ctx, Tag row, Tag col, int64_t diagonal = 0) const;
  Tensor triu(ExecContext& ctx, Tag row, Tag col, int64_t diagonal = 0) const;
  /// Keeps row - col <= lower and col - row <= upper; -1 leaves that side unbounded (as TF).
  Tensor bandPart(ExecContext& ctx, Tag row, Tag col, int64_t lower, int64_t upper) const;
  // --- views, flips and shifts (ops/strided_views.cpp, ops/shift.cpp, ops/pad2d.cpp).
  // Dtype-agnostic like the views (any dtype but q8_0, whose blocks these would split: those ops
  // are DTypeMismatch on q8_0 except alignTo, materialize, unbindInto and a positive-step
  // sliceStep, which are views or block copies). An unknown axis is ShapeMismatch. ---
  /// torch's align_to: exactly `tags`, in that order. This tensor's axes keep their extents; the
  /// other tags become new axes of extent 1. A view. An axis of this tensor missing from `tags`
  /// is ShapeMismatch naming it; a tag listed twice is InvalidArgument.
  Tensor alignTo(ExecContext& ctx, const Tags& tags) const;
  /// torch.as_strided: element (i0, i1, ...) of the result is element offset + Σ i_k·strides[k]
  /// of this tensor's elements in row-major order of its axes (its storage when contiguous, else
  /// a contiguous copy, which the result then views). Strides and offset count elements and must
  /// be >= 0; every element the result reaches must exist (else InvalidArgument, also when the
  /// arithmetic would overflow). Elements may be read more than once (sliding windows): the VJP
  /// scatter-adds, so their gradients accumulate.
  Tensor viewWithStrides(ExecContext& ctx, Tags tags, Extents shape, std::vector<int64_t> strides,
                         int64_t offset = 0) const;
  /// Always a fresh contiguous copy that shares nothing (contiguous() returns this tensor when it
  /// is already contiguous).
  Tensor materialize(ExecContext& ctx) const;
  /// Python's x[start:end:step] along axis: negative start/end count from the end, both are
  /// clamped as Python clamps them, and step may be negative (step 0 is InvalidArgument). A
  /// negative step walks down from start (so end <= -extent-1 reaches index 0). A positive step
  /// is a view; a negative one is a copy (views never have negative strides).
  Tensor sliceStep(ExecContext& ctx, Tag axis, int64_t start, int64_t end, int64_t step) const;
  /// torch.nn.functional.pad of two named axes with pads (left, right, top, bottom): left and
  /// right on w_axis, top and bottom on h_axis. A negative pad crops (as torch's): result
  /// element i along an axis is element i - before, or `value` outside the input; an extent
  /// would become negative: InvalidArgument. h_axis == w_axis is InvalidArgument.
  Tensor zeroPad2d(ExecContext& ctx, Tag h_axis, Tag w_axis, std::array<int64_t, 4> pads) const;
  Tensor constantPad2d(ExecContext& ctx, Tag h_axis, Tag w_axis, std::array<int64_t, 4> pads,
                       double value) const;
  /// torch.unbind: one select view per index along axis, in order (none for an empty axis). An
  /// axis longer than 2^24 is InvalidArgument (one handle each would exhaust memory).
  std::vector<Tensor> unbindInto(ExecContext& ctx, Tag axis) const;
  /// times copies along axis: tiled [x, x, ...] (torch's repeat on one dim), or with interleave
  /// each element repeated in place [x0, x0, x1, x1, ...] (torch.repeat_interleave; grouped-query
  /// attention's KV heads). times >= 0 (0 empties the axis; negative is InvalidArgument). The
  /// gradient sums the copies.
  Tensor repeatAxis(ExecContext& ctx, Tag axis, int64_t times, bool interleave = false) const;
  /// torch.flip along one axis (a copy).
  Tensor flip(ExecContext& ctx, Tag axis) const;
  /// torch.roll along one axis: element i moves to (i + shift) mod extent; any shift wraps.
  Tensor roll(ExecContext& ctx, Tag axis, int64_t shift) const;
  /// Per-slice roll: shifts is an i32/i64 tensor with exactly the axis by_axis (this tensor's
  /// extent; else ShapeMismatch; another dtype DTypeMismatch), and the slice at index b of
  /// by_axis is rolled along axis by shifts[b]. by_axis == axis is InvalidArgument.
  Tensor rollBy(ExecContext& ctx, Tag axis, Tag by_axis, const Tensor& shifts) const;
  /// As rollBy, but shifting with zero fill: element i moves to i + shifts[b] when that is inside
  /// the axis, and vacated places are 0.
  Tensor shiftBy(ExecContext& ctx, Tag axis, Tag by_axis, const Tensor& shifts) const;
  /// Transformer-XL's relative-position shift (_rel_shift) of scores x[.., q, k] (Q queries, K
  /// keys): pad one zero column before k, read the (Q, K+1) rows as (K+1, Q), drop the first
  /// row, read back as (Q, K). Closed form: with f = Q + i·K + j, result[i, j] is 0 when
  /// f mod (K+1) == 0, else x[f div (K+1), f mod (K+1) - 1]. Other axes are batch axes; the
  /// result has them in this tensor's order, then query_axis, key_axis. The VJP is the adjoint.
  Tensor relposShift(ExecContext& ctx, Tag query_axis, Tag key_axis) const;

  // --- diagonals, masked selection and indexed updates (ops/diagonal.cpp,
  // ops/masked.cpp, ops/slice_update.cpp, ops/gather.cpp) ---
  /// torch.diagonal(x, offset, a, b): a zero-copy strided view that drops axes a and b (distinct)
  /// and appends axis `into` (which may reuse a's or b's name). offset > 0 is above the main
  /// diagonal; an offset past the matrix gives an empty axis. Any dtype but q8_0.
  Tensor diagonal(ExecContext& ctx, Tag a, Tag b, int64_t offset, Tag into) const;
  /// The sum of the main diagonal of axes a and b (torch.trace); other axes are kept as a batch.
  Tensor trace(ExecContext& ctx, Tag a, Tag b) const;
  /// torch.diag, vector to matrix: as diagEmbed (other axes are kept as a batch).
  Tensor diag(ExecContext& ctx, Tag axis, Tag into_a, Tag into_b, int64_t offset = 0) const;
  /// torch.diag, matrix to vector: diagonal() of a tensor with exactly two axes (else InvalidArgument).
  Tensor diag(ExecContext& ctx, Tag a, Tag b, int64_t offset, Tag into) const;
  /// torch.diag_embed: `axis` (extent n) is replaced, in place, by two new axes into_a and into_b of
  /// extent n + |offset|, zero except for the offset diagonal, which holds the values.
  Tensor diagEmbed(ExecContext& ctx, Tag axis, Tag into_a, Tag into_b, int64_t offset = 0) const;
  /// torch.index_add, out of place: source row j (along `axis`) is added to row indices[j].
  /// indices are 1-D i32/i64 in [0, extent) (else IndexOutOfRange); source has this tensor's axes
  /// and extents except the indices' extent along `axis`. Repeated indices accumulate in index
  /// order on any thread count. Gradients: this gets gy, source gy's rows at the indices.
  Tensor indexAdd(ExecContext& ctx, Tag axis, const Tensor& indices, const Tensor& source) const;
  /// torch.scatter, out of place, with indices and src as scatterAdd's: each src element
  /// overwrites its target; where several aim at one element, the one last along `axis` wins.
  /// Gradients as torch: this gets gy zeroed where written, src gy gathered at the indices (at
  /// every repeat of a target too).
  Tensor scatter(ExecContext& ctx, Tag axis, const Tensor& indices, const Tensor& src) const;
  /// torch.masked_select: the elements where the mask (u8 or f32, nonzero set; axes among this
  /// tensor's at equal extents) is set, row-major in this tensor's axis order, on one axis `into`.
  Tensor maskedSelect(ExecContext& ctx, const Tensor& mask, Tag into) const;
  /// torch.masked_scatter: the k set positions (as maskedSelect's) take the first k elements of
  /// source, row-major in its own axis order; a source with fewer is ShapeMismatch. Gradients:
  /// this gets gy zeroed there, source gy at those positions in its first k elements, else 0.
  Tensor maskedScatter(ExecContext& ctx, const Tensor& mask, const Tensor& source) const;
  /// Out-of-place torch.slice_scatter: [start, start + its extent) along `axis` replaced by source
  /// (same dtype, this tensor's axes and extents except along `axis`). Gradients: this gets gy
  /// with the slice zeroed, source the slice of gy.
  Tensor setSlice(ExecContext& ctx, Tag axis, int64_t start, const Tensor& source) const;
  /// Out-of-place torch.index_copy: rows indices[j] along `axis` replaced by source row j (indices
  /// and source as indexAdd's); of repeated indices the last wins. Gradients as torch: this gets gy
  /// with the rows zeroed, source gy's rows at the indices.
  Tensor setRows(ExecContext& ctx, Tag axis, const Tensor& indices, const Tensor& source) const;
  /// A copy with [start, end) along `axis` zeroed (0 <= start <= end <= extent); gradient zeroed there.
  Tensor zeroSlice(ExecContext& ctx, Tag axis, int64_t start, int64_t end) const;
  /// A copy with the rows at 1-D indices (as indexAdd's) zeroed (torch.index_fill with 0).
  Tensor zeroRows(ExecContext& ctx, Tag axis, const Tensor& indices) const;

  // --- position encodings and attention (ops/rope.cpp, ops/attention.cpp) ---
  /// Rotary position embedding along options.position and options.dim (D even, else
  /// InvalidArgument); every other axis is a batch axis. The result keeps this tensor's axis order;
  /// the VJP is the inverse rotation. The table form reads cos and sin from constants with axes
  /// {position, dim}: dim extent D/2 (one angle per pair, in pair order i), position extent at
  /// least offset + T (rows offset .. offset+T-1 are used). The tables take no gradient: a table
  /// that requires one is UnsupportedGradient.
  Tensor rope(ExecContext& ctx, const RopeOptions& options = {}) const;
  Tensor rope(ExecContext& ctx, const Tensor& cos, const Tensor& sin, const RopeOptions& options = {}) const;
  /// softmax(scale·q·kᵀ [+ causal mask]) · v per head. q {batch..., heads: H, time: Tq, dim: D},
  /// k {batch..., heads: Hkv, time: Tk, dim: D}, v {batch..., heads: Hkv, time: Tk, dim: Dv};
  /// batch axes are all other axes, the same tags and extents in all three, any order. H must be
  /// a multiple of Hkv: query head h reads kv head h / (H / Hkv) (grouped-query attention; H = Hkv
  /// is multi-head attention). Result: {batch... in q's order, heads, time: Tq, dim: Dv}.
  /// Causal with Tk < Tq (a query that sees no key) is InvalidArgument.
  static Tensor groupedAttention(ExecContext& ctx, const Tensor& q, const Tensor& k, const Tensor& v,
                                 const AttentionOptions& options = {});

  // --- internals ---
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}
  const internal::RawTensor& value() const;  ///< throws on an empty or disposed handle
  const std::shared_ptr<TensorImpl>& impl() const { return impl_; }
  static Tensor make(ExecContext& ctx, internal::RawTensor value, std::shared_ptr<GradState> state);
  /// A result whose value `compute` makes on first read (Note [Checkpoint tail]).
  static Tensor makePending(ExecContext& ctx, internal::RawTensor meta, std::function<internal::RawTensor()> compute,
                            std::shared_ptr<GradState> state);

 private:
  const internal::RawTensor& meta() const;  ///< tags, shape, dtype; throws as value() does
  std::shared_ptr<TensorImpl> impl_;
};

/// topK's and sort's result: the values (differentiable) and their i64 indices along the axis.
struct SortResult {
  Tensor values;
  Tensor indices;
};

struct PreparedConv2dState;  // internal (ops/conv_prepared.cpp)

/// A conv2d weight (and optional bias) transformed once for inference (Note [Prepared
/// convolution], docs/design-notes.md): for a 3x3 kernel with stride 1, dilation 1 and at least
/// 64 input channels a group the Winograd F(2x2, 3x3) planes U = G·g·Gᵀ, else the weight in the
/// layout the im2col GEMM reads in place, both f32 whatever the weight's dtype. A snapshot: later writes to the weight do not
/// reach it. Copying the handle shares it; it holds its buffers until the last copy goes.
class PreparedConv2d {
 public:
  PreparedConv2d() = default;  ///< an empty handle; conv2dPrepared with it is InvalidArgument
  explicit PreparedConv2d(std::shared_ptr<const PreparedConv2dState> state) : state_(std::move(state)) {}
  bool defined() const { return state_ != nullptr; }
  const Conv2dOptions& options() const;
  bool winograd() const;       ///< which path conv2dPrepared runs
  bool hasBias() const;
  int64_t inChannels() const;  ///< the input's channels: the weight's `channels` extent · groups
  int64_t outChannels() const;
  int64_t kernelH() const;
  int64_t kernelW() const;
  const PreparedConv2dState& state() const;  ///< InvalidArgument when empty

 private:
  std::shared_ptr<const PreparedConv2dState> state_;
};

/// Prepares `weight` (axes exactly {out_channels, channels, kernel_h, kernel_w} as conv2d's, any
/// order; f32, f16 or bf16) and `bias` ({out_channels}) for conv2dPrepared / conv2dPreparedRelu.
/// Inference only: a weight or bias that requires grad (gradients enabled) is
/// GradientPreparedConv2dUnsupported (detach it, or prepare under noGrad).
PreparedConv2d prepareConv2dWeights(ExecContext& ctx, const Tensor& weight, const Conv2dOptions& options = {});
PreparedConv2d prepareConv2dWeights(ExecContext& ctx, const Tensor& weight, const Tensor& bias,
                                    const Conv2dOptions& options = {});

namespace ops {
// DTypeMismatch unless t is f32. Superseded by Note [Dtype rules] (ops/typed.h); kept for the ops
// that do not apply the rule yet (contractions, attention, checkpoint and customVjp blocks).
void requireF32(std::string_view op, const Tensor& t);
}  // namespace ops

}  // namespace fucina
