// Custom VJPs, the elemental convenience tier, and seeded dropout.
#include "test_helpers.h"

#include <cmath>
#include <thread>

using fucina::ExecContext;
using fucina::Tensor;
using fucina::internal::RawTensor;

namespace {

struct ScaledSquare {
  static constexpr size_t output_rank = 1;
  static RawTensor forward(ExecContext& ctx, const float& extra, std::span<const RawTensor* const> inputs) {
    RawTensor sq = fucina::raw::mul(ctx, *inputs[0], *inputs[0]);
    return fucina::raw::scale(ctx, sq, extra);  // y = extra * x^2
  }
  static void backward(ExecContext& ctx, const float& extra, std::span<const RawTensor* const> inputs,
                       const RawTensor& output, const RawTensor& gy, std::span<const bool> needs_grad,
                       std::span<std::optional<RawTensor>> out) {
    (void)output;
    if (needs_grad[0]) {
      RawTensor slope = fucina::raw::scale(ctx, *inputs[0], 2 * extra);  // dy/dx = 2*extra*x
      out[0] = fucina::raw::mul(ctx, gy, slope);  // engine consumes out[0]
    }
  }
};

Tensor squareLoss(ExecContext& ctx, const Tensor& x) {
  Tensor y = fucina::customVjp<ScaledSquare>(ctx, 0.5f, x);
  return y.sumAll(ctx);
}

// A spec whose backward is configurable from the test, counting its calls.
struct Probe {
  std::function<void(std::span<const bool>, std::span<std::optional<RawTensor>>, const RawTensor&,
                     std::span<const RawTensor* const>)>
      on_backward;
  int* backward_calls;
};

struct ProbeSpec {
  static RawTensor forward(ExecContext& ctx, const Probe&, std::span<const RawTensor* const> inputs) {
    return fucina::raw::add(ctx, *inputs[0], *inputs[1]);
  }
  static void backward(ExecContext&, const Probe& probe, std::span<const RawTensor* const> inputs,
                       const RawTensor&, const RawTensor& gy, std::span<const bool> needs,
                       std::span<std::optional<RawTensor>> out) {
    ++*probe.backward_calls;
    probe.on_backward(needs, out, gy, inputs);
  }
};

}  // namespace

// ---------------------------------------------------------------- customVjp

TEST_CASE("customVjp validated by gradcheck") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"d"}, {3}, {1, -2, 3});
  const auto result = fucina::gradcheck(ctx, [&](ExecContext& c) { return squareLoss(c, x); }, {&x});
  CHECK(result.checked == 3u);
  CHECK(result.max_abs_error < 1e-2);
}

TEST_CASE("customVjp computes its forward and hands backward the saved views") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"d"}, {3}, {1, -2, 3});
  Tensor y = fucina::customVjp<ScaledSquare>(ctx, 0.5f, x);
  CHECK(y.toVector() == std::vector<float>{0.5f, 2, 4.5f});
  y.sumAll(ctx).backward(ctx);
  CHECK(test::gradOf(ctx, x) == std::vector<float>{1, -2, 3});
}

struct WrongRank : ScaledSquare {
  static constexpr size_t output_rank = 2;
};

TEST_CASE("customVjp checks the forward result's rank") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"d"}, {3}, {1, -2, 3});
  REQUIRE_FUCINA_ERROR(fucina::customVjp<WrongRank>(ctx, 0.5f, x), ShapeMismatch);
}

TEST_CASE("customVjp honours noGrad and never calls backward without grad-requiring inputs") {
  ExecContext ctx;
  int calls = 0;
  Probe probe{[](auto, auto, auto&, auto) { FAIL("backward must not run"); }, &calls};
  Tensor a = Tensor::fromSlice(ctx, {"d"}, {2}, {1, 2});
  Tensor b = Tensor::fromSlice(ctx, {"d"}, {2}, {3, 4});
  Tensor c = fucina::customVjp<ProbeSpec>(ctx, probe, a, b);
  CHECK_FALSE(c.requiresGrad());
  CHECK(c.toVector() == std::vector<float>{4, 6});
  Tensor v = Tensor::variableFromSlice(ctx, {"d"}, {2}, {1, 2});
  {
    auto scope = fucina::noGrad();
    CHECK_FALSE(fucina::customVjp<ProbeSpec>(ctx, probe, v, b).requiresGrad());
  }
  CHECK(calls == 0);
}

TEST_CASE("customVjp: needs_grad is false for constants, errors for empty or misshapen gradients") {
  ExecContext ctx;
  int calls = 0;
  Tensor v = Tensor::variableFromSlice(ctx, {"d"}, {2}, {1, 2});
  Tensor c = Tensor::fromSlice(ctx, {"d"}, {2}, {3, 4});

  Probe good{[&](std::span<const bool> needs, std::span<std::optional<RawTensor>> out, const RawTensor& gy,
                 std::span<const RawTensor* const> inputs) {
               CHECK(needs[0]);
               CHECK_FALSE(needs[1]);
               CHECK(inputs[1]->toVector() == std::vector<float>{3, 4});
               out[0] = gy;
             },
             &calls};
  fucina::customVjp<ProbeSpec>(ctx, good, v, c).sumAll(ctx).backward(ctx);
  CHECK(calls == 1);
  CHECK(test::gradOf(ctx, v) == std::vector<float>{1, 1});

  Probe empty{[](auto, auto, auto&, auto) {}, &calls};
  REQUIRE_FUCINA_ERROR(fucina::customVjp<ProbeSpec>(ctx, empty, v, c).sumAll(ctx).backward(ctx),
                       MissingBackwardGradient);

  Probe misshapen{[&](auto, std::span<std::optional<RawTensor>> out, auto&, auto) {
                    out[0] = RawTensor::zeros(ctx, {"d"}, {3});
                  },
                  &calls};
  REQUIRE_FUCINA_ERROR(fucina::customVjp<ProbeSpec>(ctx, misshapen, v, c).sumAll(ctx).backward(ctx),
                       ShapeMismatch);
  Probe renamed{[&](auto, std::span<std::optional<RawTensor>> out, auto&, auto) {
                  out[0] = RawTensor::zeros(ctx, {"e"}, {2});
                },
                &calls};
  REQUIRE_FUCINA_ERROR(fucina::customVjp<ProbeSpec>(ctx, renamed, v, c).sumAll(ctx).backward(ctx),
                       ShapeMismatch);
}

TEST_CASE("customVjp holds inputs and output as views, not copies") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"d"}, {1000}, std::vector<float>(1000, 0.5f));
  const size_t before = ctx.memory().live_bytes;
  Tensor y = fucina::customVjp<ScaledSquare>(ctx, 0.5f, x);
  // The forward's scratch (x^2) is gone; only y's own buffer was added.
  CHECK(ctx.memory().live_bytes - before == 1000 * sizeof(float));
}

TEST_CASE("customVjp rejects non-f32 inputs") {
  ExecContext ctx;
  Tensor h = Tensor::ones(ctx, {"d"}, {2}, fucina::DType::f16);
  REQUIRE_FUCINA_ERROR(fucina::customVjp<ScaledSquare>(ctx, 0.5f, h), DTypeMismatch);
}

// ---------------------------------------------------------------- elemental tier

TEST_CASE("elementalUnary and elementalBinary make differentiable ops from scalar functions") {
  ExecContext ctx(fucina::ExecOptions{.threads = 1});
  Tensor x = Tensor::variableFromSlice(ctx, {"r", "c"}, {2, 3}, {0.1f, 0.5f, -0.7f, 1.2f, -1.5f, 0.3f});
  Tensor b = Tensor::variableFromSlice(ctx, {"c"}, {3}, {0.5f, -1, 2});
  auto softplus = [](ExecContext& c, const Tensor& t) {
    return fucina::elementalUnary(c, t, [](float v) { return std::log1p(std::exp(v)); },
                                  [](float v) { return 1 / (1 + std::exp(-v)); });
  };
  auto hypot = [](ExecContext& c, const Tensor& p, const Tensor& q) {
    return fucina::elementalBinary(
        c, p, q, [](float u, float v) { return std::sqrt(u * u + v * v); },
        [](float u, float v) { return u / std::sqrt(u * u + v * v); },
        [](float u, float v) { return v / std::sqrt(u * u + v * v); });
  };
  CHECK(softplus(ctx, x).toVector()[0] == Approx(std::log1p(std::exp(0.1f))));
  Tensor h = hypot(ctx, x, b);
  CHECK(h.tags() == fucina::Tags{"r", "c"});
  CHECK(h.toVector()[2] == Approx(std::sqrt(0.49f + 4)));
  fucina::gradcheck(ctx, [&](ExecContext& c) { return softplus(c, x).mul(c, hypot(c, x, b)).sumAll(c); }, {&x, &b});
  auto ng = fucina::noGrad();
  CHECK_FALSE(softplus(ctx, x).requiresGrad());
}

// ---------------------------------------------------------------- dropout

TEST_CASE("dropout: p = 0 is the identity and p = 1 drops everything") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"d"}, {4}, {1, -2, 3, -4});
  Tensor y = x.dropout(ctx, 0.0, 7);
  CHECK(y.toVector() == x.toVector());
  y.sumAll(ctx).backward(ctx);
  CHECK(test::gradOf(ctx, x) == std::vector<float>{1, 1, 1, 1});
  x.zeroGrad();
  Tensor z = x.dropout(ctx, 1.0, 7);
  CHECK(z.toVector() == std::vector<float>{0, 0, 0, 0});
  z.sumAll(ctx).backward(ctx);
  CHECK(test::gradOf(ctx, x) == std::vector<float>{0, 0, 0, 0});
}

TEST_CASE("dropout: p outside [0, 1] is InvalidArgument") {
  ExecContext ctx;
  Tensor x = Tensor::ones(ctx, {"d"}, {4});
  REQUIRE_FUCINA_ERROR(x.dropout(ctx, -0.1, 1), InvalidArgument);
  REQUIRE_FUCINA_ERROR(x.dropout(ctx, 1.5, 1), InvalidArgument);
  REQUIRE_FUCINA_ERROR(x.dropout(ctx, std::nan(""), 1), InvalidArgument);
  REQUIRE_FUCINA_ERROR(Tensor::ones(ctx, {"d"}, {4}, fucina::DType::i32).dropout(ctx, 0.5, 1), DTypeMismatch);
}

TEST_CASE("dropout: the mask is a pure function of seed and index") {
  const int64_t n = 200000;
  auto maskOf = [&](int threads, uint64_t seed) {
    ExecContext ctx(fucina::ExecOptions{.threads = threads});
    return Tensor::ones(ctx, {"d"}, {n}).dropout(ctx, 0.3, seed).toVector();
  };
  const auto m1 = maskOf(1, 99);
  CHECK(maskOf(2, 99) == m1);
  CHECK(maskOf(4, 99) == m1);
  CHECK(maskOf(1, 100) != m1);
  size_t dropped = 0;
  for (float v : m1) {
    if (v == 0) {
      ++dropped;
    } else {
      REQUIRE(v == Approx(1 / 0.7));
    }
  }
  // Binomial(200000, 0.3): standard deviation ~205; allow 5 sigma.
  CHECK(std::fabs(double(dropped) - 0.3 * n) < 5 * 205);
}

TEST_CASE("dropout: pinned mask values, shared by every build") {
  // The first 16 keep/drop decisions for seed 42, p = 0.5. The wasm build's test asserts the same
  // list, so native and wasm dropout can never drift apart.
  ExecContext ctx;
  const auto m = Tensor::ones(ctx, {"d"}, {16}).dropout(ctx, 0.5, 42).toVector();
  std::string pattern;
  for (float v : m) pattern += v == 0 ? '0' : '1';
  CHECK(pattern == "1100010001011100");
}

TEST_CASE("dropout: gradients use the same mask, also through views") {
  ExecContext ctx(fucina::ExecOptions{.threads = 1});
  Tensor x = Tensor::variableFromSlice(ctx, {"r", "c"}, {3, 5}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15});
  Tensor y = x.dropout(ctx, 0.4, 5);
  y.sumAll(ctx).backward(ctx);
  const auto g = test::gradOf(ctx, x);
  const auto v = y.toVector();
  for (size_t i = 0; i < v.size(); ++i) CHECK(v[i] == Approx(g[i] * float(i + 1)));
  // A permuted input is masked in the order of its own axes.
  Tensor p = x.permuteTo(ctx, {"c", "r"});
  CHECK(p.dropout(ctx, 0.4, 5).toVector() == p.contiguous(ctx).dropout(ctx, 0.4, 5).toVector());
  fucina::gradcheck(ctx, [&](ExecContext& c) { return x.permuteTo(c, {"c", "r"}).dropout(c, 0.4, 5).tanh(c).sumAll(c); }, {&x});
}
