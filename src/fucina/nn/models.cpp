#include "fucina/nn/models.h"

#include <string>

#include "fucina/core/error.h"

namespace fucina::nn {

namespace {
Tag hiddenTag(size_t i, size_t last) { return i == last ? Tag("class") : Tag("h" + std::to_string(i)); }
}  // namespace

Mlp::Mlp(ExecContext& ctx, const MlpConfig& config, uint64_t seed) {
  const auto& s = config.sizes;
  if (s.size() < 2) fail(ErrorCode::InvalidArgument, "Mlp: sizes needs an input and an output size");
  for (size_t i = 0; i + 1 < s.size(); ++i)
    layers_.emplace_back(ctx, i == 0 ? Tag("in") : hiddenTag(i, s.size() - 1), hiddenTag(i + 1, s.size() - 1),
                         s[i], s[i + 1], subSeed(seed, i));
}

Tensor Mlp::operator()(ExecContext& ctx, const Tensor& x) const {
  Tensor h = x;
  for (size_t i = 0; i < layers_.size(); ++i) {
    h = layers_[i](ctx, h);
    if (i + 1 < layers_.size()) h = h.relu(ctx);
  }
  return h;
}

std::vector<Tensor> Mlp::parameters() const {
  std::vector<Tensor> params;
  for (const auto& l : layers_) l.collect(params);
  return params;
}

namespace {
int64_t afterConvPool(int64_t size) { return (size - 2) / 2; }  // valid 3x3 conv, then 2x2 pool
}  // namespace

Cnn::Cnn(ExecContext& ctx, const CnnConfig& c, uint64_t seed)
    : flat_(c.conv2 * afterConvPool(afterConvPool(c.image)) * afterConvPool(afterConvPool(c.image))),
      conv1_(ctx, "c", "c1", c.channels, c.conv1, 3, subSeed(seed, 0)),
      conv2_(ctx, "c1", "c2", c.conv1, c.conv2, 3, subSeed(seed, 1)),
      fc1_(ctx, "feature", "hidden", flat_, c.hidden, subSeed(seed, 2)),
      fc2_(ctx, "hidden", "class", c.hidden, c.classes, subSeed(seed, 3)) {
  if (afterConvPool(afterConvPool(c.image)) < 1)
    fail(ErrorCode::InvalidArgument, "Cnn: images of " + std::to_string(c.image) + " pixels are too small (need >= 10)");
}

Tensor Cnn::operator()(ExecContext& ctx, const Tensor& images) const {
  const Tensor x = hasTag(images.tags(), "c") ? images : images.insertAxis(ctx, "c", images.rank() - 2);
  Tensor h = conv1_(ctx, x).relu(ctx).maxPool2d(ctx, 2, 2, 2, 2);
  h = conv2_(ctx, h).relu(ctx).maxPool2d(ctx, 2, 2, 2, 2);
  h = h.merge(ctx, {"c2", "h", "w"}, "feature");
  return fc2_(ctx, fc1_(ctx, h).relu(ctx));
}

std::vector<Tensor> Cnn::parameters() const {
  std::vector<Tensor> params;
  conv1_.collect(params);
  conv2_.collect(params);
  fc1_.collect(params);
  fc2_.collect(params);
  return params;
}

}  // namespace fucina::nn
