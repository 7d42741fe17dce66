#include "fucina/nn/layers.h"

#include <cmath>

namespace fucina::nn {

namespace {
Tensor uniformVariable(ExecContext& ctx, Tags tags, Extents shape, double bound, uint64_t seed) {
  return Tensor::variable(ctx, Tensor::uniform(ctx, std::move(tags), std::move(shape), -bound, bound, seed));
}
void keepDefined(std::vector<Tensor>& params, std::initializer_list<const Tensor*> ts) {
  for (const Tensor* t : ts)
    if (t->defined()) params.push_back(*t);
}
}  // namespace

Linear::Linear(ExecContext& ctx, Tag in_tag, Tag out_tag, int64_t in_features, int64_t out_features,
               uint64_t seed, bool with_bias)
    : in(in_tag), out(out_tag) {
  const double bound = 1.0 / std::sqrt(static_cast<double>(in_features));
  weight = uniformVariable(ctx, {out, in}, {out_features, in_features}, bound, subSeed(seed, 0));
  if (with_bias) bias = uniformVariable(ctx, {out}, {out_features}, bound, subSeed(seed, 1));
}

Tensor Linear::operator()(ExecContext& ctx, const Tensor& x) const {
  return bias.defined() ? x.addDot(ctx, weight, in, bias) : x.dot(ctx, weight, in);
}

void Linear::collect(std::vector<Tensor>& params) const { keepDefined(params, {&weight, &bias}); }

Conv2d::Conv2d(ExecContext& ctx, Tag in, Tag out, int64_t in_channels, int64_t out_channels,
               int64_t kernel, uint64_t seed, Conv2dOptions geometry)
    : options(geometry) {
  options.channels = in;
  options.out_channels = out;
  const int64_t fan_in = in_channels / options.groups * kernel * kernel;
  const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
  weight = uniformVariable(ctx, {out, in, options.kernel_h, options.kernel_w},
                           {out_channels, in_channels / options.groups, kernel, kernel}, bound, subSeed(seed, 0));
  bias = uniformVariable(ctx, {out}, {out_channels}, bound, subSeed(seed, 1));
}

Tensor Conv2d::operator()(ExecContext& ctx, const Tensor& x) const { return x.conv2d(ctx, weight, bias, options); }
Tensor Conv2d::forwardRelu(ExecContext& ctx, const Tensor& x, int64_t max_pool) const {
  Conv2dOptions o = options;
  o.max_pool = max_pool;
  return x.conv2dRelu(ctx, weight, bias, o);
}

void Conv2d::collect(std::vector<Tensor>& params) const { keepDefined(params, {&weight, &bias}); }

LayerNorm::LayerNorm(ExecContext& ctx, Tag axis_tag, int64_t features, double epsilon)
    : axis(axis_tag), eps(epsilon) {
  weight = Tensor::variable(ctx, Tensor::ones(ctx, {axis}, {features}));
  bias = Tensor::variable(ctx, Tensor::zeros(ctx, {axis}, {features}));
}

Tensor LayerNorm::operator()(ExecContext& ctx, const Tensor& x) const {
  return x.layerNorm(ctx, axis, weight, bias, eps);
}

void LayerNorm::collect(std::vector<Tensor>& params) const { keepDefined(params, {&weight, &bias}); }

Embedding::Embedding(ExecContext& ctx, Tag rows_tag, Tag dim, int64_t count, int64_t features, double std,
                     uint64_t seed)
    : rows(rows_tag) {
  table = Tensor::variable(ctx, Tensor::normal(ctx, {rows, dim}, {count, features}, 0.0, std, seed));
}

Tensor Embedding::operator()(ExecContext& ctx, const Tensor& ids) const { return table.indexSelect(ctx, rows, ids); }

void Embedding::collect(std::vector<Tensor>& params) const { params.push_back(table); }

}  // namespace fucina::nn
