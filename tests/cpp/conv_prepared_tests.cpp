// The prepared convolution (prepareConv2dWeights, conv2dPrepared, conv2dPreparedRelu): values
// against conv2d / conv2dRelu on awkward shapes for the Winograd path (3x3, stride 1, dilation 1)
// and the GEMM path (every other geometry), other axis orders and dtypes, bit-identical results
// on 1 and 2 threads, the reference's gradient error, snapshots and bad inputs.
#include <random>
#include <string>

#include "fucina/backend/cpu/winograd.h"
#include "fucina/optim/sgd.h"
#include "test_helpers.h"

using fucina::Conv2dOptions;
using fucina::ExecContext;
using fucina::PreparedConv2d;
using fucina::Tensor;

namespace {

std::vector<float> rnd(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

void requireClose(const std::vector<float>& got, const std::vector<float>& want, float tol) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i);
    REQUIRE(got[i] == Approx(want[i]).margin(tol));
  }
}

// x [n, c, h, w], w [oc, c / groups, kh, kw].
struct Cfg {
  int64_t n, c, h, w, oc, kh, kw, stride, pad, dilation, groups;
};

Conv2dOptions optionsOf(const Cfg& k) {
  return {.stride_h = k.stride, .stride_w = k.stride, .pad_h = k.pad, .pad_w = k.pad, .dilation_h = k.dilation,
          .dilation_w = k.dilation, .groups = k.groups};
}

// 3x3 kernels at stride 1, dilation 1, with enough input channels a group (kWinogradMinChannels).
bool isWinograd(const Cfg& k) {
  return k.kh == 3 && k.kw == 3 && k.stride == 1 && k.dilation == 1 && k.c / k.groups >= fucina::kernels::kWinogradMinChannels;
}

const std::vector<Cfg>& configs() {
  static const std::vector<Cfg> all = {
      // Winograd (64 and more channels a group): odd and even sizes, 1x1 images, padding 0 and 1
      // (and wider than the image), channel counts that are not a multiple of any SIMD width,
      // groups, batch 1 and several, an empty batch. With fewer channels the same shapes take
      // the GEMM path (the kernel's own test below runs them through Winograd too).
      {1, 65, 5, 7, 1, 3, 3, 1, 0, 1, 1},
      {2, 67, 1, 1, 3, 3, 3, 1, 1, 1, 1},
      {3, 130, 6, 5, 6, 3, 3, 1, 1, 1, 2},
      {2, 64, 4, 4, 9, 3, 3, 1, 0, 1, 1},
      {0, 64, 5, 5, 2, 3, 3, 1, 1, 1, 1},
      {1, 1, 5, 7, 1, 3, 3, 1, 0, 1, 1},
      {2, 3, 7, 5, 5, 3, 3, 1, 1, 1, 1},
      {1, 1, 1, 1, 4, 3, 3, 1, 1, 1, 1},
      {3, 5, 1, 1, 3, 3, 3, 1, 2, 1, 1},
      {1, 17, 9, 11, 13, 3, 3, 1, 1, 1, 1},
      {2, 6, 8, 8, 4, 3, 3, 1, 0, 1, 2},
      {1, 4, 3, 3, 6, 3, 3, 1, 0, 1, 2},
      {0, 3, 5, 5, 2, 3, 3, 1, 1, 1, 1},
      {4, 32, 13, 13, 19, 3, 3, 1, 0, 1, 1},  // the Fashion-MNIST CNN's second convolution, narrowed
      // GEMM path: other kernels, strides, dilations, groups.
      {2, 3, 9, 8, 4, 5, 3, 1, 2, 1, 1},
      {1, 4, 11, 10, 6, 3, 3, 2, 1, 1, 2},
      {2, 2, 9, 9, 3, 3, 3, 1, 2, 2, 1},
      {1, 3, 6, 7, 5, 1, 1, 1, 0, 1, 1},
      {0, 2, 4, 4, 3, 2, 2, 1, 0, 1, 1},
  };
  return all;
}

}  // namespace

TEST_CASE("conv2dPrepared and conv2dPreparedRelu: conv2d's values on awkward shapes, both paths") {
  for (int threads : {1, 2}) {
    ExecContext ctx(fucina::ExecOptions{.threads = threads});
    for (size_t ci = 0; ci < configs().size(); ++ci) {
      const Cfg& k = configs()[ci];
      INFO("config " << ci << ", " << threads << " threads");
      Tensor x = Tensor::fromSlice(ctx, {"n", "c", "h", "w"}, {k.n, k.c, k.h, k.w}, rnd(size_t(k.n * k.c * k.h * k.w), 10 + ci));
      Tensor w = Tensor::fromSlice(ctx, {"out", "c", "kh", "kw"}, {k.oc, k.c / k.groups, k.kh, k.kw},
                                   rnd(size_t(k.oc * (k.c / k.groups) * k.kh * k.kw), 20 + ci));
      Tensor b = Tensor::fromSlice(ctx, {"out"}, {k.oc}, rnd(size_t(k.oc), 30 + ci));
      const Conv2dOptions o = optionsOf(k);
      const PreparedConv2d p = fucina::prepareConv2dWeights(ctx, w, b, o);
      const PreparedConv2d plain = fucina::prepareConv2dWeights(ctx, w, o);
      CHECK(p.winograd() == isWinograd(k));
      CHECK(p.hasBias());
      CHECK_FALSE(plain.hasBias());
      CHECK(p.inChannels() == k.c);
      CHECK(p.outChannels() == k.oc);
      // Winograd's transforms add a few roundings per product: a sum of c·9 terms of size <= 1.
      const float tol = 2e-6f * float(k.c * 9 + 10);
      const Tensor want = x.conv2d(ctx, w, b, o);
      const Tensor y = x.conv2dPrepared(ctx, p);
      CHECK(y.tags() == want.tags());
      CHECK(y.shape() == want.shape());
      CHECK_FALSE(y.requiresGrad());
      requireClose(y.toVector(), want.toVector(), tol);
      requireClose(x.conv2dPreparedRelu(ctx, p).toVector(), x.conv2dRelu(ctx, w, b, o).toVector(), tol);
      requireClose(x.conv2dPrepared(ctx, plain).toVector(), x.conv2d(ctx, w, o).toVector(), tol);
      requireClose(x.conv2dPreparedRelu(ctx, plain).toVector(), x.conv2dRelu(ctx, w, o).toVector(), tol);
    }
  }
}

TEST_CASE("kernels::winogradConv: conv2d's values for any channel count, odd sizes, padding, groups, 1 and 2 threads") {
  // The kernel on its own, so that 1 channel and other counts below kWinogradMinChannels run
  // through Winograd too.
  for (int threads : {1, 2}) {
    ExecContext ctx(fucina::ExecOptions{.threads = threads});
    for (const Cfg& k : {Cfg{1, 1, 5, 7, 1, 3, 3, 1, 0, 1, 1}, Cfg{2, 1, 1, 1, 4, 3, 3, 1, 1, 1, 1}, Cfg{3, 5, 7, 9, 6, 3, 3, 1, 1, 1, 1},
                         Cfg{2, 6, 8, 3, 4, 3, 3, 1, 2, 1, 2}, Cfg{1, 3, 3, 3, 5, 3, 3, 1, 0, 1, 1}, Cfg{6, 2, 9, 9, 3, 3, 3, 1, 1, 1, 1},
                         Cfg{0, 2, 4, 4, 3, 3, 3, 1, 1, 1, 1}}) {
      INFO("n" << k.n << " c" << k.c << " " << k.h << "x" << k.w << " oc" << k.oc << " pad" << k.pad << " groups" << k.groups
                << ", " << threads << " threads");
      const auto xv = rnd(size_t(k.n * k.c * k.h * k.w), 40), wv = rnd(size_t(k.oc * (k.c / k.groups) * 9), 41);
      const auto bv = rnd(size_t(k.oc), 42);
      const Tensor x = Tensor::fromSlice(ctx, {"n", "c", "h", "w"}, {k.n, k.c, k.h, k.w}, xv);
      const Tensor w = Tensor::fromSlice(ctx, {"out", "c", "kh", "kw"}, {k.oc, k.c / k.groups, 3, 3}, wv);
      const Tensor b = Tensor::fromSlice(ctx, {"out"}, {k.oc}, bv);
      const std::vector<float> want = x.conv2dRelu(ctx, w, b, optionsOf(k)).toVector();
      const int64_t oh = k.h + 2 * k.pad - 2, ow = k.w + 2 * k.pad - 2;
      std::vector<float> u(size_t(16 * k.oc * (k.c / k.groups))), y(size_t(k.n * k.oc * oh * ow));
      fucina::kernels::winogradWeights(k.oc, k.c / k.groups, k.groups, wv.data(), u.data());
      const fucina::kernels::WinogradShape shape{k.n, k.c, k.h, k.w, k.oc, k.groups, k.pad, k.pad, oh, ow};
      fucina::kernels::winogradConv(ctx, shape, xv.data(), u.data(), bv.data(), true, y.data());
      requireClose(y, want, 1e-5f * float(k.c * 9 + 10));
    }
  }
}

TEST_CASE("conv2dPrepared: any axis order, named axes, 16-bit operands") {
  ExecContext ctx;
  for (const Cfg& k : {Cfg{2, 64, 7, 6, 4, 3, 3, 1, 1, 1, 1}, Cfg{2, 3, 7, 6, 4, 2, 3, 2, 0, 1, 1}}) {
    INFO("kernel " << k.kh << "x" << k.kw);
    const Conv2dOptions o{.channels = "ch", .height = "y", .width = "x", .out_channels = "f", .kernel_h = "ky",
                          .kernel_w = "kx", .stride_h = k.stride, .stride_w = k.stride, .pad_h = k.pad, .pad_w = k.pad};
    Tensor x = Tensor::fromSlice(ctx, {"x", "b", "y", "ch"}, {k.w, k.n, k.h, k.c}, rnd(size_t(k.n * k.c * k.h * k.w), 1));
    Tensor w = Tensor::fromSlice(ctx, {"kx", "ch", "f", "ky"}, {k.kw, k.c, k.oc, k.kh}, rnd(size_t(k.oc * k.c * k.kh * k.kw), 2));
    Tensor b = Tensor::fromSlice(ctx, {"f"}, {k.oc}, rnd(size_t(k.oc), 3));
    const Tensor want = x.conv2d(ctx, w, b, o);
    const Tensor y = x.conv2dPrepared(ctx, fucina::prepareConv2dWeights(ctx, w, b, o));
    CHECK(y.tags() == fucina::Tags{"x", "b", "y", "f"});
    requireClose(y.toVector(), want.toVector(), 1e-4f);
    // A strided input view, and f16 weight and input: widened to f32, as conv2d computes them.
    const Tensor xs = x.permuteTo(ctx, {"ch", "y", "b", "x"});
    requireClose(xs.conv2dPrepared(ctx, fucina::prepareConv2dWeights(ctx, w, b, o)).toVector(),
                 xs.conv2d(ctx, w, b, o).toVector(), 1e-4f);
    const Tensor w16 = w.to(ctx, fucina::DType::f16), x16 = x.to(ctx, fucina::DType::f16);
    const Tensor y16 = x16.conv2dPrepared(ctx, fucina::prepareConv2dWeights(ctx, w16, b, o));
    CHECK(y16.dtype() == fucina::DType::f32);
    requireClose(y16.toVector(), x16.to(ctx, fucina::DType::f32).conv2d(ctx, w16.to(ctx, fucina::DType::f32), b, o).toVector(),
                 1e-4f);
  }
}

TEST_CASE("conv2dPrepared: bit-identical on 1 and 2 threads (blocks of tiles cut by the shape)") {
  // 4 images of 20x20 with 64 -> 5 channels: 400 Winograd tiles, several blocks; and the
  // GEMM path on 9 images (more than one chunk of images).
  for (const Cfg& k : {Cfg{4, 64, 20, 20, 5, 3, 3, 1, 1, 1, 1}, Cfg{3, 72, 17, 15, 24, 3, 3, 1, 0, 1, 1},
                       Cfg{9, 3, 12, 12, 5, 5, 5, 1, 2, 1, 1}}) {
    std::vector<std::vector<float>> results;
    for (int threads : {1, 2}) {
      ExecContext ctx(fucina::ExecOptions{.threads = threads});
      Tensor x = Tensor::fromSlice(ctx, {"n", "c", "h", "w"}, {k.n, k.c, k.h, k.w}, rnd(size_t(k.n * k.c * k.h * k.w), 5));
      Tensor w = Tensor::fromSlice(ctx, {"out", "c", "kh", "kw"}, {k.oc, k.c, k.kh, k.kw}, rnd(size_t(k.oc * k.c * k.kh * k.kw), 6));
      Tensor b = Tensor::fromSlice(ctx, {"out"}, {k.oc}, rnd(size_t(k.oc), 7));
      results.push_back(x.conv2dPreparedRelu(ctx, fucina::prepareConv2dWeights(ctx, w, b, optionsOf(k))).toVector());
    }
    CHECK(results[0] == results[1]);
  }
}

TEST_CASE("prepared convolution: an operand that requires grad is GradientPreparedConv2dUnsupported") {
  ExecContext ctx;
  Tensor x = Tensor::fromSlice(ctx, {"c", "h", "w"}, {64, 4, 4}, rnd(1024, 1));
  Tensor xv = Tensor::variable(ctx, x);
  for (const auto& [kh, kw] : {std::pair<int64_t, int64_t>{3, 3}, {1, 2}}) {  // Winograd and GEMM
    INFO("kernel " << kh << "x" << kw);
    Tensor w = Tensor::fromSlice(ctx, {"out", "c", "kh", "kw"}, {3, 64, kh, kw}, rnd(size_t(192 * kh * kw), 2));
    Tensor b = Tensor::fromSlice(ctx, {"out"}, {3}, {0.1f, 0.2f, 0.3f});
    REQUIRE_FUCINA_ERROR(fucina::prepareConv2dWeights(ctx, Tensor::variable(ctx, w)), GradientPreparedConv2dUnsupported);
    REQUIRE_FUCINA_ERROR(fucina::prepareConv2dWeights(ctx, Tensor::variable(ctx, w), b),
                         GradientPreparedConv2dUnsupported);
    REQUIRE_FUCINA_ERROR(fucina::prepareConv2dWeights(ctx, w, Tensor::variable(ctx, b)),
                         GradientPreparedConv2dUnsupported);
    const PreparedConv2d p = fucina::prepareConv2dWeights(ctx, w, b);
    REQUIRE_FUCINA_ERROR(xv.conv2dPrepared(ctx, p), GradientPreparedConv2dUnsupported);
    REQUIRE_FUCINA_ERROR(xv.conv2dPreparedRelu(ctx, p), GradientPreparedConv2dUnsupported);
    // With gradients off (evaluation of a model being trained) the same operands are fine, and
    // the result is a constant.
    auto off = fucina::noGrad();
    const PreparedConv2d pv = fucina::prepareConv2dWeights(ctx, Tensor::variable(ctx, w), Tensor::variable(ctx, b));
    const Tensor y = xv.conv2dPreparedRelu(ctx, pv);
    CHECK_FALSE(y.requiresGrad());
    CHECK(pv.winograd() == (kh == 3));
    requireClose(y.toVector(), x.conv2dRelu(ctx, w, b).toVector(), 1e-4f);
  }
}

TEST_CASE("prepareConv2dWeights: a snapshot that outlives its scope, bad weights and inputs") {
  ExecContext ctx;
  Tensor x = Tensor::fromSlice(ctx, {"n", "c", "h", "w"}, {1, 64, 5, 5}, rnd(1600, 1));
  Tensor w = Tensor::fromSlice(ctx, {"out", "c", "kh", "kw"}, {3, 64, 3, 3}, rnd(1728, 2));
  const std::vector<float> want = x.conv2d(ctx, w).toVector();
  PreparedConv2d p;
  {
    fucina::ExecScope scope(ctx);
    p = fucina::prepareConv2dWeights(ctx, w);
  }
  for (float& v : w.data()) v = 0;  // later writes to the weight do not reach the prepared planes
  CHECK(p.winograd());
  requireClose(x.conv2dPrepared(ctx, p).toVector(), want, 1e-4f);

  REQUIRE_FUCINA_ERROR(x.conv2dPrepared(ctx, PreparedConv2d()), InvalidArgument);
  REQUIRE_FUCINA_ERROR(fucina::prepareConv2dWeights(ctx, Tensor::zeros(ctx, {"out", "c", "kh"}, {3, 64, 3})),
                       ShapeMismatch);
  REQUIRE_FUCINA_ERROR(fucina::prepareConv2dWeights(ctx, w, {.groups = 2}), InvalidArgument);
  REQUIRE_FUCINA_ERROR(fucina::prepareConv2dWeights(ctx, w, {.stride_h = 0}), InvalidArgument);
  REQUIRE_FUCINA_ERROR(fucina::prepareConv2dWeights(ctx, w, {.pad_w = -1}), InvalidArgument);
  REQUIRE_FUCINA_ERROR(fucina::prepareConv2dWeights(ctx, w, Tensor::zeros(ctx, {"out"}, {4})), ShapeMismatch);
  REQUIRE_FUCINA_ERROR(fucina::prepareConv2dWeights(ctx, Tensor::zeros(ctx, {"out", "c", "kh", "kw"}, {3, 64, 3, 3}, fucina::DType::i32)),
                       DTypeMismatch);
  for (const PreparedConv2d& q : {fucina::prepareConv2dWeights(ctx, w), fucina::prepareConv2dWeights(ctx, w, {.stride_h = 2})}) {
    INFO("winograd " << q.winograd());
    REQUIRE_FUCINA_ERROR(Tensor::zeros(ctx, {"c", "h", "w"}, {3, 5, 5}).conv2dPrepared(ctx, q), ShapeMismatch);
    REQUIRE_FUCINA_ERROR(Tensor::zeros(ctx, {"c", "h"}, {64, 5}).conv2dPrepared(ctx, q), ShapeMismatch);
    REQUIRE_FUCINA_ERROR(Tensor::zeros(ctx, {"c", "h", "w"}, {64, 2, 5}).conv2dPrepared(ctx, q), ShapeMismatch);
    REQUIRE_FUCINA_ERROR(Tensor::zeros(ctx, {"c", "h", "w", "out"}, {64, 5, 5, 1}).conv2dPrepared(ctx, q), ShapeMismatch);
    REQUIRE_FUCINA_ERROR(Tensor::zeros(ctx, {"c", "h", "w"}, {64, 5, 5}, fucina::DType::i32).conv2dPrepared(ctx, q),
                         DTypeMismatch);
  }
}

TEST_CASE("nn::PreparedCnn: the Cnn's logits on its prepared convolutions, as constants") {
  ExecContext ctx;
  const fucina::nn::Cnn model(ctx, {.image = 12, .channels = 1, .conv1 = 64, .conv2 = 6, .hidden = 8, .classes = 3}, 5);
  const Tensor images = Tensor::uniform(ctx, {"batch", "h", "w"}, {3, 12, 12}, 0, 1, 9);
  // conv1 = 64 channels: the second convolution runs Winograd. With gradients on: it prepares under noGrad itself.
  const fucina::nn::PreparedCnn prepared(ctx, model);
  const Tensor logits = prepared(ctx, images);
  CHECK_FALSE(logits.requiresGrad());
  const Tensor want = model(ctx, images);
  CHECK(logits.tags() == want.tags());
  requireClose(logits.toVector(), want.toVector(), 1e-4f);
  // A snapshot: training the model further (every parameter, biases included, updated in place)
  // leaves the prepared logits as they were, to the bit.
  fucina::optim::Sgd opt(model.parameters(), {.lr = 0.5});
  model(ctx, images).sumAll(ctx).backward(ctx);
  opt.step(ctx);
  CHECK(model(ctx, images).toVector() != want.toVector());
  CHECK(prepared(ctx, images).toVector() == logits.toVector());
}
