#include "fucina/nn/lora.h"

#include <cmath>
#include <string>

#include "fucina/ag/control.h"
#include "fucina/core/error.h"
#include "fucina/nn/layers.h"

namespace fucina::nn {

namespace {
const Tag kRank("rank");
}

LoraLinear::LoraLinear(Tensor w, Tensor bias_, Tag in_tag, Tag out_tag)
    : weight(std::move(w)), bias(std::move(bias_)), in(in_tag), out(out_tag) {
  if (!weight.defined()) fail(ErrorCode::InvalidArgument, "LoraLinear: the weight is an empty handle");
  if (weight.rank() != 2 || !hasTag(weight.tags(), in) || !hasTag(weight.tags(), out) || in == out)
    fail(ErrorCode::ShapeMismatch, "LoraLinear: the weight must have exactly the axes '" + std::string(in.name()) +
                                       "' and '" + std::string(out.name()) + "', got " +
                                       describe(weight.tags(), weight.shape()));
  if (bias.defined() && (bias.rank() != 1 || bias.tags()[0] != out || bias.shape()[0] != weight.extent(out)))
    fail(ErrorCode::ShapeMismatch, "LoraLinear: the bias must be {" + std::string(out.name()) + "=" +
                                       std::to_string(weight.extent(out)) + "}, got " +
                                       describe(bias.tags(), bias.shape()));
}

void checkLora(int64_t rank, double alpha, double p) {
  if (rank < 1) fail(ErrorCode::InvalidArgument, "LoRA: rank must be at least 1, got " + std::to_string(rank));
  if (!std::isfinite(alpha) || alpha < 0)
    fail(ErrorCode::InvalidArgument, "LoRA: alpha must be a finite number >= 0, got " + std::to_string(alpha));
  if (!(p >= 0 && p < 1)) fail(ErrorCode::InvalidArgument, "LoRA: dropout must be in [0, 1), got " + std::to_string(p));
}

void LoraLinear::adapt(ExecContext& ctx, int64_t rank, double alpha, double p, uint64_t seed) {
  checkLora(rank, alpha, p);
  if (in == kRank || out == kRank)
    fail(ErrorCode::InvalidArgument, "LoRA: the layer's axes may not be named 'rank' (the adapter's inner axis)");
  const int64_t fan_in = weight.extent(in), fan_out = weight.extent(out);
  const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
  a = Tensor::variable(ctx, Tensor::uniform(ctx, {kRank, in}, {rank, fan_in}, -bound, bound, seed));
  b = Tensor::variable(ctx, Tensor::zeros(ctx, {out, kRank}, {fan_out, rank}));
  scale = alpha / static_cast<double>(rank);
  dropout = p;
}

Tensor LoraLinear::operator()(ExecContext& ctx, const Tensor& x, std::optional<uint64_t> dropout_seed) const {
  Tensor y = bias.defined() ? x.addDot(ctx, weight, in, bias) : x.dot(ctx, weight, in);
  if (!adapted()) return y;
  // Note [Recompute-safe LoRA dropout]: whether and how to drop comes from the caller only.
  const Tensor xin = dropout > 0 && dropout_seed ? x.dropout(ctx, dropout, *dropout_seed) : x;
  return y.add(ctx, xin.dot(ctx, a, in).dot(ctx, b, kRank).scale(ctx, scale));
}

Tensor LoraLinear::merge(ExecContext& ctx) const {
  const NoGradScope no_grad = noGrad();
  const Tensor w = weight.to(ctx, DType::f32);
  if (!adapted()) return Tensor::fromRaw(ctx, w.value().clone(ctx));  // its own buffer, never W's
  // B{out, rank} · A{rank, in} -> {out, in}, permuted to W's layout.
  const Tensor delta = b.dot(ctx, a, kRank).scale(ctx, scale).permuteTo(ctx, weight.tags());
  return w.add(ctx, delta).contiguous(ctx);
}

}  // namespace fucina::nn
