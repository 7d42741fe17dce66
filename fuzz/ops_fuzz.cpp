// Random op sequences driven by the fuzz input, through the public C++ API: tensors of random
// shapes (0 and huge extents too), tags (shared, missing, repeated) and dtypes, constants and
// variables, ops with valid and invalid arguments, then backward through a scalar reduction of
// every tensor with a graph. A fucina::Error is a fine answer to anything; any other exception, a
// crash, a sanitizer report, or a tensor or byte still live once every handle is dropped is a bug.
#include <cmath>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <limits>
#include <span>
#include <string_view>
#include <vector>

#include <fucina/fucina.h>

using fucina::DType;
using fucina::Extents;
using fucina::Tag;
using fucina::Tags;
using fucina::Tensor;

namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr size_t kPool = 8;       // tensors alive at once
constexpr int kMaxSteps = 24;     // ops per input
constexpr int64_t kMaxKept = 4096;  // elements of a tensor kept for later steps

// The input as a stream of choices; past its end every choice is 0.
class Choices {
 public:
  Choices(const uint8_t* data, size_t size) : p_(data), n_(size) {}
  bool done() const { return i_ >= n_; }
  uint8_t byte() { return i_ < n_ ? p_[i_++] : 0; }
  size_t below(size_t n) { return n ? byte() % n : 0; }
  // Extents and positions: mostly small, sometimes at or past the int64 limits.
  int64_t number() {
    const uint8_t b = byte();
    if (b < 224) return b % 6;
    constexpr int64_t kOdd[] = {-1, kMax, std::numeric_limits<int64_t>::min(), int64_t{1} << 31,
                                int64_t{1} << 40, kMax / 2, int64_t{1} << 62, 33};
    return kOdd[b % 8];
  }
  // The same, small ones shifted to -2..3 (indices from the end, diagonals).
  int64_t offset() {
    const int64_t v = number();
    return v >= 0 && v < 6 ? v - 2 : v;
  }
  double real() {
    constexpr double kValues[] = {0, 1, -1, 0.5, 2, -3, 1e30, -1e-30,
                                  std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN(), 0.999, 1e-5};
    return kValues[below(std::size(kValues))];
  }
  Tag tag() {
    static const char* const kTags[] = {"a", "b", "c", "h", "w", "out", "kh", "kw", "t", "d", "head"};
    return kTags[below(std::size(kTags))];
  }
  Tags tags(size_t rank) {
    Tags t;
    for (size_t i = 0; i < rank; ++i) t.push_back(tag());
    return t;
  }
  Extents extents(size_t rank) {
    Extents e;
    for (size_t i = 0; i < rank; ++i) e.push_back(number());
    return e;
  }
  DType dtype() {
    constexpr DType kTypes[] = {DType::f32, DType::f32, DType::f32, DType::f32, DType::f16,
                                DType::bf16, DType::f64, DType::i32, DType::i64, DType::u8};
    return kTypes[below(std::size(kTypes))];
  }

 private:
  const uint8_t* p_;
  size_t n_, i_ = 0;
};

fucina::ExecContext& context(bool threaded) {
  // Two contexts for the run: one without a pool, one with two threads. A live-byte budget turns a
  // hostile shape that passes every check into OutOfMemory instead of exhausting the machine.
  static auto make = [](int threads) {
    auto* ctx = new fucina::ExecContext(fucina::ExecOptions{.threads = threads});
    ctx->account()->setLiveLimit(size_t{16} << 20);
    return ctx;
  };
  static fucina::ExecContext* serial = make(1);
  static fucina::ExecContext* pool = make(2);
  return threaded ? *pool : *serial;
}

// OPS_FUZZ_TRACE=1 prints each step (to turn a reproducer into a test).
bool trace() {
  static const bool on = std::getenv("OPS_FUZZ_TRACE") != nullptr;
  return on;
}

[[noreturn]] void bug(const char* what) {
  std::fprintf(stderr, "ops_fuzz: %s\n", what);
  std::abort();
}

class Run {
 public:
  Run(fucina::ExecContext& ctx, Choices& in) : ctx_(ctx), in_(in) {}

  void step() {
    const size_t op = in_.below(14);
    const size_t before = pool_.size();
    const Tensor last = before ? pool_.back() : Tensor();
    if (trace()) std::fprintf(stderr, "step %zu:", op);
    try {
      switch (op) {
        case 0: keep(make(false)); break;
        case 1: keep(make(true)); break;
        case 2: keep(unary(pick())); break;
        case 3: keep(binary(pick(), pick())); break;
        case 4: keep(view(pick())); break;
        case 5: keep(spatial(pick())); break;
        case 6: keep(indexed(pick())); break;
        case 7: keep(masked(pick())); break;
        case 8: backward(pick()); break;
        case 9: drop(); break;
        case 10: keep(joined()); break;
        case 11: keep(shifted(pick())); break;
        case 12: keep(indexing(pick())); break;
        default: {  // half of the old "make" draws now pack (the corpus's other draws decode as before)
          const uint8_t b = in_.byte();
          if (b & 2) keep(packed(pick()));
          else keep(make(b & 1));
          break;
        }
      }
    } catch (const fucina::Error& e) {  // any refusal is fine
      if (trace()) std::fprintf(stderr, " refused: %s\n", e.what());
      return;
    }
    if (trace()) {
      const Tensor& t = pool_.size() > before || (!pool_.empty() && !(pool_.back().impl() == last.impl())) ? pool_.back() : Tensor();
      std::fprintf(stderr, " ok %s\n", t.defined() ? t.value().describe().c_str() : "");
    }
  }

  // Backward through a scalar reduction of every tensor that has a graph.
  void finish() {
    for (const Tensor& t : pool_) roundTrip(t);
    for (const Tensor& t : pool_) {
      try {
        if (t.defined() && t.requiresGrad()) {
          if (trace()) std::fprintf(stderr, "backward of %s\n", t.value().describe().c_str());
          t.sumAll(ctx_).backward(ctx_);
          for (const Tensor& u : pool_)
            if (u.defined() && u.requiresGrad()) (void)u.grad(ctx_);
        }
      } catch (const fucina::Error&) {
      }
    }
    pool_.clear();
  }

 private:
  Tensor pick() { return pool_.empty() ? Tensor() : pool_[in_.below(pool_.size())]; }
  // Only small tensors are kept (empty ones of any extents too): a broadcast view of 2^32
  // elements is cheap to make but each op on it takes seconds, which would hide the rest.
  void keep(const Tensor& t) {
    if (!t.defined() || t.numel() > kMaxKept) return;
    if (pool_.size() < kPool) pool_.push_back(t);
    else pool_[in_.below(kPool)] = t;
  }
  void drop() {
    if (pool_.empty()) return;
    const size_t i = in_.below(pool_.size());
    if (in_.byte() & 1) pool_[i].dispose();  // every copy of the handle, graphs included
    pool_.erase(pool_.begin() + static_cast<std::ptrdiff_t>(i));
  }

  Tensor make(bool variable) {
    const size_t rank = in_.below(5);
    const Tags tags = in_.tags(rank);
    const Extents shape = in_.extents(rank);
    Tensor t = Tensor::uniform(ctx_, tags, shape, -2, 2, in_.byte());
    if (variable) {  // f32 mostly, f16 and bf16 leaves too
      const uint8_t kind = in_.byte() % 4;
      return Tensor::variable(ctx_, kind == 1 ? t.to(ctx_, DType::f16) : kind == 2 ? t.to(ctx_, DType::bf16) : t);
    }
    const DType d = in_.dtype();
    return d == DType::f32 ? t : t.to(ctx_, d);
  }

  Tensor ints(const Tags& tags, const Extents& shape) {
    int64_t n = 1;
    for (int64_t e : shape) n = e > 0 && e < 64 ? n * e : n;
    std::vector<int64_t> values(static_cast<size_t>(std::min<int64_t>(n, 4096)));
    for (int64_t& v : values) v = in_.number();
    return Tensor::fromInts(ctx_, tags, shape, values, in_.byte() & 1 ? DType::i64 : DType::i32);
  }

  Tensor unary(const Tensor& t) {
    static constexpr std::string_view kNames[] = {"relu", "softcap15", "fastTanh", "round", "swish", ""};
    switch (in_.below(56)) {
      case 0: return t.neg(ctx_);
      case 1: return t.abs(ctx_);
      case 2: return t.exp(ctx_);
      case 3: return t.log(ctx_);
      case 4: return t.sqrt(ctx_);
      case 5: return t.tanh(ctx_);
      case 6: return t.sigmoid(ctx_);
      case 7: return t.relu(ctx_);
      case 8: return t.gelu(ctx_);
      case 9: return t.silu(ctx_);
      case 10: return t.reciprocal(ctx_);
      case 11: return t.softmax(ctx_, in_.tag());
      case 12: return t.logSoftmax(ctx_, in_.tag());
      case 13: return t.sumAll(ctx_);
      case 14: return t.meanAll(ctx_);
      case 15: return t.sum(ctx_, in_.tag());
      case 16: return t.max(ctx_, in_.tag());
      case 17: return t.cumsum(ctx_, in_.tag());
      case 18: return t.prod(ctx_, in_.tag());
      case 19: return t.norm(ctx_, in_.tag());
      case 20: return t.variance(ctx_, in_.tag(), in_.number());
      case 21: return t.layerNorm(ctx_, in_.tag());
      case 22: return t.rmsNorm(ctx_, in_.tag());
      case 23: return t.l2Normalize(ctx_, in_.tag());
      case 24: return t.clamp(ctx_, in_.real(), in_.real());
      case 25: return t.dropout(ctx_, in_.real(), in_.byte());
      case 26: return t.powScalar(ctx_, in_.real());
      case 27: return t.scale(ctx_, in_.real());
      case 28: return t.to(ctx_, in_.dtype());
      case 29: return t.detach(ctx_);
      case 30: return t.swiglu(ctx_, in_.tag());
      case 31: return t.quantize(ctx_, in_.byte() & 1 ? DType::q8_0 : in_.dtype(), in_.tag());
      case 32: return t.floor(ctx_);
      case 33: return t.fastTanh(ctx_);
      case 34: return t.softcap30(ctx_);
      case 35: return t.unary(ctx_, kNames[in_.below(std::size(kNames))]);
      case 36: return t.cumprod(ctx_, in_.tag());
      case 37: return t.standardizeAxis(ctx_, in_.tag(), in_.real());
      case 38: return t.normAll(ctx_, in_.real());
      case 39: return t.sumMany(ctx_, in_.tags(in_.below(4)));
      case 40: return t.topK(ctx_, in_.tag(), in_.number(), in_.byte() & 1).values;
      case 41: return t.sort(ctx_, in_.tag(), in_.byte() & 1).indices;
      case 42: return t.glu(ctx_, in_.tag());
      case 43: return t.splitGated(ctx_, in_.tag(), in_.byte() & 1 ? "gelu" : "tanh");
      case 44: return t.groupNorm(ctx_, in_.number(), in_.tag(), {.batch = in_.tags(in_.below(3)), .eps = in_.real()});
      case 45: {
        const float bias[] = {1, 2, 3};
        return t.biasAdd(ctx_, in_.tag(), std::span<const float>(bias, in_.below(4)));
      }
      case 46: return t.argmax(ctx_, in_.tag());
      case 47: return t.multinomial(ctx_, in_.tag(), in_.number(), in_.byte(), in_.byte() & 1);
      case 48: return in_.byte() & 1 ? t.any(ctx_, in_.tag()) : t.allAll(ctx_);
      case 49: return t.isnan(ctx_).logicalXor(ctx_, pick());
      case 50: return Tensor::bandMask(ctx_, in_.tag(), in_.tag(), in_.number(), in_.number(), in_.offset(), in_.offset());
      case 51: return t.routerTopK(ctx_, in_.tag(), in_.number()).values;
      // The in-place helpers write into t (a pool tensor, often shared: refused) or a fresh copy;
      // the take* ones consume it, and later uses of it throw TensorReleased.
      case 52: return (in_.byte() & 1 ? t : t.scale(ctx_, 1)).addScaledInPlace(ctx_, pick(), in_.real());
      case 53: return in_.byte() & 1 ? t.addAxisVectorInPlace(ctx_, in_.tag(), pick())
                                     : t.addAxisVectorUnaryInPlace(ctx_, in_.tag(), pick(), kNames[in_.below(std::size(kNames))]);
      case 54: return t.takeScaleNoGrad(ctx_, in_.real());
      case 55: return (in_.byte() & 1 ? t : t.scale(ctx_, 1)).takeAddNoGrad(ctx_, pick());
      default: return t.logsumexp(ctx_, in_.tag());
    }
  }

  Tensor binary(const Tensor& a, const Tensor& b) {
    switch (in_.below(23)) {
      case 0: return a.add(ctx_, b);
      case 1: return a.sub(ctx_, b);
      case 2: return a.mul(ctx_, b);
      case 3: return a.div(ctx_, b);
      case 4: return a.maximum(ctx_, b);
      case 5: return a.pow(ctx_, b);
      case 6: return a.dot(ctx_, b, in_.tag());
      case 7: return a.matmul(ctx_, b, in_.byte() & 1);
      case 8: return a.mseLoss(ctx_, b);
      case 9: return a.huberLoss(ctx_, b, in_.real());
      case 10: return a.bceWithLogitsLoss(ctx_, b);
      case 11: return Tensor::einsum(ctx_, a, b, in_.tags(in_.below(4)));
      case 12: return a.addDot(ctx_, b, in_.tag(), pick());
      case 13: return a.snake(ctx_, b);
      case 14: return a.prelu(ctx_, b);
      case 15: return a.gated(ctx_, b, "silu");
      case 16: return a.situ(ctx_, b, in_.real());
      case 17: return a.cosineSimilarity(ctx_, b, in_.tag(), in_.real());
      case 18: return in_.byte() & 1 ? a.linearRecurrence(ctx_, b, in_.tag()) : a.linearRecurrence(ctx_, b, pick(), in_.tag());
      case 19: return a.dotTernarySte(ctx_, b, in_.tag());
      case 20: return a.channelAffine(ctx_, b, pick(), in_.tag());
      case 21: {
        const std::vector<Tensor> operands{a, b, pick()};
        return Tensor::einsumMany(ctx_, operands, in_.tags(in_.below(4)));
      }
      default: return a.klDivLoss(ctx_, b);
    }
  }

  Tensor view(const Tensor& t) {
    switch (in_.below(16)) {
      case 0: { const size_t r = in_.below(5); return t.broadcastTo(ctx_, in_.tags(r), in_.extents(r)); }
      case 1: return t.permuteTo(ctx_, in_.tags(t.defined() ? t.rank() : 0));
      case 2: return t.withTags(ctx_, in_.tags(in_.below(5)));
      case 3: return t.narrow(ctx_, in_.tag(), in_.number(), in_.number());
      case 4: return t.insertAxis(ctx_, in_.tag(), in_.below(6));
      case 5: return t.squeeze(ctx_, in_.tag());
      case 6: return t.merge(ctx_, in_.tags(in_.below(4)), in_.tag());
      case 7: { const size_t r = in_.below(4); return t.split(ctx_, in_.tag(), in_.tags(r), in_.extents(r)); }
      case 8: return t.flatten(ctx_, in_.tag());
      case 9: { const size_t r = in_.below(5); return t.reshape(ctx_, in_.tags(r), in_.extents(r)); }
      case 10: return t.select(ctx_, in_.tag(), in_.offset());
      case 11: return t.slice(ctx_, in_.tag(), in_.number(), in_.number(), in_.number());
      case 12: return t.transpose(ctx_, in_.tag(), in_.tag());
      case 13: return t.pad(ctx_, in_.tag(), in_.number(), in_.number(), in_.real());
      case 14: return t.contiguous(ctx_);
      default: return t.tril(ctx_, in_.tag(), in_.tag(), in_.offset());
    }
  }

  Tensor spatial(const Tensor& t) {
    switch (in_.below(12)) {
      case 0:
      case 1: {
        fucina::Conv2dOptions o;
        o.stride_h = in_.number(), o.stride_w = in_.number();
        o.pad_h = in_.number(), o.pad_w = in_.number();
        o.dilation_h = in_.number(), o.dilation_w = in_.number();
        o.groups = in_.number();
        const Tensor w = pick();
        return in_.byte() & 1 ? t.conv2d(ctx_, w, o) : t.conv2d(ctx_, w, pick(), o);
      }
      case 5: {
        fucina::Conv2dOptions o;
        o.stride_h = in_.number(), o.pad_w = in_.number(), o.groups = in_.number();
        if (in_.byte() & 1) {
          if (in_.byte() & 1) o.max_pool = in_.number();  // Note [Pooled conv2dRelu]
          return t.conv2dRelu(ctx_, pick(), o);
        }
        // The prepared convolution (Winograd for a 3x3 kernel at stride 1, else im2col + GEMM).
        const fucina::PreparedConv2d p = fucina::prepareConv2dWeights(ctx_, pick(), o);
        return in_.byte() & 1 ? t.conv2dPrepared(ctx_, p) : t.conv2dPreparedRelu(ctx_, p);
      }
      case 6: {
        const fucina::Conv1dOptions o{.stride = in_.number(), .padding = in_.number(), .dilation = in_.number(), .groups = in_.number()};
        return in_.byte() & 1 ? t.conv1d(ctx_, pick(), o) : t.conv1d(ctx_, pick(), pick(), o);
      }
      case 7: {
        const fucina::ConvTranspose1dOptions o{.stride = in_.number(), .padding = in_.number(), .output_padding = in_.number(),
                                               .dilation = in_.number(), .groups = in_.number()};
        return t.convTranspose1d(ctx_, pick(), o);
      }
      case 8: return t.causalConv1d(ctx_, pick(), in_.number());
      case 9: return in_.byte() & 1 ? t.groupedCausalConv1d(ctx_, pick(), in_.number(), in_.number()) : t.causalDepthwiseConv1d(ctx_, pick());
      case 10: {
        const fucina::UnfoldOptions o{.stride_h = in_.number(), .stride_w = in_.number(), .pad_h = in_.number(), .dilation_w = in_.number()};
        return in_.byte() & 1 ? t.unfold(ctx_, in_.number(), in_.number(), o)
                              : t.fold(ctx_, in_.number(), in_.number(), in_.number(), in_.number(), o);
      }
      case 2: return t.maxPool2d(ctx_, in_.number(), in_.number(), in_.number(), in_.number(), in_.number());
      case 3: return t.avgPool2d(ctx_, in_.number(), in_.number(), in_.number(), in_.number(), in_.number());
      default: return t.upsample2xNearest(ctx_);
    }
  }

  Tensor indexed(const Tensor& t) {
    const size_t r = in_.below(4);
    const Tags tags = in_.tags(r);
    const Tensor idx = ints(tags, in_.extents(r));
    switch (in_.below(9)) {
      case 6: return t.crossEntropyExt(ctx_, in_.byte() & 1 ? idx : pick(), in_.tag(),
                                       {.label_smoothing = in_.real(), .ignore_index = in_.number(), .z_loss = in_.real()});
      case 7: return t.linearCrossEntropyExt(ctx_, pick(), idx, in_.tag(), in_.tag(), {.chunk_rows = in_.number()});
      case 8: {
        const fucina::DistillOptions o{.temperature = in_.real(), .alpha = in_.real(), .labels = &idx, .chunk_rows = in_.number()};
        return t.linearDistillExt(ctx_, pick(), pick(), in_.tag(), in_.tag(), o);
      }
      case 0: return t.indexSelect(ctx_, in_.tag(), idx);
      case 1: return t.gather(ctx_, in_.tag(), idx);
      case 2: return t.takeAlongAxis(ctx_, in_.tag(), idx);
      case 3: return t.scatterAdd(ctx_, in_.tag(), idx, pick());
      case 4: return t.crossEntropy(ctx_, idx, in_.tag(), {.label_smoothing = in_.real()});
      default: return t.nllLoss(ctx_, idx, in_.tag(), static_cast<fucina::Reduction>(in_.below(3)));
    }
  }

  Tensor masked(const Tensor& t) {
    switch (in_.below(4)) {
      case 0: return t.maskedFill(ctx_, pick(), in_.real());
      case 1: return Tensor::where(ctx_, pick(), t, pick());
      case 2: return t.bandPart(ctx_, in_.tag(), in_.tag(), in_.offset(), in_.offset());
      default: return t.rope(ctx_, fucina::RopeOptions{.position = in_.tag(), .dim = in_.tag(), .offset = in_.number()});
    }
  }

  // The views, flips and shifts, with hostile axes, counts, strides and pads.
  Tensor shifted(const Tensor& t) {
    switch (in_.below(14)) {
      case 0: return t.alignTo(ctx_, in_.tags(in_.below(5)));
      case 1: {
        const size_t r = in_.below(4);
        const Tags tags = in_.tags(r);
        const Extents shape = in_.extents(r), strides = in_.extents(in_.byte() & 1 ? r : in_.below(4));
        return t.viewWithStrides(ctx_, tags, shape, strides, in_.offset());
      }
      case 2: return t.materialize(ctx_);
      case 3: return t.sliceStep(ctx_, in_.tag(), in_.offset(), in_.offset(), in_.offset());
      case 4: return t.zeroPad2d(ctx_, in_.tag(), in_.tag(), {in_.offset(), in_.offset(), in_.offset(), in_.offset()});
      case 5: return t.constantPad2d(ctx_, in_.tag(), in_.tag(), {in_.offset(), in_.offset(), in_.offset(), in_.offset()}, in_.real());
      case 6: {
        const std::vector<Tensor> parts = t.unbindInto(ctx_, in_.tag());
        return parts.empty() ? t : parts[in_.below(parts.size())];
      }
      case 7: return t.repeatAxis(ctx_, in_.tag(), in_.offset(), in_.byte() & 1);
      case 8: return t.flip(ctx_, in_.tag());
      case 9: return t.roll(ctx_, in_.tag(), in_.offset());
      case 10: {
        const Tag by = in_.tag();
        const Extents one{t.defined() && fucina::hasTag(t.tags(), by) ? t.extent(by) : in_.number()};
        return t.rollBy(ctx_, in_.tag(), by, in_.byte() & 1 ? ints({by}, one) : pick());
      }
      case 11: {
        const Tag by = in_.tag();
        const Extents one{t.defined() && fucina::hasTag(t.tags(), by) ? t.extent(by) : in_.number()};
        return t.shiftBy(ctx_, in_.tag(), by, in_.byte() & 1 ? ints({by}, one) : pick());
      }
      case 12: return t.relposShift(ctx_, in_.tag(), in_.tag());
      default: return t.sliceStep(ctx_, in_.tag(), in_.number(), in_.offset(), in_.byte() & 1 ? -1 : in_.number());
    }
  }

  // Diagonals, masked selection and indexed updates: hostile offsets, starts and
  // indices, any tensor of the pool as mask or source.
  Tensor indexing(const Tensor& t) {
    const Tensor rows = ints({in_.tag()}, {in_.number()});
    switch (in_.below(13)) {
      case 0: return t.diagonal(ctx_, in_.tag(), in_.tag(), in_.offset(), in_.tag());
      case 1: return t.trace(ctx_, in_.tag(), in_.tag());
      case 2: return t.diag(ctx_, in_.tag(), in_.tag(), in_.tag(), in_.offset());
      case 3: return t.diag(ctx_, in_.tag(), in_.tag(), in_.offset(), in_.tag());
      case 4: return t.diagEmbed(ctx_, in_.tag(), in_.tag(), in_.tag(), in_.offset());
      case 5: return t.indexAdd(ctx_, in_.tag(), in_.byte() & 1 ? rows : pick(), pick());
      case 6: {
        const size_t r = in_.below(4);
        const Tags tags = in_.tags(r);
        return t.scatter(ctx_, in_.tag(), ints(tags, in_.extents(r)), pick());
      }
      case 7: return t.maskedSelect(ctx_, pick(), in_.tag());
      case 8: return t.maskedScatter(ctx_, pick(), pick());
      case 9: return t.setSlice(ctx_, in_.tag(), in_.offset(), pick());
      case 10: return t.setRows(ctx_, in_.tag(), rows, pick());
      case 11: return t.zeroSlice(ctx_, in_.tag(), in_.offset(), in_.number());
      default: return t.zeroRows(ctx_, in_.tag(), rows);
    }
  }

  // The packed products: any tensor of the pool packed along any axis (sometimes
  // quantized first), then multiplied by another, plain or fused.
  Tensor packed(const Tensor& t) {
    Tensor w = pick();
    if (in_.byte() & 1) w = w.quantize(ctx_, fucina::DType::q8_0, in_.tag());
    const fucina::PackedRhs p = fucina::packRhs(ctx_, w, in_.tag());
    switch (in_.below(5)) {
      case 0: return t.dotPacked(ctx_, p);
      case 1: return t.dotPacked(ctx_, p, pick());
      case 2: return t.rmsNormMulDotPacked(ctx_, pick(), p, in_.real());
      case 3: return t.splitSwiGluDotPacked(ctx_, p);
      default: return t.gegluQuantDotPacked(ctx_, p);
    }
  }

  Tensor joined() {
    std::vector<Tensor> parts;
    for (size_t i = 0, n = in_.below(4); i < n; ++i) parts.push_back(pick());
    return in_.byte() & 1 ? Tensor::concat(ctx_, parts, in_.tag()) : Tensor::stack(ctx_, parts, in_.tag());
  }

  // Every tensor kept (views of empty buffers, q8_0 blocks and all) encodes to safetensors and
  // decodes to the same axes, dtype and values.
  void roundTrip(const Tensor& t) {
    if (!t.defined()) return;
    try {
      const auto back = fucina::io::decodeSafetensors(ctx_, fucina::io::encodeSafetensors(ctx_, {{"t", t}}));
      if (back.size() != 1) bug("safetensors: one tensor encoded, another count decoded");
      const Tensor& u = back[0].second;
      if (u.dtype() != t.dtype() || u.tags() != t.tags() || u.shape() != t.shape())
        bug("safetensors: a round trip changed the dtype, the axes or the extents");
      const std::vector<float> a = t.toVector(), b = u.toVector();
      if (a.size() != b.size() || (!a.empty() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) != 0))
        bug("safetensors: a round trip changed the values");
    } catch (const fucina::Error&) {  // refused (a q8_0 view that splits blocks): not a bug
    }
  }

  void backward(const Tensor& t) {
    if (in_.byte() & 1) t.backward(ctx_);  // refused unless t is a one-element tensor with a graph
    else t.meanAll(ctx_).backward(ctx_);
  }

  fucina::ExecContext& ctx_;
  Choices& in_;
  std::vector<Tensor> pool_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Choices in(data, size);
  fucina::ExecContext& ctx = context(in.byte() & 1);
  const fucina::MemoryStats before = ctx.memory();
  {
    Run run(ctx, in);
    for (int i = 0; i < kMaxSteps && !in.done(); ++i) run.step();
    run.finish();
  }
  const fucina::MemoryStats after = ctx.memory();
  if (after.live_tensors != before.live_tensors) bug("a tensor is still live after every handle was dropped");
  if (after.live_bytes != before.live_bytes) bug("bytes are still live after every handle was dropped");
  return 0;
}
