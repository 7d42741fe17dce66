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
  REQUIRE_FUCINA_ERROR(Tensor::ones(ctx, {"c"}, {3}, DType::f16).softmax(ctx, "c"), DTypeMismatch);
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
