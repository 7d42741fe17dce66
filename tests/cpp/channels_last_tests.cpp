// Channels last (Note [Channels last]): conv2d and the pools on inputs that name their channels
// after both spatial axes compute in that layout, with no copy, and agree with the same inputs
// channels first: values, every gradient, 1 and 2 threads bit-identical, empty and odd shapes.
#include <cmath>
#include <limits>
#include <string>

#include "test_helpers.h"

using fucina::Conv2dOptions;
using fucina::ExecContext;
using fucina::Tags;
using fucina::Tensor;

namespace {

void requireClose(const std::vector<float>& got, const std::vector<float>& want, float tol = 1e-4f) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i);
    REQUIRE(got[i] == Approx(want[i]).margin(tol));
  }
}

// t's values in the axis order `tags`.
std::vector<float> in(ExecContext& ctx, const Tensor& t, const Tags& tags) { return t.permuteTo(ctx, tags).toVector(); }

const Tags kFirst{"n", "c", "h", "w"}, kLast{"n", "h", "w", "c"};
const Tags kOutFirst{"n", "out", "h", "w"};

struct ConvRun {
  std::vector<float> y, gx, gw, gb;
};

// conv2d(x in `order`, w in `w_order`, b) with o, and its gradients for sum(y · r): everything
// read back in channels-first order.
ConvRun runConv(ExecContext& ctx, const Tensor& x0, const Tensor& w0, const Tensor& b0, const Conv2dOptions& o,
                const Tags& order, const Tags& w_order) {
  Tensor x = Tensor::variable(ctx, x0.permuteTo(ctx, order).contiguous(ctx));
  Tensor w = Tensor::variable(ctx, w0.permuteTo(ctx, w_order).contiguous(ctx));
  Tensor b = Tensor::variable(ctx, b0);
  Tensor y = x.conv2d(ctx, w, b, o);
  const Tensor r = Tensor::normal(ctx, kOutFirst, y.permuteTo(ctx, kOutFirst).shape(), 0, 1, 9);  // the same in both
  y.mul(ctx, r.permuteTo(ctx, y.tags())).sumAll(ctx).backward(ctx);
  return {in(ctx, y, kOutFirst), in(ctx, *x.grad(ctx), kFirst), in(ctx, *w.grad(ctx), {"out", "c", "kh", "kw"}),
          b.grad(ctx)->toVector()};
}

}  // namespace

TEST_CASE("conv2d channels last: the layout of the input, no copy, and channels first's values and gradients") {
  ExecContext ctx(fucina::ExecOptions{.threads = 1});
  struct Case {
    std::string name;
    fucina::Extents x, w;  // {n, c, h, w}, {out, c / groups, kh, kw}
    Conv2dOptions o;
  };
  const std::vector<Case> cases = {
      {"plain 3x3", {3, 4, 7, 6}, {5, 4, 3, 3}, {}},
      {"one channel (W2's first)", {2, 1, 9, 8}, {6, 1, 3, 3}, {}},
      {"padded strided dilated grouped",
       {2, 6, 9, 7}, {4, 3, 3, 2}, {.stride_h = 2, .stride_w = 1, .pad_h = 2, .pad_w = 1, .dilation_h = 2, .dilation_w = 1,
                                    .groups = 2}},
      {"one image one pixel", {1, 3, 1, 1}, {2, 3, 1, 1}, {}},
      {"kernel bigger than the image, padded", {1, 2, 2, 3}, {3, 2, 3, 4}, {.pad_h = 1, .pad_w = 1}},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    const Tensor x = Tensor::normal(ctx, kFirst, c.x, 0, 1, 1);
    const Tensor w = Tensor::normal(ctx, {"out", "c", "kh", "kw"}, c.w, 0, 1, 2);
    const Tensor b = Tensor::normal(ctx, {"out"}, {c.w[0]}, 0, 1, 3);
    const ConvRun first = runConv(ctx, x, w, b, c.o, kFirst, {"out", "c", "kh", "kw"});
    const ConvRun last = runConv(ctx, x, w, b, c.o, kLast, {"out", "kh", "kw", "c"});
    requireClose(last.y, first.y);
    requireClose(last.gx, first.gx);
    requireClose(last.gw, first.gw);
    requireClose(last.gb, first.gb);
    // The result is computed in the input's layout: [n, h, w, out], contiguous, not a view.
    const Tensor y = x.permuteTo(ctx, kLast).contiguous(ctx).conv2d(ctx, w, c.o);
    CHECK(y.tags() == Tags{"n", "h", "w", "out"});
    CHECK(y.value().isContiguous());
  }
}

TEST_CASE("conv2d channels last: a weight in either order, a non-contiguous input, gradcheck") {
  ExecContext ctx(fucina::ExecOptions{.threads = 1});
  // x as [h, n, w, c] (a permuted view: the batch axis between the spatial ones).
  Tensor x = Tensor::variable(ctx, Tensor::normal(ctx, {"h", "n", "w", "c"}, {5, 2, 4, 3}, 0, 1, 4));
  Tensor w = Tensor::variable(ctx, Tensor::normal(ctx, {"out", "c", "kh", "kw"}, {2, 3, 2, 3}, 0, 1, 5));
  Tensor b = Tensor::variable(ctx, Tensor::normal(ctx, {"out"}, {2}, 0, 1, 6));
  const Conv2dOptions o{.pad_w = 1};
  const Tensor r = Tensor::normal(ctx, {"h", "n", "w", "out"}, {4, 2, 4, 2}, 0, 1, 7);
  fucina::gradcheck(ctx, [&](ExecContext& c) { return x.conv2d(c, w, b, o).mul(c, r).sumAll(c); }, {&x, &w, &b},
                    {.eps = 1e-3, .abs_tol = 2e-3, .rel_tol = 2e-2});
  const Tensor want = x.permuteTo(ctx, kFirst).contiguous(ctx).conv2d(ctx, w, b, o);
  requireClose(in(ctx, x.conv2d(ctx, w, b, o), kOutFirst), in(ctx, want, kOutFirst));
  requireClose(in(ctx, x.conv2d(ctx, w.permuteTo(ctx, {"kw", "c", "out", "kh"}), b, o), kOutFirst), in(ctx, want, kOutFirst));
  // conv2dRelu fused (no gradient) channels last: relu(conv2d) exactly.
  fucina::NoGradScope off = fucina::noGrad();
  const Tensor xl = x.permuteTo(ctx, kLast).contiguous(ctx);
  CHECK(xl.conv2dRelu(ctx, w, b, o).toVector() == xl.conv2d(ctx, w, b, o).relu(ctx).toVector());
}

TEST_CASE("conv2d channels last: bit-identical on 1 and 2 threads, empty batches and channels") {
  std::vector<std::vector<float>> runs;
  for (int threads : {1, 2}) {
    ExecContext ctx(fucina::ExecOptions{.threads = threads});
    const Tensor x = Tensor::normal(ctx, kFirst, {11, 5, 9, 8}, 0, 1, 1);
    const Tensor w = Tensor::normal(ctx, {"out", "c", "kh", "kw"}, {7, 5, 3, 3}, 0, 1, 2);
    const Tensor b = Tensor::normal(ctx, {"out"}, {7}, 0, 1, 3);
    const ConvRun r = runConv(ctx, x, w, b, {.pad_h = 1}, kLast, {"out", "kh", "kw", "c"});
    std::vector<float> all = r.y;
    for (const auto* v : {&r.gx, &r.gw, &r.gb}) all.insert(all.end(), v->begin(), v->end());
    runs.push_back(all);
  }
  CHECK(runs[0] == runs[1]);

  ExecContext ctx(fucina::ExecOptions{.threads = 2});
  for (const fucina::Extents& shape : {fucina::Extents{0, 4, 5, 3}, fucina::Extents{2, 4, 5, 0}}) {
    Tensor x = Tensor::variable(ctx, Tensor::zeros(ctx, kLast, shape));
    Tensor w = Tensor::variable(ctx, Tensor::ones(ctx, {"out", "kh", "kw", "c"}, {3, 2, 2, shape[3]}));
    Tensor y = x.conv2d(ctx, w);
    CHECK(y.shape() == fucina::Extents{shape[0], 3, 4, 3});
    y.sumAll(ctx).backward(ctx);
    CHECK(x.grad(ctx)->shape() == x.shape());
    for (float v : w.grad(ctx)->toVector()) CHECK(v == 0.0f);
  }
}

TEST_CASE("maxPool2d and avgPool2d channels last: the planar values, first maxima, NaN and gradients") {
  for (int threads : {1, 2}) {
    ExecContext ctx(fucina::ExecOptions{.threads = threads});
    std::vector<float> values = Tensor::normal(ctx, kFirst, {3, 5, 7, 6}, 0, 1, 11).toVector();
    values[17] = std::numeric_limits<float>::quiet_NaN();
    values[40] = values[41];  // a tie: the first maximum takes the gradient
    const Tensor x = Tensor::fromSlice(ctx, kFirst, {3, 5, 7, 6}, values);
    for (int64_t pad : {0, 1}) {
      for (bool max : {true, false}) {
        INFO("pad " << pad << (max ? " max" : " avg") << ", threads " << threads);
        auto pool = [&](const Tags& order) {
          Tensor v = Tensor::variable(ctx, x.permuteTo(ctx, order).contiguous(ctx));
          Tensor y = max ? v.maxPool2d(ctx, 3, 2, 2, 1, pad) : v.avgPool2d(ctx, 3, 2, 2, 1, pad);
          const Tensor r = Tensor::normal(ctx, kFirst, {3, 5, y.extent("h"), y.extent("w")}, 0, 1, 12);
          y.mul(ctx, r).sumAll(ctx).backward(ctx);
          return std::pair{in(ctx, y, kFirst), in(ctx, *v.grad(ctx), kFirst)};
        };
        const auto [y_first, g_first] = pool(kFirst);
        const auto [y_last, g_last] = pool(kLast);
        REQUIRE(y_last.size() == y_first.size());
        for (size_t i = 0; i < y_first.size(); ++i) {
          INFO("element " << i);
          if (std::isnan(y_first[i])) CHECK(std::isnan(y_last[i]));
          else CHECK(y_last[i] == Approx(y_first[i]).margin(1e-6));
        }
        requireClose(g_last, g_first, 1e-5f);
      }
    }
    // Channels last stays channels last: [n, h, w, c] in, [n, h, w, c] out, contiguous.
    const Tensor y = x.permuteTo(ctx, kLast).contiguous(ctx).maxPool2d(ctx, 2, 2, 2, 2);
    CHECK(y.tags() == kLast);
    CHECK(y.value().isContiguous());
  }
}

TEST_CASE("conv2d channels last on XNNPACK's sizes: channels first's values and gradients, 1 and 2 threads alike") {
  // Above kernels::kXnnpackMinWork multiply-adds, so a native build with XNNPACK runs its
  // operator for the forward (the GEMM path elsewhere); either way the same values.
  std::vector<std::vector<float>> runs;
  for (int threads : {1, 2}) {
    ExecContext ctx(fucina::ExecOptions{.threads = threads});
    const Tensor x = Tensor::normal(ctx, kFirst, {9, 16, 19, 18}, 0, 1, 21);
    const Tensor w = Tensor::normal(ctx, {"out", "c", "kh", "kw"}, {34, 8, 3, 3}, 0, 1, 22);
    const Tensor b = Tensor::normal(ctx, {"out"}, {34}, 0, 1, 23);
    const Conv2dOptions o{.pad_w = 1, .groups = 2};
    const ConvRun first = runConv(ctx, x, w, b, o, kFirst, {"out", "c", "kh", "kw"});
    const ConvRun last = runConv(ctx, x, w, b, o, kLast, {"out", "kh", "kw", "c"});
    requireClose(last.y, first.y, 1e-3f);
    requireClose(last.gx, first.gx, 1e-3f);
    requireClose(last.gw, first.gw, 1e-2f);
    // The fused inference path adds the bias and clamps after the sums, as conv2d + bias + relu.
    fucina::NoGradScope off = fucina::noGrad();
    const Tensor xl = x.permuteTo(ctx, kLast).contiguous(ctx);
    CHECK(xl.conv2dRelu(ctx, w, b, o).toVector() == xl.conv2d(ctx, w, b, o).relu(ctx).toVector());
    runs.push_back(last.y);
  }
  CHECK(runs[0] == runs[1]);
}
