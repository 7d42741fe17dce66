#include "fucina/nn/models.h"

#include <string>

#include "fucina/ag/control.h"
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
      channels_last_(c.channels_last),
      conv1_(ctx, "c", "c1", c.channels, c.conv1, 3, subSeed(seed, 0)),
      conv2_(ctx, "c1", "c2", c.conv1, c.conv2, 3, subSeed(seed, 1)),
      fc1_(ctx, "feature", "hidden", flat_, c.hidden, subSeed(seed, 2)),
      fc2_(ctx, "hidden", "class", c.hidden, c.classes, subSeed(seed, 3)) {
  if (afterConvPool(afterConvPool(c.image)) < 1)
    fail(ErrorCode::InvalidArgument, "Cnn: images of " + std::to_string(c.image) + " pixels are too small (need >= 10)");
}

namespace {
// The Cnn's layers, training or prepared: convReluPool(i, x) is convolution i (0 or 1), its relu
// and 2x2 max pooling, linear(i, x) linear layer i.
template <class ConvReluPool, class Linear>
Tensor cnnLayers(ExecContext& ctx, const Tensor& images, bool channels_last, const ConvReluPool& convReluPool,
                 const Linear& linear) {
  const Tensor x =
      hasTag(images.tags(), "c") ? images : images.insertAxis(ctx, "c", channels_last ? images.rank() : images.rank() - 2);
  Tensor h = convReluPool(1, convReluPool(0, x));
  h = h.merge(ctx, channels_last ? Tags{"h", "w", "c2"} : Tags{"c2", "h", "w"}, "feature");
  return linear(1, linear(0, h).relu(ctx));
}
}  // namespace

Tensor Cnn::operator()(ExecContext& ctx, const Tensor& images) const {
  return cnnLayers(
      ctx, images, channels_last_, [&](int i, const Tensor& x) { return (i == 0 ? conv1_ : conv2_).forwardRelu(ctx, x, 2); },
      [&](int i, const Tensor& x) { return (i == 0 ? fc1_ : fc2_)(ctx, x); });
}

namespace {
PreparedConv2d prepared(ExecContext& ctx, const Conv2d& conv) {
  auto off = noGrad();  // the parameters are variables; the prepared planes are constants
  return conv.bias.defined() ? prepareConv2dWeights(ctx, conv.weight, conv.bias, conv.options)
                             : prepareConv2dWeights(ctx, conv.weight, conv.options);
}
}  // namespace

PreparedCnn::PackedLinear::PackedLinear(ExecContext& ctx, const Linear& layer) {
  auto off = noGrad();  // the parameters are variables; the packed copies are constants
  weight = packRhs(ctx, layer.weight, layer.in);
  if (layer.bias.defined()) bias = Tensor::fromSlice(ctx, layer.bias.tags(), layer.bias.shape(), layer.bias.toVector());
}

PreparedCnn::PreparedCnn(ExecContext& ctx, const Cnn& model)
    : channels_last_(model.channels_last_), conv1_(prepared(ctx, model.conv1_)), conv2_(prepared(ctx, model.conv2_)),
      fc1_(ctx, model.fc1_), fc2_(ctx, model.fc2_) {}

Tensor PreparedCnn::operator()(ExecContext& ctx, const Tensor& images) const {
  auto off = noGrad();
  return cnnLayers(ctx, images, channels_last_,
                   [&](int i, const Tensor& x) {
                     return x.conv2dPreparedRelu(ctx, i == 0 ? conv1_ : conv2_).maxPool2d(ctx, 2, 2, 2, 2);
                   },
                   [&](int i, const Tensor& x) {
                     const PackedLinear& l = i == 0 ? fc1_ : fc2_;
                     return l.bias.defined() ? x.dotPacked(ctx, l.weight, l.bias) : x.dotPacked(ctx, l.weight);
                   });
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
