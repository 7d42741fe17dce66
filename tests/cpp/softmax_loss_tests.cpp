// Softmax, logSoftmax and the losses: values against naive references, gradcheck on several
// axes and layouts, the fused cross-entropy gradient, and bad inputs.
#include "test_helpers.h"

#include <cmath>

using fucina::DType;
using fucina::ExecContext;
using fucina::Reduction;
using fucina::Tensor;
using test::vec;
using test::wave;

namespace {

// Naive log-softmax over the last axis of a row-major [rows, n] array.
std::vector<double> naiveLogSoftmax(const std::vector<float>& x, size_t n) {
  std::vector<double> out(x.size());
  for (size_t r = 0; r < x.size() / n; ++r) {
    double m = -1e300, s = 0;
    for (size_t i = 0; i < n; ++i) m = std::max(m, double(x[r * n + i]));
    for (size_t i = 0; i < n; ++i) s += std::exp(double(x[r * n + i]) - m);
    for (size_t i = 0; i < n; ++i) out[r * n + i] = double(x[r * n + i]) - m - std::log(s);
  }
  return out;
}

}  // namespace

TEST_CASE("softmax and logSoftmax match a naive reference along any axis") {
  ExecContext ctx(fucina::ExecOptions{.threads = 1});
  const auto xv = wave(24, 3, 0.1f, 0.7f);
  Tensor x = Tensor::fromSlice(ctx, {"a", "b", "c"}, {2, 3, 4}, xv);
  // Along the last axis: rows of 4.
  const auto want = naiveLogSoftmax(xv, 4);
  const auto lsm = x.logSoftmax(ctx, "c").toVector();
  const auto sm = x.softmax(ctx, "c").toVector();
  for (size_t i = 0; i < want.size(); ++i) {
    CHECK(lsm[i] == Approx(want[i]).margin(1e-6));
    CHECK(sm[i] == Approx(std::exp(want[i])).margin(1e-6));
  }
  // Along the middle axis: the same as permuting it last first.
  Tensor viaPermute = x.permuteTo(ctx, {"a", "c", "b"}).contiguous(ctx).softmax(ctx, "b");
  Tensor direct = x.softmax(ctx, "b");
  CHECK(direct.tags() == fucina::Tags{"a", "b", "c"});
  CHECK(direct.permuteTo(ctx, {"a", "c", "b"}).toVector() == viaPermute.toVector());
  // Each softmax row sums to one.
  const auto s = direct.sum(ctx, "b").toVector();
  for (float v : s) CHECK(v == Approx(1).margin(1e-6));
}

TEST_CASE("softmax is stable for large logits and handles size-1 and -inf") {
  ExecContext ctx;
  Tensor x = Tensor::fromSlice(ctx, {"c"}, {3}, {1000, 1001, -INFINITY});
  const auto y = x.softmax(ctx, "c").toVector();
  CHECK(y[0] == Approx(1 / (1 + std::exp(1.0))));
  CHECK(y[2] == 0);
  CHECK(Tensor::fromSlice(ctx, {"c"}, {1}, {5}).softmax(ctx, "c").item() == 1);
  CHECK(Tensor::fromSlice(ctx, {"c"}, {1}, {5}).logSoftmax(ctx, "c").item() == 0);
}

TEST_CASE("softmax and logSoftmax pass gradcheck on every axis and through views") {
  ExecContext ctx(fucina::ExecOptions{.threads = 1});
  Tensor x = Tensor::variableFromSlice(ctx, {"a", "b", "c"}, {2, 3, 4}, wave(24, 1.5f, 0.3f, 0.7f));
  Tensor w = Tensor::fromSlice(ctx, {"a", "b", "c"}, {2, 3, 4}, wave(24, 1, 1.1f, 0.7f));
  for (const char* axis : {"a", "b", "c"}) {
    INFO(axis);
    fucina::gradcheck(ctx, [&](ExecContext& c) { return x.softmax(c, axis).mul(c, w).sumAll(c); }, {&x});
    fucina::gradcheck(ctx, [&](ExecContext& c) { return x.logSoftmax(c, axis).mul(c, w).sumAll(c); }, {&x});
  }
  fucina::gradcheck(ctx, [&](ExecContext& c) {
    return x.permuteTo(c, {"c", "a", "b"}).narrow(c, "c", 1, 3).softmax(c, "c").mul(c, w.narrow(c, "c", 1, 3)).sumAll(c);
  }, {&x});
}

TEST_CASE("softmax: bad inputs") {
  ExecContext ctx;
  Tensor x = Tensor::ones(ctx, {"r", "c"}, {2, 3});
  REQUIRE_FUCINA_ERROR(x.softmax(ctx, "class"), ShapeMismatch);
  REQUIRE_FUCINA_ERROR(x.logSoftmax(ctx, "class"), ShapeMismatch);
  REQUIRE_FUCINA_ERROR(Tensor::ones(ctx, {"c"}, {3}, DType::i32).softmax(ctx, "c"), DTypeMismatch);
}

TEST_CASE("crossEntropy matches the naive formula for every reduction and label smoothing") {
  ExecContext ctx(fucina::ExecOptions{.threads = 1});
  const auto xv = wave(12, 2, 0.2f, 0.7f);
  Tensor logits = Tensor::fromSlice(ctx, {"batch", "class"}, {3, 4}, xv);
  Tensor labels = Tensor::fromInts(ctx, {"batch"}, {3}, {2, 0, 3}, DType::i32);
  const auto lsm = naiveLogSoftmax(xv, 4);
  const int lab[] = {2, 0, 3};
  for (double eps : {0.0, 0.1}) {
    INFO("label smoothing " << eps);
    std::vector<double> rows;
    for (int r = 0; r < 3; ++r) {
      double mean = 0;
      for (int k = 0; k < 4; ++k) mean += lsm[r * 4 + k] / 4;
      rows.push_back(-((1 - eps) * lsm[r * 4 + lab[r]] + eps * mean));
    }
    const double total = rows[0] + rows[1] + rows[2];
    CHECK(logits.crossEntropy(ctx, labels, "class", {.label_smoothing = eps}).item() == Approx(total / 3));
    CHECK(logits.crossEntropy(ctx, labels, "class", {.reduction = Reduction::sum, .label_smoothing = eps}).item() == Approx(total));
    Tensor none = logits.crossEntropy(ctx, labels, "class", {.reduction = Reduction::none, .label_smoothing = eps});
    CHECK(none.tags() == fucina::Tags{"batch"});
    for (int r = 0; r < 3; ++r) CHECK(none.toVector()[size_t(r)] == Approx(rows[size_t(r)]));
  }
  // Class axis first, labels given as i64: same result.
  Tensor transposed = logits.permuteTo(ctx, {"class", "batch"});
  Tensor labels64 = Tensor::fromInts(ctx, {"batch"}, {3}, {2, 0, 3}, DType::i64);
  CHECK(transposed.crossEntropy(ctx, labels64, "class").item() == logits.crossEntropy(ctx, labels, "class").item());
}

TEST_CASE("crossEntropy gradients: fused softmax - target, checked by gradcheck") {
  ExecContext ctx(fucina::ExecOptions{.threads = 1});
  Tensor logits = Tensor::variableFromSlice(ctx, {"t", "batch", "class"}, {2, 3, 5}, wave(30, 1.2f, 0.4f, 0.7f));
  Tensor labels = Tensor::fromInts(ctx, {"batch", "t"}, {3, 2}, {4, 0, 1, 1, 3, 2}, DType::i32);
  Tensor w = Tensor::fromSlice(ctx, {"t", "batch"}, {2, 3}, {0.5f, 1, 1.5f, 2, -1, 0.25f});
  for (double eps : {0.0, 0.2}) {
    INFO("label smoothing " << eps);
    fucina::gradcheck(ctx, [&](ExecContext& c) { return logits.crossEntropy(c, labels, "class", {.label_smoothing = eps}); }, {&logits});
    fucina::gradcheck(ctx, [&](ExecContext& c) {
      return logits.crossEntropy(c, labels, "class", {.reduction = Reduction::sum, .label_smoothing = eps});
    }, {&logits});
    fucina::gradcheck(ctx, [&](ExecContext& c) {
      return logits.crossEntropy(c, labels, "class", {.reduction = Reduction::none, .label_smoothing = eps}).mul(c, w).sumAll(c);
    }, {&logits});
  }
  // The same values and gradients as nllLoss(logSoftmax(x)).
  logits.crossEntropy(ctx, labels, "class").backward(ctx);
  const auto fused = test::gradOf(ctx, logits);
  logits.zeroGrad();
  Tensor composed = logits.logSoftmax(ctx, "class").nllLoss(ctx, labels, "class");
  CHECK(composed.item() == Approx(logits.crossEntropy(ctx, labels, "class").item()));
  composed.backward(ctx);
  const auto viaNll = test::gradOf(ctx, logits);
  for (size_t i = 0; i < fused.size(); ++i) CHECK(fused[i] == Approx(viaNll[i]).margin(1e-6));
}

TEST_CASE("nllLoss and mseLoss: values and gradients") {
  ExecContext ctx(fucina::ExecOptions{.threads = 1});
  Tensor logp = Tensor::variableFromSlice(ctx, {"batch", "class"}, {2, 3}, {-1, -2, -3, -0.5f, -1.5f, -2.5f});
  Tensor labels = Tensor::fromInts(ctx, {"batch"}, {2}, {2, 1}, DType::i32);
  Tensor loss = logp.nllLoss(ctx, labels, "class");
  CHECK(loss.item() == Approx((3 + 1.5) / 2));
  loss.backward(ctx);
  CHECK(test::gradOf(ctx, logp) == std::vector<float>{0, 0, -0.5f, 0, -0.5f, 0});
  CHECK(logp.nllLoss(ctx, labels, "class", Reduction::sum).item() == Approx(4.5));

  Tensor p = Tensor::variableFromSlice(ctx, {"batch", "out"}, {2, 2}, {1, 2, 3, 4});
  Tensor t = Tensor::variableFromSlice(ctx, {"out", "batch"}, {2, 2}, {0, 1, 1, 1});  // aligned by tag
  Tensor mse = p.mseLoss(ctx, t);
  CHECK(mse.item() == Approx((1 + 1 + 4 + 9) / 4.0));
  CHECK(p.mseLoss(ctx, t, Reduction::sum).item() == Approx(15));
  CHECK(p.mseLoss(ctx, t, Reduction::none).toVector() == std::vector<float>{1, 1, 4, 9});
  mse.backward(ctx);
  CHECK(test::gradOf(ctx, p) == std::vector<float>{0.5f, 0.5f, 1, 1.5f});
  CHECK(test::gradOf(ctx, t) == std::vector<float>{-0.5f, -1, -0.5f, -1.5f});  // in t's {out, batch} order
}

TEST_CASE("fromInts makes integer tensors and checks ranges") {
  ExecContext ctx;
  CHECK(Tensor::fromInts(ctx, {"b"}, {3}, {1, -2, 7}).toVector() == std::vector<float>{1, -2, 7});
  CHECK(Tensor::fromInts(ctx, {"b"}, {1}, {5}, DType::i64).dtype() == DType::i64);
  REQUIRE_FUCINA_ERROR(Tensor::fromInts(ctx, {"b"}, {1}, {300}, DType::u8), InvalidArgument);
  REQUIRE_FUCINA_ERROR(Tensor::fromInts(ctx, {"b"}, {1}, {int64_t{1} << 40}), InvalidArgument);
  REQUIRE_FUCINA_ERROR(Tensor::fromInts(ctx, {"b"}, {2}, {1}), ShapeMismatch);
  REQUIRE_FUCINA_ERROR(Tensor::fromInts(ctx, {"b"}, {1}, {1}, DType::f32), DTypeMismatch);
}

TEST_CASE("losses: bad inputs") {
  ExecContext ctx;
  Tensor logits = Tensor::ones(ctx, {"batch", "class"}, {2, 3});
  auto ints = [&](fucina::Tags tags, fucina::Extents shape, std::vector<float> v, DType d = DType::i32) {
    return Tensor::fromRaw(ctx, fucina::internal::RawTensor::fromSlice(ctx, tags, shape, v, d));  // any dtype
  };
  REQUIRE_FUCINA_ERROR(logits.crossEntropy(ctx, ints({"batch"}, {2}, {0, 3}), "class"), IndexOutOfRange);
  REQUIRE_FUCINA_ERROR(logits.crossEntropy(ctx, ints({"batch"}, {2}, {0, -1}), "class"), IndexOutOfRange);
  REQUIRE_FUCINA_ERROR(logits.crossEntropy(ctx, ints({"batch"}, {2}, {0, 1}, DType::f32), "class"), DTypeMismatch);
  REQUIRE_FUCINA_ERROR(logits.crossEntropy(ctx, ints({"row"}, {2}, {0, 1}), "class"), ShapeMismatch);
  REQUIRE_FUCINA_ERROR(logits.crossEntropy(ctx, ints({"batch"}, {3}, {0, 1, 2}), "class"), ShapeMismatch);
  REQUIRE_FUCINA_ERROR(logits.crossEntropy(ctx, ints({"batch"}, {2}, {0, 1}), "label"), ShapeMismatch);
  REQUIRE_FUCINA_ERROR(logits.crossEntropy(ctx, ints({"batch"}, {2}, {0, 1}), "class", {.label_smoothing = 1}), InvalidArgument);
  REQUIRE_FUCINA_ERROR(Tensor::ones(ctx, {"batch", "class"}, {2, 0}).crossEntropy(ctx, ints({"batch"}, {2}, {0, 0}), "class"), InvalidArgument);
  REQUIRE_FUCINA_ERROR(Tensor::ones(ctx, {"batch", "class"}, {0, 2}).crossEntropy(ctx, ints({"batch"}, {0}, {}), "class"), InvalidArgument);
  REQUIRE_FUCINA_ERROR(logits.nllLoss(ctx, ints({"batch"}, {2}, {5, 0}), "class"), IndexOutOfRange);
  REQUIRE_FUCINA_ERROR(logits.mseLoss(ctx, Tensor::ones(ctx, {"batch"}, {3})), ShapeMismatch);
}

TEST_CASE("a softmax classifier trains with crossEntropy") {
  ExecContext ctx(fucina::ExecOptions{.threads = 1});
  // Three separable clusters in 2-D.
  std::vector<float> xs, ys;
  for (int i = 0; i < 30; ++i) {
    const int k = i % 3;
    xs.push_back(float(k == 0) * 2 - 1 + 0.1f * std::sin(float(i)));
    xs.push_back(float(k == 1) * 2 - 1 + 0.1f * std::cos(float(i)));
    ys.push_back(float(k));
  }
  Tensor x = Tensor::fromSlice(ctx, {"batch", "in"}, {30, 2}, xs);
  Tensor labels = Tensor::fromRaw(ctx, fucina::internal::RawTensor::fromSlice(ctx, {"batch"}, {30}, ys, DType::i32));
  CHECK(labels.dtype() == DType::i32);
  Tensor w = Tensor::variableFromSlice(ctx, {"class", "in"}, {3, 2}, {0.1f, -0.1f, 0.05f, 0.2f, -0.2f, 0});
  Tensor b = Tensor::variableFromSlice(ctx, {"class"}, {3}, {0, 0, 0});
  float first = 0, last = 0;
  for (int step = 0; step < 100; ++step) {
    fucina::ExecScope scope(ctx);
    Tensor loss = x.dot(ctx, w, "in").add(ctx, b).crossEntropy(ctx, labels, "class");
    loss.backward(ctx);
    last = loss.item();
    if (step == 0) first = last;
    auto ng = fucina::noGrad();
    w = scope.keep(Tensor::variable(ctx, w.detach(ctx).sub(ctx, w.grad(ctx)->scale(ctx, 0.5))));
    b = scope.keep(Tensor::variable(ctx, b.detach(ctx).sub(ctx, b.grad(ctx)->scale(ctx, 0.5))));
  }
  CHECK(last < first / 5);
}

// huberLoss, bceLoss, bceWithLogitsLoss, klDivLoss. Expected values come from the torch formulas
// evaluated in double precision by a scalar reference (python math), pasted as constants.
namespace {

// Every reduction of a pointwise loss as a scalar (none: weighted by fixed weights).
template <class Loss>
void gradcheckAllReductions(ExecContext& ctx, Tensor& x, Tensor& t, Loss loss) {
  for (Reduction r : {Reduction::mean, Reduction::sum, Reduction::none})
    fucina::gradcheck(ctx, [&](ExecContext& c) {
      Tensor l = loss(c, r);
      if (r != Reduction::none) return l;
      return l.mul(c, Tensor::fromSlice(c, l.tags(), l.shape(), wave(size_t(l.numel()), 1, 0.5f, 0.9f))).sumAll(c);
    }, {&x, &t});
}

void checkAll(const Tensor& y, const std::vector<double>& want) {
  const std::vector<float> got = y.toVector();
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) CHECK(got[i] == Approx(want[i]).epsilon(1e-5).margin(1e-6));
}

}  // namespace

TEST_CASE("huberLoss matches torch for every reduction and delta") {
  ExecContext ctx(fucina::ExecOptions{.threads = 1});
  Tensor x = Tensor::variableFromSlice(ctx, {"batch", "out"}, {2, 3}, {0.2f, -1.5f, 3.0f, 0.9f, -0.3f, 2.2f});
  Tensor t = Tensor::variableFromSlice(ctx, {"batch", "out"}, {2, 3}, {0.0f, 0.5f, 0.5f, 1.0f, -2.0f, 2.0f});
  checkAll(x.huberLoss(ctx, t, 1.0, Reduction::none), {0.02, 1.5, 2.0, 0.005, 1.2, 0.02});
  CHECK(x.huberLoss(ctx, t).item() == Approx(0.7908333333333334));
  CHECK(x.huberLoss(ctx, t, 1.0, Reduction::sum).item() == Approx(4.745));
  CHECK(x.huberLoss(ctx, t, 0.5, Reduction::sum).item() == Approx(2.77));
  CHECK(x.huberLoss(ctx, t, 0.5).item() == Approx(0.46166666666666667));
  x.huberLoss(ctx, t).backward(ctx);
  checkAll(Tensor::fromSlice(ctx, {"n"}, {6}, test::gradOf(ctx, x)),
           {0.0333333, -0.1666667, 0.1666667, -0.0166667, 0.1666667, 0.0333333});
  checkAll(Tensor::fromSlice(ctx, {"n"}, {6}, test::gradOf(ctx, t)),
           {-0.0333333, 0.1666667, -0.1666667, 0.0166667, -0.1666667, -0.0333333});
  // Axes aligned by tag: a permuted target gives the same loss.
  CHECK(x.huberLoss(ctx, t.permuteTo(ctx, {"out", "batch"}), 0.5).item() == Approx(0.46166666666666667));
  gradcheckAllReductions(ctx, x, t, [&](ExecContext& c, Reduction r) { return x.huberLoss(c, t, 0.7, r); });
  Tensor tp = Tensor::variableFromSlice(ctx, {"out", "batch"}, {3, 2}, wave(6, 2, 0.1f, 1.1f));
  gradcheckAllReductions(ctx, x, tp, [&](ExecContext& c, Reduction r) {
    return x.narrow(c, "out", 1, 2).huberLoss(c, tp.narrow(c, "out", 0, 2), 1.0, r);
  });
}

TEST_CASE("bceLoss clamps its logs at -100 as torch, and its gradient follows the clamp") {
  ExecContext ctx(fucina::ExecOptions{.threads = 1});
  Tensor x = Tensor::variableFromSlice(ctx, {"batch", "out"}, {2, 3}, {0.1f, 0.9f, 0.5f, 0.0f, 1.0f, 0.3f});
  Tensor t = Tensor::fromSlice(ctx, {"batch", "out"}, {2, 3}, {0, 1, 0.3f, 1, 0, 0.7f});
  checkAll(x.bceLoss(ctx, t, Reduction::none),
           {0.10536051565782628, 0.10536051565782628, 0.6931471805599453, 100.0, 100.0, 0.949783446209775});
  CHECK(x.bceLoss(ctx, t).item() == Approx(33.64227527634756));
  CHECK(x.bceLoss(ctx, t, Reduction::sum).item() == Approx(201.85365165808537));
  x.bceLoss(ctx, t, Reduction::sum).backward(ctx);
  // (x - t) / (x (1 - x)) in the interior; 0 where the live log term is clamped (x = 0, t = 1).
  checkAll(Tensor::fromSlice(ctx, {"n"}, {6}, test::gradOf(ctx, x)),
           {0.1 / 0.09, -0.1 / 0.09, 0.2 / 0.25, 0, 0, -0.4 / 0.21});
  Tensor xp = Tensor::variableFromSlice(ctx, {"out", "batch"}, {3, 2}, {0.2f, 0.7f, 0.45f, 0.05f, 0.9f, 0.6f});
  Tensor tp = Tensor::variableFromSlice(ctx, {"batch", "out"}, {2, 3}, {0.1f, 0.8f, 0.5f, 1, 0, 0.3f});
  gradcheckAllReductions(ctx, xp, tp, [&](ExecContext& c, Reduction r) { return xp.bceLoss(c, tp, r); });
}

TEST_CASE("bceWithLogitsLoss is stable and matches torch") {
  ExecContext ctx(fucina::ExecOptions{.threads = 1});
  Tensor x = Tensor::variableFromSlice(ctx, {"n"}, {6}, {-3, -0.5f, 0, 0.7f, 2.5f, 40});
  Tensor t = Tensor::variableFromSlice(ctx, {"n"}, {6}, {0, 1, 0.5f, 1, 0, 0.25f});
  checkAll(x.bceWithLogitsLoss(ctx, t, Reduction::none),
           {0.04858735157374206, 0.9740769841801067, 0.6931471805599453, 0.4031860488854579, 2.5788897342925496, 30.0});
  CHECK(x.bceWithLogitsLoss(ctx, t).item() == Approx(5.782981216581967));
  CHECK(x.bceWithLogitsLoss(ctx, t, Reduction::sum).item() == Approx(34.6978872994918));
  x.bceWithLogitsLoss(ctx, t, Reduction::sum).backward(ctx);
  auto sig = [](double v) { return 1 / (1 + std::exp(-v)); };
  checkAll(Tensor::fromSlice(ctx, {"n"}, {6}, test::gradOf(ctx, x)),
           {sig(-3), sig(-0.5) - 1, 0, sig(0.7) - 1, sig(2.5), 0.75});
  checkAll(Tensor::fromSlice(ctx, {"n"}, {6}, test::gradOf(ctx, t)), {3, 0.5, 0, -0.7, -2.5, -40});
  Tensor a = Tensor::variableFromSlice(ctx, {"b", "c", "k"}, {2, 1, 3}, wave(6, 3, 0.2f, 1.7f));
  Tensor b = Tensor::variableFromSlice(ctx, {"k", "b", "c"}, {3, 2, 1}, {0.1f, 0.9f, 0.5f, 0, 1, 0.3f});
  gradcheckAllReductions(ctx, a, b, [&](ExecContext& c, Reduction r) { return a.bceWithLogitsLoss(c, b, r); });
}

TEST_CASE("klDivLoss matches torch's kl_div, with and without log_target") {
  ExecContext ctx(fucina::ExecOptions{.threads = 1});
  Tensor x = Tensor::variableFromSlice(ctx, {"batch", "class"}, {2, 3}, {-1.2f, -0.3f, -2.0f, -0.7f, -0.1f, -3.0f});
  Tensor t = Tensor::variableFromSlice(ctx, {"batch", "class"}, {2, 3}, {0.2f, 0.5f, 0, 0.3f, 0.7f, 0});
  checkAll(x.klDivLoss(ctx, t, Reduction::none),
           {-0.08188758248682007, -0.19657359027997265, 0, -0.15119184129778085, -0.1796724607571127, 0});
  CHECK(x.klDivLoss(ctx, t).item() == Approx(-0.10155424580361438));
  CHECK(x.klDivLoss(ctx, t, Reduction::sum).item() == Approx(-0.6093254748216863));
  x.klDivLoss(ctx, t, Reduction::sum).backward(ctx);
  CHECK(test::gradOf(ctx, x) == std::vector<float>{-0.2f, -0.5f, 0, -0.3f, -0.7f, 0});
  checkAll(Tensor::fromSlice(ctx, {"n"}, {6}, test::gradOf(ctx, t)),
           {std::log(0.2) + 1 + 1.2, std::log(0.5) + 1 + 0.3, 2.0, std::log(0.3) + 1 + 0.7, std::log(0.7) + 1 + 0.1, 3.0});
  Tensor lt = Tensor::variableFromSlice(ctx, {"class", "batch"}, {3, 2}, {-1.6f, -1.2f, -0.7f, -0.36f, -2.3f, -5});
  checkAll(x.klDivLoss(ctx, lt, Reduction::none, true),
           {-0.08075860719786218, -0.1986341215165638, -0.030077653116841106, -0.15059710595610107,
            -0.18139584477846807, -0.013475893998170934});
  CHECK(x.klDivLoss(ctx, lt, Reduction::mean, true).item() == Approx(-0.10915653776066786));
  gradcheckAllReductions(ctx, x, lt, [&](ExecContext& c, Reduction r) { return x.klDivLoss(c, lt, r, true); });
  Tensor tp = Tensor::variableFromSlice(ctx, {"class", "batch"}, {3, 2}, {0.2f, 0.3f, 0.5f, 0.1f, 0.3f, 0.6f});
  gradcheckAllReductions(ctx, x, tp, [&](ExecContext& c, Reduction r) { return x.klDivLoss(c, tp, r); });
}

TEST_CASE("pointwise losses: bad inputs") {
  ExecContext ctx;
  Tensor x = Tensor::full(ctx, {"batch", "out"}, {2, 3}, 0.5);
  CHECK_THROWS_WITH(x.huberLoss(ctx, Tensor::ones(ctx, {"batch", "k"}, {2, 3})),
                    Catch::Contains("'out'") || Catch::Contains("out="));
  for (auto loss : {&Tensor::bceLoss, &Tensor::bceWithLogitsLoss}) {
    CHECK_FUCINA_ERROR((x.*loss)(ctx, Tensor::ones(ctx, {"batch"}, {2}), Reduction::mean), ShapeMismatch);
    CHECK_FUCINA_ERROR((x.*loss)(ctx, Tensor::ones(ctx, {"batch", "out"}, {2, 4}), Reduction::mean), ShapeMismatch);
    CHECK_FUCINA_ERROR((x.*loss)(ctx, Tensor::ones(ctx, {"batch", "out"}, {2, 3}, DType::i32), Reduction::sum), DTypeMismatch);
  }
  CHECK_FUCINA_ERROR(x.huberLoss(ctx, x, 0.0), InvalidArgument);
  CHECK_FUCINA_ERROR(x.huberLoss(ctx, Tensor::ones(ctx, {"batch", "out", "k"}, {2, 3, 1})), ShapeMismatch);
  CHECK_FUCINA_ERROR(x.klDivLoss(ctx, Tensor::ones(ctx, {"out", "batch"}, {2, 3})), ShapeMismatch);
  CHECK_FUCINA_ERROR(x.addScalar(ctx, 0.6).bceLoss(ctx, x), InvalidArgument);
  CHECK_FUCINA_ERROR(x.scale(ctx, -1).bceLoss(ctx, x), InvalidArgument);
  CHECK_FUCINA_ERROR(Tensor::ones(ctx, {"n"}, {0}).huberLoss(ctx, Tensor::ones(ctx, {"n"}, {0})), InvalidArgument);
  CHECK(Tensor::ones(ctx, {"n"}, {0}).huberLoss(ctx, Tensor::ones(ctx, {"n"}, {0}), 1, Reduction::sum).item() == 0);
}
