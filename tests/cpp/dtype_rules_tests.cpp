// Note [Dtype rules] (ops/typed.h): 16-bit constants compute in f32 and come back in their common
// dtype, grad-requiring 16-bit operands are refused, f64 computes in double where an op has an
// f64 path, integers add/sub/mul/neg with wrap-around, compare gives u8 for any dtypes, and
// kernels::contractF64 matches a naive loop.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

#include <fucina/fucina.h>
#include "fucina/backend/cpu/contract_f64.h"
#include "test_helpers.h"

using fucina::CompareOp;
using fucina::DType;
using fucina::ExecContext;
using fucina::Extents;
using fucina::Tags;
using fucina::Tensor;
using fucina::internal::RawTensor;

namespace {

Tensor f64(ExecContext& ctx, Tags tags, Extents shape, const std::vector<double>& v) {
  RawTensor r = RawTensor::empty(ctx, std::move(tags), std::move(shape), DType::f64);
  REQUIRE(static_cast<size_t>(r.numel()) == v.size());
  for (size_t i = 0; i < v.size(); ++i) r.data<double>()[i] = v[i];
  return Tensor::fromRaw(ctx, r);
}

// Values in row-major order, read exactly (a contiguous copy in the wanted type).
std::vector<double> doubles(ExecContext& ctx, const Tensor& t) {
  const RawTensor c = t.value().to(ctx, DType::f64);
  return {c.data<double>(), c.data<double>() + c.numel()};
}
std::vector<int64_t> ints(ExecContext& ctx, const Tensor& t) {
  const RawTensor c = t.value().to(ctx, DType::i64);
  return {c.data<int64_t>(), c.data<int64_t>() + c.numel()};
}

Tensor f16(ExecContext& ctx, Tags tags, Extents shape, std::vector<float> v, DType d = DType::f16) {
  return Tensor::fromSlice(ctx, std::move(tags), std::move(shape), v).to(ctx, d);
}

// A variable cast to 16 bits: it requires gradients and is f16 (or bf16).
Tensor variable16(ExecContext& ctx, Tags tags, Extents shape, std::vector<float> v, DType d = DType::f16) {
  return Tensor::variableFromSlice(ctx, std::move(tags), std::move(shape), v).to(ctx, d);
}

}  // namespace

TEST_CASE("16-bit constants run every op family in f32 and keep their dtype", "[dtype]") {
  ExecContext ctx;
  for (DType d : {DType::f16, DType::bf16}) {
    INFO(fucina::name(d));
    const Tensor x = f16(ctx, {"r", "c"}, {2, 3}, {0.1f, -1.3f, 2.7f, 0.55f, -0.25f, 1.9f}, d);
    const Tensor y = f16(ctx, {"r", "c"}, {2, 3}, {1.5f, 0.3f, -0.7f, 2.2f, 0.9f, -1.1f}, d);
    const Tensor img = f16(ctx, {"c", "h", "w"}, {1, 3, 3}, test::wave(9, 1.0f, 0.3f, 0.7f), d);
    const Tensor ker = f16(ctx, {"out", "c", "kh", "kw"}, {2, 1, 2, 2}, test::wave(8, 0.5f, 0.1f, 1.3f), d);
    const Tensor labels = Tensor::fromInts(ctx, {"r"}, {2}, {2, 0});
    const Tensor index = Tensor::fromInts(ctx, {"r", "c"}, {2, 1}, {1, 2});
    const Tensor cond = Tensor::fromInts(ctx, {"c"}, {3}, {1, 0, 1}, DType::u8);
    // Each op on the 16-bit operands, and on their f32 copies (lists of operands in that order).
    using Op = std::function<Tensor(const std::vector<Tensor>&)>;
    const std::vector<std::pair<const char*, Op>> ops = {
        {"add", [&](const auto& t) { return t[0].add(ctx, t[1]); }},
        {"exp", [&](const auto& t) { return t[0].exp(ctx); }},
        {"sum", [&](const auto& t) { return t[0].sum(ctx, "c"); }},
        {"softmax", [&](const auto& t) { return t[0].softmax(ctx, "c"); }},
        {"layerNorm", [&](const auto& t) { return t[0].layerNorm(ctx, "c"); }},
        {"mseLoss", [&](const auto& t) { return t[0].mseLoss(ctx, t[1]); }},
        {"crossEntropy", [&](const auto& t) { return t[0].crossEntropy(ctx, labels, "c"); }},
        {"gather", [&](const auto& t) { return t[0].gather(ctx, "c", index); }},
        {"where", [&](const auto& t) { return Tensor::where(ctx, cond, t[0], t[1]); }},
        {"conv2d", [&](const auto& t) { return t[2].conv2d(ctx, t[3]); }},
        {"conv2d with bias", [&](const auto& t) { return t[2].conv2d(ctx, t[3], t[4]); }},
        {"layerNorm affine", [&](const auto& t) { return t[0].layerNorm(ctx, "c", t[5], t[6]); }},
    };
    const Tensor bias = f16(ctx, {"out"}, {2}, {0.3f, -0.6f}, d);
    const Tensor gamma = f16(ctx, {"c"}, {3}, {1.1f, 0.9f, -1.2f}, d);
    const Tensor beta = f16(ctx, {"c"}, {3}, {0.05f, 0.2f, -0.3f}, d);
    const std::vector<Tensor> half{x, y, img, ker, bias, gamma, beta};
    std::vector<Tensor> full;
    for (const Tensor& t : half) full.push_back(t.to(ctx, DType::f32));
    for (const auto& [name, op] : ops) {
      INFO(name);
      const Tensor got = op(half);
      CHECK(got.dtype() == d);
      CHECK(got.toVector() == op(full).to(ctx, d).toVector());  // the f32 result, rounded once
    }
  }
}

TEST_CASE("16-bit results follow the common dtype, an f32 variable still gets its gradient", "[dtype]") {
  ExecContext ctx;
  const Tensor h = f16(ctx, {"d"}, {3}, {1, 2, 3});
  const Tensor b = f16(ctx, {"d"}, {3}, {1, 2, 3}, DType::bf16);
  const Tensor f = Tensor::fromSlice(ctx, {"d"}, {3}, {0.5f, 0.25f, 2});
  CHECK(h.add(ctx, h).dtype() == DType::f16);
  CHECK(b.mul(ctx, b).dtype() == DType::bf16);
  CHECK(h.add(ctx, b).dtype() == DType::f32);
  CHECK(h.add(ctx, f).dtype() == DType::f32);
  CHECK(f.add(ctx, h).toVector() == std::vector<float>{1.5f, 2.25f, 5});
  Tensor x = Tensor::variableFromSlice(ctx, {"d"}, {3}, {1, -1, 2});
  Tensor loss = x.mul(ctx, h).sumAll(ctx);
  CHECK(loss.dtype() == DType::f32);
  loss.backward(ctx);
  CHECK(test::gradOf(ctx, x) == std::vector<float>{1, 2, 3});
}

TEST_CASE("grad-requiring 16-bit operands are UnsupportedGradient, and run under noGrad", "[dtype]") {
  ExecContext ctx;
  for (DType d : {DType::f16, DType::bf16}) {
    const Tensor v = variable16(ctx, {"r", "c"}, {2, 2}, {1, 2, 3, 4}, d);
    const Tensor c = Tensor::ones(ctx, {"r", "c"}, {2, 2});
    REQUIRE(v.requiresGrad());
    REQUIRE(v.dtype() == d);
    CHECK_FUCINA_ERROR(v.exp(ctx), UnsupportedGradient);
    CHECK_FUCINA_ERROR(c.add(ctx, v), UnsupportedGradient);
    CHECK_FUCINA_ERROR(v.sumAll(ctx), UnsupportedGradient);
    CHECK_FUCINA_ERROR(v.softmax(ctx, "c"), UnsupportedGradient);
    CHECK_FUCINA_ERROR(v.rmsNorm(ctx, "c"), UnsupportedGradient);
    CHECK_FUCINA_ERROR(c.mseLoss(ctx, v), UnsupportedGradient);
    auto scope = fucina::noGrad();
    CHECK(v.exp(ctx).dtype() == d);
    CHECK(c.add(ctx, v).dtype() == DType::f32);
    CHECK(v.sumAll(ctx).item() == 10);
  }
}

TEST_CASE("f64 pointwise and unary ops compute in double", "[dtype]") {
  ExecContext ctx;
  const std::vector<double> xs{1 + 1e-10, 2.5, -0.75 + 1e-12};
  const std::vector<double> ys{1e-10, 1 + 1e-9, 3};
  const Tensor x = f64(ctx, {"d"}, {3}, xs), y = f64(ctx, {"d"}, {3}, ys);
  auto each = [&](const std::function<double(double, double)>& f) {
    std::vector<double> r;
    for (size_t i = 0; i < xs.size(); ++i) r.push_back(f(xs[i], ys[i]));
    return r;
  };
  CHECK(doubles(ctx, x.add(ctx, y)) == each([](double a, double b) { return a + b; }));
  CHECK(doubles(ctx, x.sub(ctx, y)) == each([](double a, double b) { return a - b; }));
  CHECK(doubles(ctx, x.mul(ctx, y)) == each([](double a, double b) { return a * b; }));
  CHECK(doubles(ctx, x.div(ctx, y)) == each([](double a, double b) { return a / b; }));
  CHECK(doubles(ctx, x.maximum(ctx, y)) == each([](double a, double b) { return a >= b ? a : b; }));
  CHECK(doubles(ctx, x.minimum(ctx, y)) == each([](double a, double b) { return a <= b ? a : b; }));
  CHECK(doubles(ctx, x.abs(ctx).pow(ctx, y)) == each([](double a, double b) { return std::pow(std::fabs(a), b); }));
  CHECK(doubles(ctx, x.scale(ctx, 1e-3)) == each([](double a, double) { return a * 1e-3; }));
  CHECK(doubles(ctx, x.addScalar(ctx, 1e-11)) == each([](double a, double) { return a + 1e-11; }));
  CHECK(doubles(ctx, x.subScalar(ctx, 1)) == each([](double a, double) { return a - 1; }));
  CHECK(doubles(ctx, x.divScalar(ctx, 3)) == each([](double a, double) { return a / 3; }));
  CHECK(doubles(ctx, x.abs(ctx).powScalar(ctx, 0.3)) == each([](double a, double) { return std::pow(std::fabs(a), 0.3); }));
  CHECK(x.sub(ctx, f64(ctx, {}, {}, {1})).toVector()[0] == Approx(1e-10).epsilon(1e-6));  // 0 in f32
  const std::vector<std::pair<const char*, std::function<double(double)>>> refs = {
      {"neg", [](double a) { return -a; }},
      {"abs", [](double a) { return std::fabs(a); }},
      {"exp", [](double a) { return std::exp(a); }},
      {"tanh", [](double a) { return std::tanh(a); }},
      {"sigmoid", [](double a) { return 1 / (1 + std::exp(-a)); }},
      {"relu", [](double a) { return a > 0 ? a : 0; }},
      {"gelu", [](double a) { return 0.5 * a * (1 + std::tanh(0.7978845608028654 * (a + 0.044715 * a * a * a))); }},
      {"geluErf", [](double a) { return 0.5 * a * (1 + std::erf(a / std::sqrt(2.0))); }},
      {"silu", [](double a) { return a / (1 + std::exp(-a)); }},
      {"sin", [](double a) { return std::sin(a); }},
      {"cos", [](double a) { return std::cos(a); }},
      {"reciprocal", [](double a) { return 1 / a; }},
      {"clamp", [](double a) { return std::min(std::max(a, -0.5), 1 + 5e-11); }},
  };
  auto run = [&](const std::string& n) {
    if (n == "neg") return x.neg(ctx);
    if (n == "abs") return x.abs(ctx);
    if (n == "exp") return x.exp(ctx);
    if (n == "tanh") return x.tanh(ctx);
    if (n == "sigmoid") return x.sigmoid(ctx);
    if (n == "relu") return x.relu(ctx);
    if (n == "gelu") return x.gelu(ctx);
    if (n == "geluErf") return x.geluErf(ctx);
    if (n == "silu") return x.silu(ctx);
    if (n == "sin") return x.sin(ctx);
    if (n == "cos") return x.cos(ctx);
    if (n == "reciprocal") return x.reciprocal(ctx);
    return x.clamp(ctx, -0.5, 1 + 5e-11);
  };
  for (const auto& [name, ref] : refs) {
    INFO(name);
    const Tensor r = run(name);
    REQUIRE(r.dtype() == DType::f64);
    const std::vector<double> got = doubles(ctx, r);
    for (size_t i = 0; i < xs.size(); ++i) CHECK(got[i] == Approx(ref(xs[i])).epsilon(1e-14).margin(1e-300));
  }
  const Tensor p = f64(ctx, {"d"}, {2}, {1e-10, 4});
  CHECK(doubles(ctx, p.log(ctx))[0] == Approx(std::log(1e-10)).epsilon(1e-15));
  CHECK(doubles(ctx, p.log1p(ctx))[0] == Approx(std::log1p(1e-10)).epsilon(1e-15));
  CHECK(doubles(ctx, p.sqrt(ctx))[1] == 2);
  CHECK(doubles(ctx, p.rsqrt(ctx))[1] == 0.5);
}

TEST_CASE("f64 reductions compute in double", "[dtype]") {
  ExecContext ctx;
  // {r: 2, c: 3}; the rows sum to 1e-10 and 3e-10, which f32 loses next to 1.
  const std::vector<double> v{1, 1e-10, -1, 2, 3e-10, -2};
  const Tensor x = f64(ctx, {"r", "c"}, {2, 3}, v);
  CHECK(doubles(ctx, x.sumAll(ctx))[0] == Approx(4e-10).epsilon(1e-5));  // 0 in f32
  CHECK(doubles(ctx, x.meanAll(ctx))[0] == Approx(4e-10 / 6).epsilon(1e-5));
  const std::vector<double> s = doubles(ctx, x.sum(ctx, "c"));
  CHECK(s[0] == Approx(1e-10).epsilon(1e-6));
  CHECK(s[1] == Approx(3e-10).epsilon(1e-5));
  CHECK(doubles(ctx, x.mean(ctx, "r"))[1] == Approx(2e-10).epsilon(1e-6));
  CHECK(doubles(ctx, x.max(ctx, "c")) == std::vector<double>{1, 2});
  CHECK(doubles(ctx, x.min(ctx, "r")) == std::vector<double>{1, 1e-10, -2});
  const Tensor y = f64(ctx, {"r", "c"}, {2, 3}, {1, 1 + 1e-10, 1 + 2e-10, 5, 5, 5});
  CHECK(doubles(ctx, y.variance(ctx, "c", 1))[0] == Approx(1e-20).epsilon(1e-4));  // 0 in f32
  CHECK(doubles(ctx, y.variance(ctx, "c", 0))[1] == 0);
  CHECK(doubles(ctx, y.logsumexp(ctx, "c"))[1] == Approx(5 + std::log(3.0)).epsilon(1e-15));
  CHECK(doubles(ctx, y.prod(ctx, "c"))[0] == Approx((1 + 1e-10) * (1 + 2e-10)).epsilon(1e-15));
  CHECK(doubles(ctx, y.norm(ctx, "r"))[0] == Approx(std::sqrt(26.0)).epsilon(1e-15));
  const Tensor cs = x.cumsum(ctx, "c");
  CHECK(cs.tags() == Tags{"r", "c"});
  const std::vector<double> c = doubles(ctx, cs);
  CHECK(c[2] == Approx(1e-10).epsilon(1e-6));
  CHECK(c[4] == 2 + 3e-10);
  // Permuted input, cumsum along the leading axis: x's axis order is kept.
  const std::vector<double> cr = doubles(ctx, x.permuteTo(ctx, {"c", "r"}).cumsum(ctx, "r"));
  CHECK(cr == std::vector<double>{1, 3, 1e-10, 1e-10 + 3e-10, -1, -3});
  CHECK(x.sumAll(ctx).dtype() == DType::f64);
}

TEST_CASE("f64 mixed with f32 or f16 promotes to f64, f64 without an f64 path is DTypeMismatch", "[dtype]") {
  ExecContext ctx;
  const Tensor x = f64(ctx, {"d"}, {2}, {1 + 1e-10, 2});
  const Tensor f = Tensor::fromSlice(ctx, {"d"}, {2}, {0.1f, 3});
  const Tensor r = x.add(ctx, f);
  REQUIRE(r.dtype() == DType::f64);
  CHECK(doubles(ctx, r) == std::vector<double>{1 + 1e-10 + double(0.1f), 5});
  CHECK(f.mul(ctx, x).dtype() == DType::f64);
  CHECK(f16(ctx, {"d"}, {2}, {1, 2}).sub(ctx, x).dtype() == DType::f64);
  // The result is a constant, so an f32 variable cannot lose its gradient silently.
  const Tensor v = Tensor::variableFromSlice(ctx, {"d"}, {2}, {1, 2});
  CHECK_FUCINA_ERROR(v.add(ctx, x), UnsupportedGradient);
  {
    auto scope = fucina::noGrad();
    CHECK(v.add(ctx, x).dtype() == DType::f64);
  }
  CHECK_FUCINA_ERROR(x.softmax(ctx, "d"), DTypeMismatch);
  CHECK_FUCINA_ERROR(x.layerNorm(ctx, "d"), DTypeMismatch);
  CHECK_FUCINA_ERROR(x.add(ctx, Tensor::fromInts(ctx, {"d"}, {2}, {1, 2})), DTypeMismatch);
}

TEST_CASE("integer add, sub, mul and neg wrap as two's complement", "[dtype]") {
  ExecContext ctx;
  constexpr int64_t kMax32 = std::numeric_limits<int32_t>::max(), kMin32 = std::numeric_limits<int32_t>::min();
  constexpr int64_t kMax64 = std::numeric_limits<int64_t>::max(), kMin64 = std::numeric_limits<int64_t>::min();
  const Tensor a = Tensor::fromInts(ctx, {"d"}, {4}, {kMax32, kMin32, 65536, -7});
  const Tensor b = Tensor::fromInts(ctx, {"d"}, {4}, {1, 1, 65536, 3});
  CHECK(a.add(ctx, b).dtype() == DType::i32);
  CHECK(ints(ctx, a.add(ctx, b)) == std::vector<int64_t>{kMin32, kMin32 + 1, 131072, -4});
  CHECK(ints(ctx, a.sub(ctx, b)) == std::vector<int64_t>{kMax32 - 1, kMax32, 0, -10});
  CHECK(ints(ctx, a.mul(ctx, b)) == std::vector<int64_t>{kMax32, kMin32, 0, -21});
  CHECK(ints(ctx, a.neg(ctx)) == std::vector<int64_t>{-kMax32, kMin32, -65536, 7});
  const Tensor l = Tensor::fromInts(ctx, {"d"}, {3}, {kMax64, kMin64, 1LL << 53}, DType::i64);
  const Tensor one = Tensor::fromInts(ctx, {"d"}, {3}, {1, 1, 1}, DType::i64);
  CHECK(ints(ctx, l.add(ctx, one)) == std::vector<int64_t>{kMin64, kMin64 + 1, (1LL << 53) + 1});
  CHECK(ints(ctx, l.sub(ctx, one)) == std::vector<int64_t>{kMax64 - 1, kMax64, (1LL << 53) - 1});
  CHECK(ints(ctx, l.neg(ctx)) == std::vector<int64_t>{-kMax64, kMin64, -(1LL << 53)});
  CHECK(ints(ctx, l.mul(ctx, l)) == std::vector<int64_t>{1, 0, 0});
  const Tensor u = Tensor::fromInts(ctx, {"d"}, {3}, {250, 3, 16}, DType::u8);
  const Tensor w = Tensor::fromInts(ctx, {"d"}, {3}, {10, 5, 17}, DType::u8);
  CHECK(u.add(ctx, w).dtype() == DType::u8);
  CHECK(ints(ctx, u.add(ctx, w)) == std::vector<int64_t>{4, 8, 33});
  CHECK(ints(ctx, u.sub(ctx, w)) == std::vector<int64_t>{240, 254, 255});
  CHECK(ints(ctx, u.mul(ctx, w)) == std::vector<int64_t>{196, 15, 16});
  CHECK(ints(ctx, u.neg(ctx)) == std::vector<int64_t>{6, 253, 240});
  // Broadcast by tag as the float ops.
  const Tensor m = Tensor::fromInts(ctx, {"r", "d"}, {2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  const Tensor col = Tensor::fromInts(ctx, {"r"}, {2}, {10, 20});
  CHECK(ints(ctx, m.add(ctx, col)) == std::vector<int64_t>{11, 12, 13, 14, 25, 26, 27, 28});
  CHECK_FUCINA_ERROR(a.add(ctx, Tensor::fromInts(ctx, {"d"}, {3}, {1, 2, 3})), ShapeMismatch);
  CHECK_FUCINA_ERROR(a.narrow(ctx, "d", 0, 3).add(ctx, l), DTypeMismatch);  // i32 with i64
  CHECK_THROWS_WITH(a.mul(ctx, Tensor::ones(ctx, {"d"}, {4})), Catch::Contains("i32") && Catch::Contains("f32"));
  CHECK_FUCINA_ERROR(Tensor::ones(ctx, {"d"}, {4}).sub(ctx, a), DTypeMismatch);
  CHECK_FUCINA_ERROR(a.div(ctx, b), DTypeMismatch);
  CHECK_FUCINA_ERROR(a.exp(ctx), DTypeMismatch);
  CHECK_FUCINA_ERROR(a.sumAll(ctx), DTypeMismatch);
  CHECK_FUCINA_ERROR(a.scale(ctx, 2), DTypeMismatch);
}

TEST_CASE("compare: every relation, broadcasting, NaN, any dtypes, no gradient", "[dtype]") {
  ExecContext ctx;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor x = Tensor::fromSlice(ctx, {"d"}, {4}, {1, 2, 3, nan});
  const Tensor y = Tensor::fromSlice(ctx, {"d"}, {4}, {2, 2, 2, nan});
  const std::vector<std::pair<CompareOp, std::vector<int64_t>>> cases = {
      {CompareOp::eq, {0, 1, 0, 0}}, {CompareOp::ne, {1, 0, 1, 1}}, {CompareOp::lt, {1, 0, 0, 0}},
      {CompareOp::le, {1, 1, 0, 0}}, {CompareOp::gt, {0, 0, 1, 0}}, {CompareOp::ge, {0, 1, 1, 0}},
  };
  for (const auto& [op, want] : cases) {
    INFO(static_cast<int>(op));
    const Tensor r = x.compare(ctx, y, op);
    CHECK(r.dtype() == DType::u8);
    CHECK(ints(ctx, r) == want);
  }
  // Broadcast: {r: 2} against {d: 3} gives {r, d}.
  const Tensor rows = Tensor::fromSlice(ctx, {"r"}, {2}, {1.5f, 2.5f});
  const Tensor cols = Tensor::fromSlice(ctx, {"d"}, {3}, {1, 2, 3});
  const Tensor b = rows.compare(ctx, cols, CompareOp::gt);
  CHECK(b.tags() == Tags{"r", "d"});
  CHECK(ints(ctx, b) == std::vector<int64_t>{1, 0, 0, 1, 1, 0});
  // Mixed dtypes compare by value in double; i64 with i64 exactly, even beyond 2^53.
  const Tensor i = Tensor::fromInts(ctx, {"d"}, {3}, {1, 2, 3});
  CHECK(ints(ctx, i.compare(ctx, cols, CompareOp::eq)) == std::vector<int64_t>{1, 1, 1});
  CHECK(ints(ctx, f64(ctx, {"d"}, {3}, {1 + 1e-12, 2, 3}).compare(ctx, cols, CompareOp::gt)) ==
        std::vector<int64_t>{1, 0, 0});
  CHECK(ints(ctx, f16(ctx, {"d"}, {3}, {1, 2, 3}).compare(ctx, i, CompareOp::le)) == std::vector<int64_t>{1, 1, 1});
  const int64_t big = (1LL << 53) + 1;
  const Tensor l1 = Tensor::fromInts(ctx, {"d"}, {2}, {big, -big}, DType::i64);
  const Tensor l2 = Tensor::fromInts(ctx, {"d"}, {2}, {big - 1, -big}, DType::i64);
  CHECK(ints(ctx, l1.compare(ctx, l2, CompareOp::gt)) == std::vector<int64_t>{1, 0});
  CHECK(ints(ctx, l1.compare(ctx, l2, CompareOp::eq)) == std::vector<int64_t>{0, 1});
  const Tensor u = Tensor::fromInts(ctx, {"d"}, {2}, {255, 0}, DType::u8);
  CHECK(ints(ctx, u.compare(ctx, l2, CompareOp::lt)) == std::vector<int64_t>{1, 0});
  // No gradient: a constant even when an operand requires gradients.
  const Tensor v = Tensor::variableFromSlice(ctx, {"d"}, {3}, {1, 5, 3});
  const Tensor c = v.compare(ctx, cols, CompareOp::ge);
  CHECK_FALSE(c.requiresGrad());
  CHECK(ints(ctx, c) == std::vector<int64_t>{1, 1, 1});
  CHECK_FUCINA_ERROR(x.compare(ctx, Tensor::ones(ctx, {"d"}, {3}), CompareOp::eq), ShapeMismatch);
  const Tensor e = Tensor::ones(ctx, {"d"}, {0}).compare(ctx, Tensor::ones(ctx, {"d"}, {0}), CompareOp::eq);
  CHECK(e.numel() == 0);
  CHECK(e.dtype() == DType::u8);
}

namespace {

// out[i, j] = Σ_p a(i, p) b(p, j), indexed through the tensors' own tags and strides.
void checkContractF64(ExecContext& ctx, const RawTensor& a, const RawTensor& b, const Tags& contracted) {
  const RawTensor out = fucina::kernels::contractF64(ctx, a, b, contracted);
  REQUIRE(out.dtype() == DType::f64);
  REQUIRE(out.isContiguous());
  // Expected result axes: a's non-contracted axes in a's order, then b's new ones.
  Tags want;
  for (auto t : a.tags())
    if (!fucina::hasTag(contracted, t)) want.push_back(t);
  for (auto t : b.tags())
    if (!fucina::hasTag(contracted, t) && !fucina::hasTag(a.tags(), t)) want.push_back(t);
  REQUIRE(out.tags() == want);
  const RawTensor a64 = a.to(ctx, DType::f64), b64 = b.to(ctx, DType::f64);  // contiguous, same axes
  auto at = [](const RawTensor& t, const Tags& tags, const std::vector<int64_t>& idx) {
    int64_t off = 0;
    for (size_t k = 0; k < t.rank(); ++k) {
      const auto pos = fucina::findTag(tags, t.tags()[k]);
      off += idx[*pos] * t.strides()[k];
    }
    return t.data<double>()[off];
  };
  // Every index over result axes then contracted axes.
  Tags all = want;
  Extents ext = out.shape();
  for (auto t : contracted) {
    all.push_back(t);
    ext.push_back(a.extent(t));
  }
  std::vector<double> expect(static_cast<size_t>(out.numel()), 0.0);
  const int64_t total = fucina::numelOf(ext);
  std::vector<int64_t> idx(all.size(), 0);
  for (int64_t lin = 0; lin < total; ++lin) {
    int64_t rest = lin, o = 0, stride = 1;
    for (size_t k = all.size(); k-- > 0;) {
      idx[k] = rest % ext[k];
      rest /= ext[k];
    }
    for (size_t k = want.size(); k-- > 0;) {
      o += idx[k] * stride;
      stride *= ext[k];
    }
    expect[static_cast<size_t>(o)] += at(a64, all, idx) * at(b64, all, idx);
  }
  const double* got = out.data<double>();
  for (size_t i = 0; i < expect.size(); ++i) CHECK(got[i] == Approx(expect[i]).epsilon(1e-14).margin(1e-14));
}

RawTensor rawF64(ExecContext& ctx, Tags tags, Extents shape, double phase) {
  RawTensor r = RawTensor::empty(ctx, std::move(tags), std::move(shape), DType::f64);
  for (int64_t i = 0; i < r.numel(); ++i) r.data<double>()[i] = std::sin(0.37 * double(i) + phase) + 1e-9 * double(i);
  return r;
}

}  // namespace

TEST_CASE("contractF64 matches a naive double loop", "[dtype]") {
  ExecContext ctx;
  SECTION("odd sizes, batch axis, result order") {
    const RawTensor a = rawF64(ctx, {"b", "i", "k"}, {3, 5, 7}, 0.1);
    const RawTensor b = rawF64(ctx, {"k", "j", "b"}, {7, 9, 3}, 0.7);
    checkContractF64(ctx, a, b, {"k"});
  }
  SECTION("two contracted axes, free axes on both sides") {
    const RawTensor a = rawF64(ctx, {"p", "i", "q"}, {3, 2, 5}, 0.2);
    const RawTensor b = rawF64(ctx, {"q", "j", "p"}, {5, 3, 3}, 0.4);
    checkContractF64(ctx, a, b, {"p", "q"});
  }
  SECTION("size 1 and full contraction to a scalar") {
    checkContractF64(ctx, rawF64(ctx, {"i", "k"}, {1, 1}, 0), rawF64(ctx, {"k", "j"}, {1, 1}, 1), {"k"});
    checkContractF64(ctx, rawF64(ctx, {"k"}, {11}, 0), rawF64(ctx, {"k"}, {11}, 1), {"k"});
  }
  SECTION("empty axes give zeros or empty results") {
    const RawTensor z = fucina::kernels::contractF64(ctx, rawF64(ctx, {"i", "k"}, {2, 0}, 0), rawF64(ctx, {"k", "j"}, {0, 3}, 0), {"k"});
    CHECK(z.shape() == Extents{2, 3});
    for (int64_t i = 0; i < z.numel(); ++i) CHECK(z.data<double>()[i] == 0);
    CHECK(fucina::kernels::contractF64(ctx, rawF64(ctx, {"i", "k"}, {0, 4}, 0), rawF64(ctx, {"k", "j"}, {4, 3}, 0), {"k"}).numel() == 0);
  }
  SECTION("permuted and narrowed (non-contiguous) operands, f32 input") {
    const RawTensor a = rawF64(ctx, {"k", "i"}, {6, 4}, 0.3).permuted({"i", "k"});
    REQUIRE_FALSE(a.isContiguous());
    const RawTensor b = rawF64(ctx, {"j", "k"}, {5, 8}, 0.5).narrowed("k", 1, 6);
    checkContractF64(ctx, a, b, {"k"});
    checkContractF64(ctx, a.to(ctx, DType::f32), b, {"k"});
  }
  SECTION("precision: accumulates in double") {
    const RawTensor a = rawF64(ctx, {"k"}, {3}, 0), b = rawF64(ctx, {"k"}, {3}, 0);
    a.data<double>()[0] = 1, a.data<double>()[1] = 1e-10, a.data<double>()[2] = 1e-10;
    b.data<double>()[0] = 1, b.data<double>()[1] = 1, b.data<double>()[2] = 2;
    CHECK(fucina::kernels::contractF64(ctx, a, b, {"k"}).data<double>()[0] == Approx(1 + 3e-10).epsilon(1e-15));
  }
  SECTION("mismatched extents are ShapeMismatch") {
    CHECK_FUCINA_ERROR(fucina::kernels::contractF64(ctx, rawF64(ctx, {"k"}, {3}, 0), rawF64(ctx, {"k"}, {4}, 0), {"k"}), ShapeMismatch);
    CHECK_FUCINA_ERROR(fucina::kernels::contractF64(ctx, rawF64(ctx, {"b", "k"}, {2, 3}, 0), rawF64(ctx, {"b", "k"}, {3, 3}, 0), {"k"}), ShapeMismatch);
  }
}
