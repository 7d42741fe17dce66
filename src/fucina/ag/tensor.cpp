#include "fucina/ag/tensor.h"

#include <cmath>

#include "fucina/ag/control.h"
#include "fucina/ag/engine.h"
#include "fucina/core/error.h"
#include "fucina/core/random.h"

namespace fucina {

using internal::RawTensor;

namespace ops {
void requireF32(std::string_view op, const Tensor& t) {
  if (t.dtype() != DType::f32)
    fail(ErrorCode::DTypeMismatch, std::string(op) + " computes in f32, got a " +
                                       std::string(name(t.dtype())) + " tensor " +
                                       t.value().describe() + "; " +
                                       (t.dtype() == DType::q8_0 ? "dequantize" : "convert") +
                                       " with to(ctx, DType::f32)");
}
}  // namespace ops

// The scope's keep for a Tensor handle (exec knows only what it releases).
Tensor ExecScope::keep(const Tensor& t) {
  if (t.defined()) keepOwned(t.impl());
  return t;
}

// ---------------------------------------------------------------- TensorImpl

TensorImpl::TensorImpl(ExecContext& ctx, RawTensor value, std::shared_ptr<GradState> state)
    : value_(std::move(value)), grad_state_(std::move(state)), account_(ctx.account()) {
  account_->tensorCreated();
}

TensorImpl::TensorImpl(ExecContext& ctx, RawTensor meta, std::function<RawTensor()> compute,
                       std::shared_ptr<GradState> state)
    : TensorImpl(ctx, std::move(meta), std::move(state)) {
  pending_ = std::make_shared<internal::PendingValue>(std::move(compute));
  has_pending_.store(true, std::memory_order_release);
}

const RawTensor& internal::PendingValue::get() {
  std::lock_guard lock(mutex_);
  if (compute_) {
    value_ = compute_();
    compute_ = nullptr;
    countPendingValueComputed();
  }
  return value_;
}

TensorImpl::~TensorImpl() { release(); }

void TensorImpl::release() {
  if (released_) return;
  released_ = true;
  value_ = RawTensor();
  pending_.reset();  // a pending value nobody read is never computed
  has_pending_.store(false, std::memory_order_release);
  f32_cache_ = RawTensor();
  grad_state_.reset();
  account_->tensorReleased();
}

const RawTensor& TensorImpl::meta() const {
  if (released_)
    fail(ErrorCode::TensorReleased,
         "this tensor was disposed (or released by the exec scope that made it); keep it with "
         "ExecScope::keep to use it after the scope closes");
  return value_;
}

const RawTensor& TensorImpl::value() const {
  meta();
  if (pending()) {
    std::lock_guard lock(cache_mutex_);
    if (pending()) {
      value_ = pending_->get();  // on a throw the value stays pending
      pending_.reset();
      has_pending_.store(false, std::memory_order_release);
    }
  }
  return value_;
}

internal::ValueSource TensorImpl::source() const {
  meta();
  std::lock_guard lock(cache_mutex_);
  return pending() ? internal::ValueSource(RawTensor(), pending_) : internal::ValueSource(value_, nullptr);
}

const RawTensor& TensorImpl::contiguousF32(ExecContext* ctx) const {
  const RawTensor& v = value();
  if (v.dtype() == DType::f32 && v.isContiguous()) return v;
  std::lock_guard lock(cache_mutex_);
  if (!f32_cache_.valid()) {
    if (ctx) {
      f32_cache_ = v.to(*ctx, DType::f32);
    } else {
      // No context at hand (dataConst): account the copy to a private ledger.
      ExecContext scratch(ExecOptions{.threads = 1});
      f32_cache_ = v.to(scratch, DType::f32);
    }
  }
  return f32_cache_;
}

void TensorImpl::dropF32Cache() {
  std::lock_guard lock(cache_mutex_);
  f32_cache_ = RawTensor();
}

// ---------------------------------------------------------------- construction

Tensor Tensor::make(ExecContext& ctx, RawTensor value, std::shared_ptr<GradState> state) {
  auto impl = std::make_shared<TensorImpl>(ctx, std::move(value), std::move(state));
  ctx.adopt(impl);
  return Tensor(std::move(impl));
}

Tensor Tensor::makePending(ExecContext& ctx, RawTensor meta, std::function<RawTensor()> compute,
                           std::shared_ptr<GradState> state) {
  auto impl = std::make_shared<TensorImpl>(ctx, std::move(meta), std::move(compute), std::move(state));
  ctx.adopt(impl);
  return Tensor(std::move(impl));
}

Tensor Tensor::fromRaw(ExecContext& ctx, RawTensor value) {
  if (!value.valid()) fail(ErrorCode::InvalidArgument, "fromRaw: empty raw tensor");
  return make(ctx, std::move(value), nullptr);
}

Tensor Tensor::fromSlice(ExecContext& ctx, Tags tags, Extents shape, std::span<const float> values) {
  return make(ctx, RawTensor::fromSlice(ctx, std::move(tags), std::move(shape), values), nullptr);
}

Tensor Tensor::fromSlice(ExecContext& ctx, Tags tags, Extents shape,
                         std::initializer_list<float> values) {
  return fromSlice(ctx, std::move(tags), std::move(shape), std::span<const float>(values.begin(), values.size()));
}

Tensor Tensor::fromInts(ExecContext& ctx, Tags tags, Extents shape, std::span<const int64_t> values,
                        DType dtype) {
  if (dtype != DType::i32 && dtype != DType::i64 && dtype != DType::u8)
    fail(ErrorCode::DTypeMismatch, "fromInts makes i32, i64 or u8 tensors, not " + std::string(name(dtype)));
  RawTensor t = RawTensor::empty(ctx, std::move(tags), std::move(shape), dtype);
  if (static_cast<int64_t>(values.size()) != t.numel())
    fail(ErrorCode::ShapeMismatch, "fromInts: shape " + t.describe() + " holds " + std::to_string(t.numel()) +
                                       " values but " + std::to_string(values.size()) + " were given");
  for (size_t i = 0; i < values.size(); ++i) {
    const int64_t v = values[i];
    switch (dtype) {
      case DType::i64: t.data<int64_t>()[i] = v; break;
      case DType::i32:
        if (v < INT32_MIN || v > INT32_MAX) fail(ErrorCode::InvalidArgument, "fromInts: " + std::to_string(v) + " does not fit i32");
        t.data<int32_t>()[i] = static_cast<int32_t>(v);
        break;
      default:
        if (v < 0 || v > 255) fail(ErrorCode::InvalidArgument, "fromInts: " + std::to_string(v) + " does not fit u8");
        t.data<uint8_t>()[i] = static_cast<uint8_t>(v);
    }
  }
  return make(ctx, std::move(t), nullptr);
}

Tensor Tensor::fromInts(ExecContext& ctx, Tags tags, Extents shape, std::initializer_list<int64_t> values,
                        DType dtype) {
  return fromInts(ctx, std::move(tags), std::move(shape), std::span<const int64_t>(values.begin(), values.size()), dtype);
}

Tensor Tensor::zeros(ExecContext& ctx, Tags tags, Extents shape, DType dtype) {
  return make(ctx, RawTensor::zeros(ctx, std::move(tags), std::move(shape), dtype), nullptr);
}

Tensor Tensor::ones(ExecContext& ctx, Tags tags, Extents shape, DType dtype) {
  return full(ctx, std::move(tags), std::move(shape), 1.0, dtype);
}

Tensor Tensor::full(ExecContext& ctx, Tags tags, Extents shape, double value, DType dtype) {
  return make(ctx, RawTensor::full(ctx, std::move(tags), std::move(shape), value, dtype), nullptr);
}

Tensor Tensor::scalar(ExecContext& ctx, double value, DType dtype) {
  return full(ctx, {}, {}, value, dtype);
}

template <class Draw>
static Tensor randomTensor(ExecContext& ctx, Tags tags, Extents shape, Draw draw) {
  if (ctx.device() != Device::cpu)  // drawn on the host, the same values on every device, then uploaded
    return randomTensor(ctx.on(Device::cpu), std::move(tags), std::move(shape), draw).to(ctx, ctx.device());
  RawTensor v = RawTensor::empty(ctx, std::move(tags), std::move(shape));
  float* p = v.f32();
  ctx.parallelFor(v.numel(), 1 << 14, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) p[i] = static_cast<float>(draw(static_cast<uint64_t>(i)));
  });
  return Tensor::fromRaw(ctx, std::move(v));
}

Tensor Tensor::uniform(ExecContext& ctx, Tags tags, Extents shape, double lo, double hi, uint64_t seed) {
  if (!(std::isfinite(lo) && std::isfinite(hi) && lo <= hi))
    fail(ErrorCode::InvalidArgument, "uniform: need finite lo <= hi, got [" + std::to_string(lo) + ", " + std::to_string(hi) + ")");
  return randomTensor(ctx, std::move(tags), std::move(shape),
                      [=](uint64_t i) { return lo + (hi - lo) * random::unit(seed, i); });
}

Tensor Tensor::normal(ExecContext& ctx, Tags tags, Extents shape, double mean, double std, uint64_t seed) {
  if (!(std::isfinite(mean) && std::isfinite(std) && std >= 0))
    fail(ErrorCode::InvalidArgument, "normal: need a finite mean and std >= 0, got std " + std::to_string(std));
  return randomTensor(ctx, std::move(tags), std::move(shape),
                      [=](uint64_t i) { return mean + std * random::normal(seed, i); });
}

// Note [Dtype rules]: leaves are f32, or f16/bf16 whose accumulated gradient is f32 (there is no
// 16-bit gradient anywhere). f64, integer and q8_0 tensors never take gradients.
static void requireLeafDType(DType d) {
  if (d != DType::f32 && d != DType::f16 && d != DType::bf16)
    fail(ErrorCode::UnsupportedGradient,
         "variables are f32, f16 or bf16; got " + std::string(name(d)) +
             (d == DType::q8_0 ? " (a quantized weight is a frozen constant; dequantize with "
                                 "to(ctx, DType::f32) to train it)"
                               : " (convert with to(ctx, DType::f32) first)"));
}

static Tensor leaf(ExecContext& ctx, RawTensor value) {
  auto state = std::make_shared<GradState>(value.tags(), value.shape());
  return Tensor::make(ctx, std::move(value), std::move(state));
}

Tensor Tensor::variableFromSlice(ExecContext& ctx, Tags tags, Extents shape,
                                 std::span<const float> values, DType dtype) {
  requireLeafDType(dtype);
  return leaf(ctx, RawTensor::fromSlice(ctx, std::move(tags), std::move(shape), values, dtype));
}

Tensor Tensor::variableFromSlice(ExecContext& ctx, Tags tags, Extents shape,
                                 std::initializer_list<float> values, DType dtype) {
  return variableFromSlice(ctx, std::move(tags), std::move(shape),
                           std::span<const float>(values.begin(), values.size()), dtype);
}

Tensor Tensor::variable(ExecContext& ctx, const Tensor& value) {
  const RawTensor& src = value.value();
  requireLeafDType(src.dtype());
  return leaf(ctx, src.clone(ctx));  // a leaf owns its storage (gradcheck perturbs it)
}

// ---------------------------------------------------------------- accessors

const RawTensor& Tensor::value() const {
  if (!impl_) fail(ErrorCode::InvalidArgument, "empty Tensor handle (default-constructed)");
  return impl_->value();
}

const RawTensor& Tensor::meta() const {
  if (!impl_) fail(ErrorCode::InvalidArgument, "empty Tensor handle (default-constructed)");
  return impl_->meta();
}

// Metadata never computes a pending value (Note [Checkpoint tail]).
DType Tensor::dtype() const { return meta().dtype(); }
Device Tensor::device() const { return meta().device(); }
const Tags& Tensor::tags() const { return meta().tags(); }
const Extents& Tensor::shape() const { return meta().shape(); }
int64_t Tensor::numel() const { return meta().numel(); }
int64_t Tensor::extent(Tag tag) const { return meta().extent(tag); }

bool Tensor::requiresGrad() const {
  meta();  // throws on empty or released handles
  return impl_->gradState() != nullptr;
}

GradState* Tensor::gradState() const {
  meta();
  return impl_->gradState().get();
}

// ---------------------------------------------------------------- autograd

void Tensor::backward(ExecContext& ctx) const {
  const Tensor outputs[] = {*this};
  ag::backwardGrad(ctx, outputs);
}

void Tensor::backwardWithGrad(ExecContext& ctx, const Tensor& grad_output) const {
  GradState* state = gradState();
  if (!state)
    fail(ErrorCode::NoGradientGraph,
         "backwardWithGrad on a tensor that does not require gradients " + value().describe());
  const RawTensor& g = grad_output.value();  // read as a value; its own grad state is ignored
  if (g.tags() != tags() || g.shape() != shape())
    fail(ErrorCode::ShapeMismatch, "backwardWithGrad: gradient " + g.describe() +
                                       " does not match the output " + value().describe());
  if (state->backward_done)
    fail(ErrorCode::BackwardAlreadyRun,
         "backward already ran over this graph; build a fresh forward graph for another pass");
  state->setGrad(g.to(ctx, DType::f32));  // private copy: the engine may accumulate into it
  backward(ctx);
}

// f64 tensors never take gradients, so asking one for its gradient is a mistake, not "none yet".
static void refuseF64Grad(const Tensor& t, const char* what) {
  if (t.dtype() == DType::f64)
    fail(ErrorCode::UnsupportedGradient, std::string(what) + " of an f64 tensor " + t.value().describe() +
                                             ": f64 computes forward only and never has a gradient");
}

std::optional<Tensor> Tensor::grad(ExecContext& ctx) const {
  refuseF64Grad(*this, "grad()");
  GradState* state = gradState();
  if (!state) return std::nullopt;
  auto g = state->gradClone(ctx);
  if (!g) return std::nullopt;
  return make(ctx, std::move(*g), nullptr);
}

std::optional<Tensor> Tensor::gradView(ExecContext& ctx) const {
  refuseF64Grad(*this, "gradView()");
  GradState* state = gradState();
  if (!state) return std::nullopt;
  auto g = state->gradView();
  if (!g) return std::nullopt;
  return make(ctx, std::move(*g), nullptr);
}

void Tensor::zeroGrad() const {
  if (GradState* state = gradState()) state->zeroGrad();
}

Tensor Tensor::detach(ExecContext& ctx) const { return make(ctx, value(), nullptr); }

// ---------------------------------------------------------------- values

std::span<float> Tensor::data() {
  const RawTensor& v = value();
  if (requiresGrad())
    fail(ErrorCode::MutableDataRequiresNoGrad,
         "data(): this tensor carries gradient state; mutating it would invalidate the graph. "
         "Read with dataConst(), or write to a detach()ed copy");
  if (!v.isContiguous())
    fail(ErrorCode::InvalidArgument,
         "data(): mutable access needs a contiguous tensor; call contiguous(ctx) first");
  return {v.f32(), static_cast<size_t>(v.numel())};
}

std::span<const float> Tensor::dataConst() const {
  value();
  const RawTensor& v = impl_->contiguousF32(nullptr);
  return {v.data<float>(), static_cast<size_t>(v.numel())};
}

float Tensor::item() const {
  const RawTensor& v = value();
  if (v.numel() != 1)
    fail(ErrorCode::InvalidArgument,
         "item() needs a one-element tensor, got " + v.describe() + " with " +
             std::to_string(v.numel()) + " elements");
  return v.toVector()[0];
}

std::vector<float> Tensor::toVector() const { return value().toVector(); }

void Tensor::dispose() {
  if (impl_) impl_->release();
}

}  // namespace fucina
