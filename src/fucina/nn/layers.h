/// @file
/// Layers (fucina::nn): small structs that own their parameters (leaf variables) and apply one
/// named-axis op chain. Initialisation follows torch's defaults, drawn from seeded generators
/// (Tensor::uniform / normal), so the same seed gives the same model in C++ and in JS.
#pragma once

#include <cstdint>
#include <vector>

#include "fucina/ag/tensor.h"

namespace fucina::nn {

/// y{..., out} = x{..., in} · weight{out, in} + bias{out}. weight and bias ~ U(±1/sqrt(in)).
struct Linear {
  Tensor weight, bias;  ///< bias is an empty handle when made without one
  Tag in, out;

  Linear(ExecContext& ctx, Tag in, Tag out, int64_t in_features, int64_t out_features,
         uint64_t seed, bool with_bias = true);
  Tensor operator()(ExecContext& ctx, const Tensor& x) const;
  void collect(std::vector<Tensor>& params) const;
};

/// conv2d with bias: x{..., in, h, w} -> {..., out, h', w'}; weight {out, in, kh, kw} and bias
/// {out} ~ U(±1/sqrt(in·kh·kw)) as torch. The tags for h, w, kh, kw come from `geometry`.
struct Conv2d {
  Tensor weight, bias;
  Conv2dOptions options;

  Conv2d(ExecContext& ctx, Tag in, Tag out, int64_t in_channels, int64_t out_channels,
         int64_t kernel, uint64_t seed, Conv2dOptions geometry = {});
  Tensor operator()(ExecContext& ctx, const Tensor& x) const;
  /// relu((*this)(x)) as one op (Tensor::conv2dRelu): the bias and relu in the output loop; with
  /// max_pool > 1, max pooled over max_pool x max_pool windows in the same op (Note [Pooled conv2dRelu]).
  Tensor forwardRelu(ExecContext& ctx, const Tensor& x, int64_t max_pool = 1) const;
  void collect(std::vector<Tensor>& params) const;
};

/// Affine layer normalisation over `axis`: weight ones, bias zeros.
struct LayerNorm {
  Tensor weight, bias;
  Tag axis;
  double eps;

  LayerNorm(ExecContext& ctx, Tag axis, int64_t features, double eps = 1e-5);
  Tensor operator()(ExecContext& ctx, const Tensor& x) const;
  void collect(std::vector<Tensor>& params) const;
};

/// A lookup table {rows, dim} ~ N(0, std^2): ids{...} -> {..., dim}.
struct Embedding {
  Tensor table;
  Tag rows;

  Embedding(ExecContext& ctx, Tag rows, Tag dim, int64_t count, int64_t features, double std,
            uint64_t seed);
  Tensor operator()(ExecContext& ctx, const Tensor& ids) const;
  void collect(std::vector<Tensor>& params) const;
};

/// Distinct seeds for the parameters of one model from a base seed (so layers do not share draws).
/// Kept below 2^53 so JavaScript numbers hold them exactly (web/nn.mjs computes the same).
inline uint64_t subSeed(uint64_t seed, uint64_t index) {
  return (seed * 1000003u + index * 7919u + 1u) & ((uint64_t{1} << 53) - 1);
}

}  // namespace fucina::nn
