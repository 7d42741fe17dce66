// The shared op-test harness: every differentiable op is registered once in a table and checked
// for forward values against a scalar reference, gradients by gradcheck, awkward layouts (size 1,
// empty, permuted and narrowed views, broadcast) and bad inputs. The last test prints the
// coverage matrix and fails when an op of the public list has no entry.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>

#include <fucina/fucina.h>
#include "fucina/io/json.h"

using fucina::DType;
using fucina::ErrorCode;
using fucina::ExecContext;
using fucina::Tensor;

namespace {

// ---------------------------------------------------------------- helpers

std::vector<float> values(size_t n, float lo, float hi, uint32_t seed, float avoid = 0.0f,
                          const std::vector<float>& kinks = {0.0f}) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  auto nearKink = [&](float x) {
    for (float k : kinks)
      if (std::fabs(x - k) < avoid) return true;
    return false;
  };
  for (float& x : v) {
    do x = d(rng);
    while (nearKink(x));  // keep away from kinks (relu, abs, clamp) so finite differences hold
  }
  return v;
}

template <class F>
ErrorCode codeOf(F&& f) {
  try {
    f();
  } catch (const fucina::Error& e) {
    return e.code();
  }
  FAIL("expected a fucina::Error");
  return ErrorCode::InvalidArgument;
}

struct Elementwise {
  std::string name;
  int arity;  // 1 or 2
  std::function<Tensor(ExecContext&, const Tensor&, const Tensor&)> apply;
  std::function<float(float, float)> reference;
  float lo, hi, avoid;        // domain of the first operand
  float lo2 = -2, hi2 = 2;    // domain of the second operand
  std::vector<float> kinks = {0.0f};  // points the first operand keeps `avoid` away from
  bool b_among_a = false;  // b is a parameter whose axes must be among a's (prelu, snake)
};

double geluTanhRef(double a) {
  return 0.5 * a * (1 + std::tanh(std::sqrt(2 / M_PI) * (a + 0.044715 * a * a * a)));
}
double sigmoidRef(double a) { return 1 / (1 + std::exp(-a)); }

const std::vector<Elementwise>& elementwiseOps() {
  using C = ExecContext;
  using T = const Tensor&;
  static const std::vector<Elementwise> ops = {
      {"add", 2, [](C& c, T a, T b) { return a.add(c, b); }, [](float a, float b) { return a + b; }, -2, 2, 0},
      {"sub", 2, [](C& c, T a, T b) { return a.sub(c, b); }, [](float a, float b) { return a - b; }, -2, 2, 0},
      {"mul", 2, [](C& c, T a, T b) { return a.mul(c, b); }, [](float a, float b) { return a * b; }, -2, 2, 0},
      {"div", 2, [](C& c, T a, T b) { return a.div(c, b); }, [](float a, float b) { return a / b; }, -2, 2, 0, 0.5f, 2},
      {"maximum", 2, [](C& c, T a, T b) { return a.maximum(c, b); }, [](float a, float b) { return std::max(a, b); }, -2, 2, 0},
      {"minimum", 2, [](C& c, T a, T b) { return a.minimum(c, b); }, [](float a, float b) { return std::min(a, b); }, -2, 2, 0},
      {"pow", 2, [](C& c, T a, T b) { return a.pow(c, b); }, [](float a, float b) { return std::pow(a, b); }, 0.5f, 2, 0},
      {"scale", 1, [](C& c, T a, T) { return a.scale(c, -1.5); }, [](float a, float) { return a * -1.5f; }, -2, 2, 0},
      {"addScalar", 1, [](C& c, T a, T) { return a.addScalar(c, 0.75); }, [](float a, float) { return a + 0.75f; }, -2, 2, 0},
      {"subScalar", 1, [](C& c, T a, T) { return a.subScalar(c, 0.75); }, [](float a, float) { return a - 0.75f; }, -2, 2, 0},
      {"divScalar", 1, [](C& c, T a, T) { return a.divScalar(c, 4); }, [](float a, float) { return a / 4; }, -2, 2, 0},
      {"powScalar", 1, [](C& c, T a, T) { return a.powScalar(c, 3); }, [](float a, float) { return a * a * a; }, -2, 2, 0},
      {"neg", 1, [](C& c, T a, T) { return a.neg(c); }, [](float a, float) { return -a; }, -2, 2, 0},
      {"abs", 1, [](C& c, T a, T) { return a.abs(c); }, [](float a, float) { return std::fabs(a); }, -2, 2, 0.05f},
      {"exp", 1, [](C& c, T a, T) { return a.exp(c); }, [](float a, float) { return std::exp(a); }, -2, 2, 0},
      {"log", 1, [](C& c, T a, T) { return a.log(c); }, [](float a, float) { return std::log(a); }, 0.2f, 3, 0},
      {"sqrt", 1, [](C& c, T a, T) { return a.sqrt(c); }, [](float a, float) { return std::sqrt(a); }, 0.2f, 3, 0},
      {"tanh", 1, [](C& c, T a, T) { return a.tanh(c); }, [](float a, float) { return std::tanh(a); }, -2, 2, 0},
      {"sigmoid", 1, [](C& c, T a, T) { return a.sigmoid(c); }, [](float a, float) { return 1 / (1 + std::exp(-a)); }, -4, 4, 0},
      {"relu", 1, [](C& c, T a, T) { return a.relu(c); }, [](float a, float) { return a > 0 ? a : 0; }, -2, 2, 0.05f},
      {"leakyRelu", 1, [](C& c, T a, T) { return a.leakyRelu(c, 0.2); }, [](float a, float) { return a > 0 ? a : 0.2f * a; }, -2, 2, 0.05f},
      {"gelu", 1, [](C& c, T a, T) { return a.gelu(c); }, [](float a, float) { return float(geluTanhRef(a)); }, -3, 3, 0},
      {"geluErf", 1, [](C& c, T a, T) { return a.geluErf(c); }, [](float a, float) { return float(0.5 * a * (1 + std::erf(a / std::sqrt(2.0)))); }, -3, 3, 0},
      {"quickGelu", 1, [](C& c, T a, T) { return a.quickGelu(c); }, [](float a, float) { return float(a * sigmoidRef(1.702 * a)); }, -3, 3, 0},
      {"silu", 1, [](C& c, T a, T) { return a.silu(c); }, [](float a, float) { return float(a * sigmoidRef(a)); }, -4, 4, 0},
      {"elu", 1, [](C& c, T a, T) { return a.elu(c, 1.5); }, [](float a, float) { return a > 0 ? a : float(1.5 * std::expm1(double(a))); }, -2, 2, 0.05f},
      {"log1p", 1, [](C& c, T a, T) { return a.log1p(c); }, [](float a, float) { return float(std::log1p(double(a))); }, -0.5f, 3, 0},
      {"rsqrt", 1, [](C& c, T a, T) { return a.rsqrt(c); }, [](float a, float) { return float(1 / std::sqrt(double(a))); }, 0.2f, 3, 0},
      {"reciprocal", 1, [](C& c, T a, T) { return a.reciprocal(c); }, [](float a, float) { return 1 / a; }, -2, 2, 0.3f},
      {"sin", 1, [](C& c, T a, T) { return a.sin(c); }, [](float a, float) { return std::sin(a); }, -3, 3, 0},
      {"cos", 1, [](C& c, T a, T) { return a.cos(c); }, [](float a, float) { return std::cos(a); }, -3, 3, 0},
      {"clamp", 1, [](C& c, T a, T) { return a.clamp(c, -0.5, 0.8); }, [](float a, float) { return std::min(std::max(a, -0.5f), 0.8f); }, -2, 2, 0.05f, -2, 2, {-0.5f, 0.8f}},
      {"floor", 1, [](C& c, T a, T) { return a.floor(c); }, [](float a, float) { return std::floor(a); }, -2.5f, 2.5f, 0.05f, -2, 2, {-2, -1, 0, 1, 2}},
      {"ceil", 1, [](C& c, T a, T) { return a.ceil(c); }, [](float a, float) { return std::ceil(a); }, -2.5f, 2.5f, 0.05f, -2, 2, {-2, -1, 0, 1, 2}},
      {"round", 1, [](C& c, T a, T) { return a.round(c); }, [](float a, float) { return std::nearbyint(a); }, -2.4f, 2.4f, 0.05f, -2, 2, {-1.5f, -0.5f, 0.5f, 1.5f}},
      {"sign", 1, [](C& c, T a, T) { return a.sign(c); }, [](float a, float) { return float((a > 0) - (a < 0)); }, -2, 2, 0.05f},
      {"fastTanh", 1, [](C& c, T a, T) { return a.fastTanh(c); }, [](float a, float) { return std::tanh(a); }, -3, 3, 0},
      {"softcap30", 1, [](C& c, T a, T) { return a.softcap30(c); }, [](float a, float) { return float(30 * std::tanh(a / 30.0)); }, -12, 12, 0},
      {"softcap15", 1, [](C& c, T a, T) { return a.softcap15(c); }, [](float a, float) { return float(15 * std::tanh(a / 15.0)); }, -6, 6, 0},
      {"unary", 1, [](C& c, T a, T) { return a.unary(c, "quickGelu"); }, [](float a, float) { return float(a * sigmoidRef(1.702 * a)); }, -3, 3, 0},
      {"snake", 2, [](C& c, T a, T b) { return a.snake(c, b); }, [](float a, float b) { return float(a + std::pow(std::sin(double(b) * a), 2) / b); }, -2, 2, 0, 0.3f, 1.5f, {0.0f}, true},
      {"prelu", 2, [](C& c, T a, T b) { return a.prelu(c, b); }, [](float a, float b) { return a > 0 ? a : a * b; }, -2, 2, 0.05f, -0.5f, 0.5f, {0.0f}, true},
  };
  return ops;
}

// The operand layouts every elementwise op is run on. Each builds (a, b) from contiguous
// variables xa, xb through views, so gradients still reach the variables.
struct Layout {
  std::string name;
  fucina::Tags a_tags, b_tags;
  fucina::Extents a_shape, b_shape;
  std::function<Tensor(ExecContext&, const Tensor&)> view_a, view_b;
};

const std::vector<Layout>& layouts() {
  auto same = [](ExecContext&, const Tensor& t) { return t; };
  static const std::vector<Layout> ls = {
      {"contiguous", {"r", "c"}, {"r", "c"}, {3, 5}, {3, 5}, same, same},
      {"size one", {"r"}, {"r"}, {1}, {1}, same, same},
      {"odd sizes", {"r", "c", "d"}, {"r", "c", "d"}, {7, 1, 3}, {7, 1, 3}, same, same},
      {"permuted view", {"r", "c"}, {"r", "c"}, {4, 3}, {4, 3},
       [](ExecContext& c, const Tensor& t) { return t.permuteTo(c, {"c", "r"}); }, same},
      {"narrowed view", {"r", "c"}, {"r", "c"}, {5, 6}, {5, 4},
       [](ExecContext& c, const Tensor& t) { return t.narrow(c, "c", 1, 4); }, same},
      {"broadcast b", {"r", "c"}, {"c"}, {3, 4}, {4}, same, same},
      {"broadcast both", {"r"}, {"c"}, {3}, {2}, same, same},
  };
  return ls;
}

// Unary ops have no broadcast layouts; a parameter operand (b_among_a) cannot bring an axis of its own.
bool skipLayout(const Elementwise& op, const Layout& l) {
  if (op.arity == 1) return l.name.rfind("broadcast", 0) == 0;
  return op.b_among_a && l.name == "broadcast both";
}

float referenceAt(const Elementwise& op, const Tensor& a, const Tensor& b, const Tensor& out,
                  size_t i) {
  // Map output index i back to a's and b's elements through the tags (row-major over out).
  std::vector<int64_t> idx(out.rank());
  int64_t rest = static_cast<int64_t>(i);
  for (size_t d = out.rank(); d-- > 0;) {
    idx[d] = rest % out.shape()[d];
    rest /= out.shape()[d];
  }
  auto element = [&](const Tensor& t) {
    int64_t flat = 0;
    for (size_t d = 0; d < t.rank(); ++d) {
      const size_t od = *fucina::findTag(out.tags(), t.tags()[d]);
      flat = flat * t.shape()[d] + idx[od];
    }
    return t.toVector()[static_cast<size_t>(flat)];
  };
  return op.reference(element(a), op.arity == 2 ? element(b) : 0.0f);
}

}  // namespace

// ---------------------------------------------------------------- elementwise ops

TEST_CASE("elementwise ops: forward matches the scalar reference on every layout") {
  for (const auto& op : elementwiseOps()) {
    for (const auto& l : layouts()) {
      if (skipLayout(op, l)) continue;
      INFO(op.name << " on " << l.name);
      ExecContext ctx(fucina::ExecOptions{.threads = 1});
      Tensor xa = Tensor::fromSlice(ctx, l.a_tags, l.a_shape,
                                    values(size_t(fucina::numelOf(l.a_shape)), op.lo, op.hi, 1, op.avoid, op.kinks));
      Tensor xb = Tensor::fromSlice(ctx, l.b_tags, l.b_shape,
                                    values(size_t(fucina::numelOf(l.b_shape)), op.lo2, op.hi2, 2));
      Tensor a = l.view_a(ctx, xa), b = l.view_b(ctx, xb);
      Tensor out = op.apply(ctx, a, b);
      REQUIRE(out.dtype() == DType::f32);
      const auto got = out.toVector();
      REQUIRE(got.size() == size_t(out.numel()));
      for (size_t i = 0; i < got.size(); ++i)
        REQUIRE(got[i] == Approx(referenceAt(op, a, b, out, i)).epsilon(1e-5).margin(1e-6));
    }
  }
}

TEST_CASE("elementwise ops: gradcheck on every layout") {
  for (const auto& op : elementwiseOps()) {
    for (const auto& l : layouts()) {
      if (skipLayout(op, l)) continue;
      INFO(op.name << " on " << l.name);
      ExecContext ctx(fucina::ExecOptions{.threads = 1});
      Tensor xa = Tensor::variableFromSlice(ctx, l.a_tags, l.a_shape,
                                            values(size_t(fucina::numelOf(l.a_shape)), op.lo, op.hi, 3, op.avoid, op.kinks));
      Tensor xb = Tensor::variableFromSlice(ctx, l.b_tags, l.b_shape,
                                            values(size_t(fucina::numelOf(l.b_shape)), op.lo2, op.hi2, 4));
      // Weighting the outputs makes every element's gradient distinct.
      auto loss = [&](ExecContext& c) {
        Tensor out = op.apply(c, l.view_a(c, xa), l.view_b(c, xb));
        Tensor w = Tensor::fromSlice(c, out.tags(), out.shape(),
                                     values(size_t(out.numel()), 0.5f, 1.5f, 5));
        return out.mul(c, w).sumAll(c);
      };
      std::vector<Tensor*> inputs{&xa};
      if (op.arity == 2) inputs.push_back(&xb);
      const auto r = fucina::gradcheck(ctx, loss, inputs, {.eps = 1e-3, .abs_tol = 2e-3, .rel_tol = 1e-2});
      CHECK(r.checked == size_t(xa.numel() + (op.arity == 2 ? xb.numel() : 0)));
    }
  }
}

TEST_CASE("elementwise ops: empty tensors give empty results and empty gradients") {
  for (const auto& op : elementwiseOps()) {
    INFO(op.name);
    ExecContext ctx;
    Tensor a = Tensor::variableFromSlice(ctx, {"r", "c"}, {0, 3}, std::vector<float>{});
    Tensor b = Tensor::variableFromSlice(ctx, {"r", "c"}, {0, 3}, std::vector<float>{});
    Tensor out = op.apply(ctx, a, b);
    CHECK(out.shape() == fucina::Extents{0, 3});
    out.sumAll(ctx).backward(ctx);
    CHECK(a.grad(ctx)->numel() == 0);
  }
}

TEST_CASE("elementwise ops: bad inputs are named errors") {
  for (const auto& op : elementwiseOps()) {
    INFO(op.name);
    ExecContext ctx;
    Tensor a = Tensor::ones(ctx, {"r", "c"}, {2, 3});
    // Note [Dtype rules]: a 16-bit constant computes in f32 (f16 with f32 gives f32); one that
    // requires gradients is refused.
    Tensor half = Tensor::ones(ctx, {"r", "c"}, {2, 3}, DType::f16);
    CHECK(op.apply(ctx, half, a).dtype() == (op.arity == 2 ? DType::f32 : DType::f16));
    Tensor half_var = Tensor::variableFromSlice(ctx, {"r", "c"}, {2, 3}, {1, 1, 1, 1, 1, 1}).to(ctx, DType::f16);
    CHECK(codeOf([&] { op.apply(ctx, half_var, a); }) == ErrorCode::UnsupportedGradient);
    CHECK(codeOf([&] { op.apply(ctx, Tensor(), a); }) == ErrorCode::InvalidArgument);
    if (op.arity == 2) {
      Tensor wrong = Tensor::ones(ctx, {"c", "r"}, {2, 3});  // same extents, other tags
      try {
        op.apply(ctx, a, wrong);
        FAIL("expected ShapeMismatch");
      } catch (const fucina::Error& e) {
        CHECK(e.code() == ErrorCode::ShapeMismatch);
        CHECK_THAT(e.what(), Catch::Contains("'r'") || Catch::Contains("'c'"));
      }
    }
  }
}

TEST_CASE("maximum and minimum split the gradient evenly on ties") {
  ExecContext ctx;
  Tensor a = Tensor::variableFromSlice(ctx, {"d"}, {3}, {1, 5, 2});
  Tensor b = Tensor::variableFromSlice(ctx, {"d"}, {3}, {1, 4, 3});
  a.maximum(ctx, b).sumAll(ctx).backward(ctx);
  CHECK(a.grad(ctx)->toVector() == std::vector<float>{0.5f, 1, 0});
  CHECK(b.grad(ctx)->toVector() == std::vector<float>{0.5f, 0, 1});
  a.zeroGrad();
  b.zeroGrad();
  a.minimum(ctx, b).sumAll(ctx).backward(ctx);
  CHECK(a.grad(ctx)->toVector() == std::vector<float>{0.5f, 0, 1});
  CHECK(b.grad(ctx)->toVector() == std::vector<float>{0.5f, 1, 0});
}

TEST_CASE("relu, abs and pow follow torch at their edge points") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"d"}, {3}, {0, -1, 2});
  x.relu(ctx).sumAll(ctx).backward(ctx);
  CHECK(x.grad(ctx)->toVector() == std::vector<float>{0, 0, 1});
  x.zeroGrad();
  x.abs(ctx).sumAll(ctx).backward(ctx);
  CHECK(x.grad(ctx)->toVector() == std::vector<float>{0, -1, 1});
  // d/db of a^b at a = 0 is taken as 0, not NaN.
  Tensor base = Tensor::variableFromSlice(ctx, {"d"}, {1}, {0});
  Tensor e = Tensor::variableFromSlice(ctx, {"d"}, {1}, {2});
  base.pow(ctx, e).sumAll(ctx).backward(ctx);
  CHECK(e.grad(ctx)->item() == 0.0f);
  CHECK(base.grad(ctx)->item() == 0.0f);
}

TEST_CASE("broadcast operands receive gradients summed over the axes they lack") {
  ExecContext ctx;
  Tensor m = Tensor::variableFromSlice(ctx, {"r", "c"}, {2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor v = Tensor::variableFromSlice(ctx, {"c"}, {3}, {10, 20, 30});
  Tensor y = m.mul(ctx, v);
  CHECK(y.tags() == fucina::Tags{"r", "c"});
  CHECK(y.toVector() == std::vector<float>{10, 40, 90, 40, 100, 180});
  y.sumAll(ctx).backward(ctx);
  CHECK(v.grad(ctx)->toVector() == std::vector<float>{5, 7, 9});
  CHECK(m.grad(ctx)->toVector() == std::vector<float>{10, 20, 30, 10, 20, 30});
}

TEST_CASE("ops align operands by tag name, not by position") {
  ExecContext ctx;
  Tensor a = Tensor::fromSlice(ctx, {"r", "c"}, {2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor at = Tensor::fromSlice(ctx, {"c", "r"}, {3, 2}, {1, 4, 2, 5, 3, 6});  // same values
  CHECK(a.sub(ctx, at).toVector() == std::vector<float>(6, 0.0f));
  CHECK(at.add(ctx, a).tags() == fucina::Tags{"c", "r"});
}

// ---------------------------------------------------------------- reductions

TEST_CASE("reductions: values, gradcheck and layouts") {
  ExecContext ctx(fucina::ExecOptions{.threads = 1});
  Tensor x = Tensor::variableFromSlice(ctx, {"r", "c"}, {2, 3}, {1, 2, 3, 4, 5, 6});
  CHECK(x.sumAll(ctx).item() == 21);
  CHECK(x.meanAll(ctx).item() == 3.5f);
  CHECK(x.sum(ctx, "r").toVector() == std::vector<float>{5, 7, 9});
  CHECK(x.sum(ctx, "c").toVector() == std::vector<float>{6, 15});
  CHECK(x.mean(ctx, "c").toVector() == std::vector<float>{2, 5});
  CHECK(x.sum(ctx, "r").tags() == fucina::Tags{"c"});
  CHECK(x.permuteTo(ctx, {"c", "r"}).sum(ctx, "r").toVector() == std::vector<float>{5, 7, 9});
  CHECK(x.narrow(ctx, "c", 1, 2).sum(ctx, "c").toVector() == std::vector<float>{5, 11});

  Tensor y = Tensor::variableFromSlice(ctx, {"a", "b", "c"}, {3, 1, 5}, values(15, -1, 1, 9));
  Tensor w = Tensor::fromSlice(ctx, {"a", "b"}, {3, 1}, {0.5f, -1, 2});
  for (const char* axis : {"a", "b", "c"}) {
    INFO(axis);
    auto sumLoss = [&](ExecContext& c) {
      return y.sum(c, axis).mul(c, y.mean(c, axis)).sumAll(c).add(c, y.sumAll(c).mul(c, w.sumAll(c)));
    };
    fucina::gradcheck(ctx, sumLoss, {&y});
  }
  auto viewLoss = [&](ExecContext& c) {
    return y.permuteTo(c, {"c", "a", "b"}).narrow(c, "c", 1, 3).mean(c, "c").mul(c, w).meanAll(c);
  };
  fucina::gradcheck(ctx, viewLoss, {&y});
}

TEST_CASE("reductions over many rows (row blocks) match f64 sums on 1 and 2 threads, any layout") {
  // Note [Row blocks]: 1000 rows into 390 outputs are summed in blocks of rows whose partials add
  // in block order: the same to the bit on any thread count, and as exact as an f64 sum.
  const int64_t rows = 1000, b = 3, c = 130;
  const auto xv = values(static_cast<size_t>(rows * b * c), -1, 1, 11);
  std::vector<double> want(static_cast<size_t>(b * c), 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < b * c; ++j) want[static_cast<size_t>(j)] += xv[static_cast<size_t>(r * b * c + j)];
  std::vector<std::vector<float>> by_threads;
  for (int threads : {1, 2}) {
    ExecContext ctx(fucina::ExecOptions{.threads = threads});
    Tensor x = Tensor::fromSlice(ctx, {"r", "b", "c"}, {rows, b, c}, xv);
    const std::vector<float> got = x.sum(ctx, "r").toVector();
    for (size_t j = 0; j < got.size(); ++j) REQUIRE(got[j] == static_cast<float>(want[j]));
    // Outputs with a stride (c outer in memory): the scalar path of the same blocks.
    const std::vector<float> permuted = x.permuteTo(ctx, {"c", "r", "b"}).contiguous(ctx).sum(ctx, "r").permuteTo(ctx, {"b", "c"}).toVector();
    for (size_t j = 0; j < got.size(); ++j) REQUIRE(permuted[j] == got[j]);
    by_threads.push_back(got);
  }
  CHECK(by_threads[0] == by_threads[1]);
}

TEST_CASE("reductions: bad inputs") {
  ExecContext ctx;
  Tensor x = Tensor::ones(ctx, {"r", "c"}, {2, 3});
  CHECK(codeOf([&] { x.sum(ctx, "missing"); }) == ErrorCode::ShapeMismatch);
  CHECK(codeOf([&] { x.mean(ctx, "missing"); }) == ErrorCode::ShapeMismatch);
  CHECK(codeOf([&] { Tensor::ones(ctx, {"r"}, {0}).meanAll(ctx); }) == ErrorCode::InvalidArgument);
  CHECK(codeOf([&] { Tensor::ones(ctx, {"r", "c"}, {0, 2}).mean(ctx, "r"); }) == ErrorCode::InvalidArgument);
  CHECK(codeOf([&] { Tensor::ones(ctx, {"r"}, {2}, DType::i32).sumAll(ctx); }) == ErrorCode::DTypeMismatch);
  CHECK(Tensor::ones(ctx, {"r"}, {0}).sumAll(ctx).item() == 0);
}

// ---------------------------------------------------------------- reductions over one named axis

namespace {

// A reduction over one named axis: the op, and a naive reference from one line of the input
// (in axis order) to the line's output (one value, or n for cumsum, which keeps the axis).
struct AxisReduction {
  std::string name;
  std::function<Tensor(ExecContext&, const Tensor&, fucina::Tag)> apply;
  std::function<std::vector<double>(const std::vector<double>&)> reference;
  float lo = -2, hi = 2;
  int64_t min_extent = 1;  // layouts whose reduced axis is shorter are skipped
  bool keeps_axis = false;
};

std::vector<double> one(double v) { return {v}; }

const std::vector<AxisReduction>& axisReductions() {
  using C = ExecContext;
  using T = const Tensor&;
  using L = const std::vector<double>&;
  auto mean = [](L x) {
    double s = 0;
    for (double v : x) s += v;
    return s / double(x.size());
  };
  auto var = [mean](L x, double corr) {
    const double m = mean(x);
    double s = 0;
    for (double v : x) s += (v - m) * (v - m);
    return s / (double(x.size()) - corr);
  };
  static const std::vector<AxisReduction> rs = {
      {"variance", [](C& c, T a, fucina::Tag ax) { return a.variance(c, ax); }, [var](L x) { return one(var(x, 1)); }, -2, 2, 2},
      {"variance(correction=0)", [](C& c, T a, fucina::Tag ax) { return a.variance(c, ax, 0); }, [var](L x) { return one(var(x, 0)); }},
      {"max", [](C& c, T a, fucina::Tag ax) { return a.max(c, ax); }, [](L x) { return one(*std::max_element(x.begin(), x.end())); }},
      {"min", [](C& c, T a, fucina::Tag ax) { return a.min(c, ax); }, [](L x) { return one(*std::min_element(x.begin(), x.end())); }},
      {"logsumexp", [](C& c, T a, fucina::Tag ax) { return a.logsumexp(c, ax); },
       [](L x) { double s = 0; for (double v : x) s += std::exp(v); return one(std::log(s)); }},
      {"cumsum", [](C& c, T a, fucina::Tag ax) { return a.cumsum(c, ax); },
       [](L x) { std::vector<double> y; double s = 0; for (double v : x) y.push_back(s += v); return y; }, -2, 2, 1, true},
      {"prod", [](C& c, T a, fucina::Tag ax) { return a.prod(c, ax); },
       [](L x) { double p = 1; for (double v : x) p *= v; return one(p); }, -1.5f, 1.5f},
      {"norm", [](C& c, T a, fucina::Tag ax) { return a.norm(c, ax); },
       [](L x) { double s = 0; for (double v : x) s += v * v; return one(std::sqrt(s)); }},
      {"cumprod", [](C& c, T a, fucina::Tag ax) { return a.cumprod(c, ax); },
       [](L x) { std::vector<double> y; double p = 1; for (double v : x) y.push_back(p *= v); return y; }, -1.5f, 1.5f, 1, true},
      {"standardizeAxis", [](C& c, T a, fucina::Tag ax) { return a.standardizeAxis(c, ax); },
       [mean, var](L x) {
         const double m = mean(x), s = std::sqrt(var(x, 0) + 1e-5);
         std::vector<double> y;
         for (double v : x) y.push_back((v - m) / s);
         return y;
       }, -2, 2, 1, true},
      {"sort", [](C& c, T a, fucina::Tag ax) { return a.sort(c, ax).values; },
       [](L x) { std::vector<double> y = x; std::sort(y.begin(), y.end()); return y; }, -2, 2, 1, true},
      {"topK", [](C& c, T a, fucina::Tag ax) { return a.topK(c, ax, a.extent(ax)).values; },
       [](L x) { std::vector<double> y = x; std::sort(y.rbegin(), y.rend()); return y; }, -2, 2, 1, true},
  };
  return rs;
}

// Inputs built from a contiguous variable through views, and the axis reduced.
struct AxisLayout {
  std::string name;
  fucina::Tags tags;
  fucina::Extents shape;
  std::function<Tensor(ExecContext&, const Tensor&)> view;
  fucina::Tag axis;
};

const std::vector<AxisLayout>& axisLayouts() {
  auto same = [](ExecContext&, const Tensor& t) { return t; };
  static const std::vector<AxisLayout> ls = {
      {"rows", {"r", "c"}, {3, 5}, same, "r"},
      {"columns", {"r", "c"}, {3, 5}, same, "c"},
      {"vector", {"d"}, {6}, same, "d"},
      {"size-one axis", {"a", "b", "c"}, {4, 1, 3}, same, "b"},
      {"middle of three", {"a", "b", "c"}, {2, 4, 3}, same, "b"},
      {"single element", {"d"}, {1}, same, "d"},
      {"permuted view", {"r", "c"}, {4, 3},
       [](ExecContext& c, const Tensor& t) { return t.permuteTo(c, {"c", "r"}); }, "r"},
      {"narrowed view", {"r", "c"}, {5, 6},
       [](ExecContext& c, const Tensor& t) { return t.narrow(c, "c", 1, 4); }, "c"},
      {"permuted and narrowed", {"a", "b", "c"}, {3, 5, 2},
       [](ExecContext& c, const Tensor& t) { return t.permuteTo(c, {"c", "b", "a"}).narrow(c, "b", 1, 3); }, "b"},
  };
  return ls;
}

// The naive reference: lines of x along axis (x read in its own logical axis order), each mapped
// by the reference; the result laid out like the op's result (x's axes, minus axis unless kept).
std::vector<double> naiveAlong(const AxisReduction& r, const Tensor& x, fucina::Tag axis) {
  const auto v = x.toVector();
  const size_t ax = *fucina::findTag(x.tags(), axis);
  const int64_t n = x.shape()[ax];
  int64_t inner = 1, outer = 1;
  for (size_t d = 0; d < x.rank(); ++d) {
    if (d < ax) outer *= x.shape()[d];
    if (d > ax) inner *= x.shape()[d];
  }
  std::vector<double> out(size_t(outer * inner * (r.keeps_axis ? n : 1)));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      std::vector<double> line;
      for (int64_t k = 0; k < n; ++k) line.push_back(v[size_t((o * n + k) * inner + i)]);
      const auto y = r.reference(line);
      for (size_t k = 0; k < y.size(); ++k)
        out[size_t((o * int64_t(y.size()) + int64_t(k)) * inner + i)] = y[k];
    }
  return out;
}

}  // namespace

TEST_CASE("axis reductions: forward matches a naive reference on every layout") {
  for (const auto& r : axisReductions()) {
    for (const auto& l : axisLayouts()) {
      ExecContext ctx(fucina::ExecOptions{.threads = 1});
      Tensor x = l.view(ctx, Tensor::fromSlice(ctx, l.tags, l.shape,
                                               values(size_t(fucina::numelOf(l.shape)), r.lo, r.hi, 31)));
      if (x.extent(l.axis) < r.min_extent) continue;
      INFO(r.name << " on " << l.name);
      Tensor y = r.apply(ctx, x, l.axis);
      fucina::Tags want_tags;
      for (auto t : x.tags())
        if (r.keeps_axis || !(t == l.axis)) want_tags.push_back(t);
      CHECK(y.tags() == want_tags);
      const auto want = naiveAlong(r, x, l.axis);
      const auto got = y.toVector();
      REQUIRE(got.size() == want.size());
      for (size_t i = 0; i < got.size(); ++i) REQUIRE(got[i] == Approx(want[i]).epsilon(1e-5).margin(1e-5));
    }
  }
}

TEST_CASE("axis reductions: gradcheck on every layout") {
  for (const auto& r : axisReductions()) {
    for (const auto& l : axisLayouts()) {
      ExecContext ctx(fucina::ExecOptions{.threads = 1});
      Tensor x = Tensor::variableFromSlice(ctx, l.tags, l.shape,
                                           values(size_t(fucina::numelOf(l.shape)), r.lo, r.hi, 32));
      if (l.view(ctx, x).extent(l.axis) < r.min_extent) continue;
      INFO(r.name << " on " << l.name);
      auto loss = [&](ExecContext& c) {
        Tensor out = r.apply(c, l.view(c, x), l.axis);
        Tensor w = Tensor::fromSlice(c, out.tags(), out.shape(), values(size_t(out.numel()), 0.5f, 1.5f, 33));
        return out.mul(c, w).sumAll(c);
      };
      const auto res = fucina::gradcheck(ctx, loss, {&x}, {.eps = 1e-3, .abs_tol = 2e-3, .rel_tol = 1e-2});
      CHECK(res.checked == size_t(x.numel()));
    }
  }
}

TEST_CASE("axis reductions: bad inputs are named errors") {
  for (const auto& r : axisReductions()) {
    INFO(r.name);
    ExecContext ctx;
    Tensor x = Tensor::ones(ctx, {"r", "c"}, {2, 3});
    try {
      r.apply(ctx, x, "missing");
      FAIL("expected ShapeMismatch");
    } catch (const fucina::Error& e) {
      CHECK(e.code() == ErrorCode::ShapeMismatch);
      CHECK_THAT(e.what(), Catch::Contains("'missing'") && Catch::Contains("r=2") && Catch::Contains("c=3"));
    }
    CHECK(codeOf([&] { r.apply(ctx, Tensor::ones(ctx, {"r", "c"}, {2, 3}, DType::i32), "r"); }) == ErrorCode::DTypeMismatch);
    CHECK(codeOf([&] { r.apply(ctx, Tensor(), "r"); }) == ErrorCode::InvalidArgument);
  }
  ExecContext ctx;
  Tensor empty = Tensor::ones(ctx, {"r", "c"}, {0, 2});
  for (const char* op : {"max", "min", "variance", "variance(correction=0)"}) {
    INFO(op);
    for (const auto& r : axisReductions())
      if (r.name == op) CHECK(codeOf([&] { r.apply(ctx, empty, "r"); }) == ErrorCode::InvalidArgument);
  }
  CHECK(codeOf([&] { Tensor::ones(ctx, {"r"}, {1}).variance(ctx, "r"); }) == ErrorCode::InvalidArgument);
  CHECK(codeOf([&] { Tensor::ones(ctx, {"r"}, {3}).variance(ctx, "r", -1); }) == ErrorCode::InvalidArgument);
  // Defined over an empty axis: the empty sum, product and log of the empty sum.
  CHECK(empty.prod(ctx, "r").toVector() == std::vector<float>{1, 1});
  CHECK(empty.norm(ctx, "r").toVector() == std::vector<float>{0, 0});
  CHECK(empty.logsumexp(ctx, "r").toVector() == std::vector<float>(2, -INFINITY));
  CHECK(empty.cumsum(ctx, "r").shape() == fucina::Extents{0, 2});
}

TEST_CASE("axis reductions: edge points follow the reference") {
  ExecContext ctx;
  // max/min route the gradient to the first extremum only.
  Tensor x = Tensor::variableFromSlice(ctx, {"r", "c"}, {2, 4}, {1, 3, 3, 0, -2, -2, 5, -2});
  x.max(ctx, "c").sumAll(ctx).backward(ctx);
  CHECK(x.grad(ctx)->toVector() == std::vector<float>{0, 1, 0, 0, 0, 0, 1, 0});
  x.zeroGrad();
  x.min(ctx, "c").sumAll(ctx).backward(ctx);
  CHECK(x.grad(ctx)->toVector() == std::vector<float>{0, 0, 0, 1, 1, 0, 0, 0});
  // prod is exact with zeros: one zero leaves the others' product on it, two zeros give 0.
  Tensor p = Tensor::variableFromSlice(ctx, {"r", "c"}, {2, 3}, {2, 0, 3, 0, 4, 0});
  CHECK(p.prod(ctx, "c").toVector() == std::vector<float>{0, 0});
  p.prod(ctx, "c").sumAll(ctx).backward(ctx);
  CHECK(p.grad(ctx)->toVector() == std::vector<float>{0, 6, 0, 0, 0, 0});
  // norm's gradient is 0 where the norm is 0.
  Tensor z = Tensor::variableFromSlice(ctx, {"r", "c"}, {2, 2}, {0, 0, 3, 4});
  CHECK(z.norm(ctx, "c").toVector() == std::vector<float>{0, 5});
  z.norm(ctx, "c").sumAll(ctx).backward(ctx);
  CHECK(z.grad(ctx)->toVector() == std::vector<float>{0, 0, 0.6f, 0.8f});
  // logsumexp is stable for large values and -inf lines.
  Tensor big = Tensor::fromSlice(ctx, {"d"}, {2}, {1000, 1000});
  CHECK(big.logsumexp(ctx, "d").item() == Approx(1000 + std::log(2.0)));
  Tensor ninf = Tensor::fromSlice(ctx, {"d"}, {2}, {-INFINITY, -INFINITY});
  CHECK(ninf.logsumexp(ctx, "d").item() == -INFINITY);
  // variance with torch's default correction.
  Tensor v = Tensor::fromSlice(ctx, {"d"}, {4}, {1, 2, 3, 4});
  CHECK(v.variance(ctx, "d").item() == Approx(5.0 / 3));
  CHECK(v.variance(ctx, "d", 0).item() == Approx(1.25));
  CHECK(v.cumsum(ctx, "d").toVector() == std::vector<float>{1, 3, 6, 10});
}

TEST_CASE("activations follow torch at their edge points") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"d"}, {5}, {-1, -0.5f, 0.25f, 0.8f, 2});
  x.clamp(ctx, -0.5, 0.8).sumAll(ctx).backward(ctx);  // boundaries pass the gradient
  CHECK(x.grad(ctx)->toVector() == std::vector<float>{0, 1, 1, 1, 0});
  CHECK(codeOf([&] { x.clamp(ctx, 1, -1); }) == ErrorCode::InvalidArgument);
  Tensor zero = Tensor::variableFromSlice(ctx, {"d"}, {1}, {0});
  zero.leakyRelu(ctx).sumAll(ctx).backward(ctx);
  CHECK(zero.grad(ctx)->item() == Approx(0.01));
  zero.zeroGrad();
  zero.elu(ctx, 2).sumAll(ctx).backward(ctx);
  CHECK(zero.grad(ctx)->item() == Approx(2));
  // Known values (torch): gelu(1) tanh ≈ 0.841192, exact ≈ 0.841345; silu(1) ≈ 0.731059.
  Tensor one = Tensor::fromSlice(ctx, {"d"}, {1}, {1});
  CHECK(one.gelu(ctx).item() == Approx(0.841192).epsilon(1e-5));
  CHECK(one.geluErf(ctx).item() == Approx(0.841345).epsilon(1e-5));
  CHECK(one.silu(ctx).item() == Approx(0.731059).epsilon(1e-5));
  CHECK(one.quickGelu(ctx).item() == Approx(0.845796).epsilon(1e-4));
}

TEST_CASE("fastTanh, unary by name, biasAdd, snake and prelu: edge points and errors") {
  ExecContext ctx;
  // fastTanh stays within 1e-5 of tanh everywhere (7e-6 by its construction), saturates exactly,
  // and keeps NaN.
  std::vector<float> sweep;
  for (int i = -24000; i <= 24000; ++i) sweep.push_back(float(i) / 2000.0f);
  sweep.insert(sweep.end(), {1e6f, -1e30f, INFINITY, -INFINITY});
  const Tensor s = Tensor::fromSlice(ctx, {"d"}, {int64_t(sweep.size())}, sweep);
  const std::vector<float> ft = s.fastTanh(ctx).toVector();
  double worst = 0;
  for (size_t i = 0; i < sweep.size(); ++i) worst = std::max(worst, std::fabs(double(ft[i]) - std::tanh(double(sweep[i]))));
  CHECK(worst < 1e-5);
  CHECK(ft.back() == -1.0f);
  CHECK(std::isnan(Tensor::fromSlice(ctx, {"d"}, {1}, {NAN}).fastTanh(ctx).item()));
  // Every name unary() knows gives that op; an unknown one lists them.
  const Tensor x = Tensor::fromSlice(ctx, {"d"}, {4}, {0.3f, -0.7f, 1.2f, 2.5f});
  for (std::string_view name : Tensor::unaryNames()) {
    INFO(name);
    CHECK(x.unary(ctx, name).toVector().size() == 4);
  }
  CHECK(Tensor::unaryNames().size() == 26);
  CHECK(x.unary(ctx, "gelu").toVector() == x.gelu(ctx).toVector());
  CHECK(x.unary(ctx, "leakyRelu").toVector() == x.leakyRelu(ctx).toVector());
  CHECK_THROWS_WITH(x.unary(ctx, "swish"), Catch::Contains("'swish'") && Catch::Contains("softcap15"));
  CHECK(codeOf([&] { x.unary(ctx, ""); }) == ErrorCode::InvalidArgument);
  // round is half to even; sign keeps zero.
  const Tensor h = Tensor::fromSlice(ctx, {"d"}, {5}, {-2.5f, -0.5f, 0.5f, 1.5f, 2.5f});
  CHECK(h.round(ctx).toVector() == std::vector<float>{-2, -0, 0, 2, 2});
  CHECK(Tensor::fromSlice(ctx, {"d"}, {3}, {-3, 0, 0.1f}).sign(ctx).toVector() == std::vector<float>{-1, 0, 1});
  // biasAdd: the slice along one axis; only the tensor gets a gradient.
  Tensor m = Tensor::variableFromSlice(ctx, {"r", "c"}, {2, 3}, {1, 2, 3, 4, 5, 6});
  const std::vector<float> bias{10, 20};
  CHECK(m.biasAdd(ctx, "r", bias).toVector() == std::vector<float>{11, 12, 13, 24, 25, 26});
  CHECK(m.permuteTo(ctx, {"c", "r"}).biasAdd(ctx, "r", bias).tags() == fucina::Tags{"c", "r"});
  m.biasAdd(ctx, "r", bias).sumAll(ctx).backward(ctx);
  CHECK(m.grad(ctx)->toVector() == std::vector<float>(6, 1));
  fucina::gradcheck(ctx, [&](ExecContext& c) { return m.narrow(c, "c", 1, 2).biasAdd(c, "r", bias).mul(c, m.narrow(c, "c", 0, 2)).sumAll(c); }, {&m});
  CHECK(codeOf([&] { m.biasAdd(ctx, "c", bias); }) == ErrorCode::ShapeMismatch);
  CHECK(codeOf([&] { m.biasAdd(ctx, "z", bias); }) == ErrorCode::ShapeMismatch);
  // snake and prelu take per-channel parameters: axes among the input's; prelu's gradient at 0 is w.
  CHECK(codeOf([&] { m.prelu(ctx, Tensor::ones(ctx, {"k"}, {2})); }) == ErrorCode::ShapeMismatch);
  CHECK_THROWS_WITH(m.snake(ctx, Tensor::ones(ctx, {"k"}, {2})), Catch::Contains("'k'"));
  Tensor zero = Tensor::variableFromSlice(ctx, {"c"}, {2}, {0, -1});
  Tensor w = Tensor::variableFromSlice(ctx, {"c"}, {2}, {0.25f, 0.5f});
  zero.prelu(ctx, w).sumAll(ctx).backward(ctx);
  CHECK(zero.grad(ctx)->toVector() == std::vector<float>{0.25f, 0.5f});
  CHECK(w.grad(ctx)->toVector() == std::vector<float>{0, -1});
}

// ---------------------------------------------------------------- dot

namespace {
// Naive contraction reference for x{b, m, k} · w{n, k} over k, batch-free.
std::vector<float> naiveDot(const std::vector<float>& x, const std::vector<float>& w, int64_t m,
                            int64_t n, int64_t k) {
  std::vector<float> out(size_t(m * n), 0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < k; ++p) s += double(x[size_t(i * k + p)]) * w[size_t(j * k + p)];
      out[size_t(i * n + j)] = float(s);
    }
  return out;
}
}  // namespace

TEST_CASE("dot: values against a naive reference on awkward sizes and threads") {
  for (int threads : {1, 2}) {
    for (auto [m, n, k] : std::vector<std::array<int64_t, 3>>{{1, 1, 1}, {3, 5, 7}, {17, 1, 33}, {64, 65, 300}, {2, 3, 0}}) {
      INFO(threads << " threads, m=" << m << " n=" << n << " k=" << k);
      ExecContext ctx(fucina::ExecOptions{.threads = threads});
      auto xv = values(size_t(m * k), -1, 1, 11), wv = values(size_t(n * k), -1, 1, 12);
      Tensor x = Tensor::fromSlice(ctx, {"batch", "in"}, {m, k}, xv);
      Tensor w = Tensor::fromSlice(ctx, {"out", "in"}, {n, k}, wv);
      Tensor y = x.dot(ctx, w, "in");
      CHECK(y.tags() == fucina::Tags{"batch", "out"});
      const auto want = naiveDot(xv, wv, m, n, k);
      const auto got = y.toVector();
      REQUIRE(got.size() == want.size());
      for (size_t i = 0; i < got.size(); ++i) REQUIRE(got[i] == Approx(want[i]).margin(1e-4));
      // The same product through transposed (non-contiguous) operand views.
      Tensor xt = Tensor::fromSlice(ctx, {"in", "batch"}, {k, m}, x.permuteTo(ctx, {"in", "batch"}).contiguous(ctx).toVector());
      const auto got2 = xt.permuteTo(ctx, {"batch", "in"}).dot(ctx, w, "in").toVector();
      for (size_t i = 0; i < got2.size(); ++i) REQUIRE(got2[i] == Approx(want[i]).margin(1e-4));
    }
  }
}

TEST_CASE("dot: batch axes, vector operands and gradcheck") {
  ExecContext ctx(fucina::ExecOptions{.threads = 1});
  // Shared non-contracted axis "h" is a batch axis.
  Tensor q = Tensor::variableFromSlice(ctx, {"h", "t", "d"}, {2, 3, 4}, values(24, -1, 1, 21));
  Tensor kk = Tensor::variableFromSlice(ctx, {"h", "s", "d"}, {2, 5, 4}, values(40, -1, 1, 22));
  Tensor s = q.dot(ctx, kk, "d");
  CHECK(s.tags() == fucina::Tags{"h", "t", "s"});
  CHECK(s.shape() == fucina::Extents{2, 3, 5});
  auto attnLoss = [&](ExecContext& c) {
    return q.dot(c, kk, "d").tanh(c).sumAll(c);
  };
  fucina::gradcheck(ctx, attnLoss, {&q, &kk});
  // Vector · matrix and vector · vector.
  Tensor v = Tensor::variableFromSlice(ctx, {"in"}, {4}, values(4, -1, 1, 23));
  Tensor w = Tensor::variableFromSlice(ctx, {"out", "in"}, {3, 4}, values(12, -1, 1, 24));
  CHECK(v.dot(ctx, w, "in").tags() == fucina::Tags{"out"});
  CHECK(v.dot(ctx, v, "in").item() == Approx(v.mul(ctx, v).sumAll(ctx).item()));
  auto vecLoss = [&](ExecContext& c) {
    return v.dot(c, w, "in").tanh(c).sumAll(c).add(c, v.dot(c, v, "in"));
  };
  fucina::gradcheck(ctx, vecLoss, {&v, &w});
  // Layer-style with a permuted, narrowed weight view.
  Tensor x = Tensor::variableFromSlice(ctx, {"batch", "in"}, {3, 4}, values(12, -1, 1, 25));
  Tensor wide = Tensor::variableFromSlice(ctx, {"in", "out"}, {4, 6}, values(24, -1, 1, 26));
  auto viewLoss = [&](ExecContext& c) {
    return x.dot(c, wide.narrow(c, "out", 1, 4).permuteTo(c, {"out", "in"}), "in").sigmoid(c).sumAll(c);
  };
  fucina::gradcheck(ctx, viewLoss, {&x, &wide});
}

TEST_CASE("dot: bad inputs") {
  ExecContext ctx;
  Tensor x = Tensor::ones(ctx, {"batch", "in"}, {2, 3});
  CHECK(codeOf([&] { x.dot(ctx, Tensor::ones(ctx, {"out", "in"}, {4, 5}), "in"); }) == ErrorCode::ShapeMismatch);
  CHECK(codeOf([&] { x.dot(ctx, Tensor::ones(ctx, {"out", "k"}, {4, 3}), "in"); }) == ErrorCode::ShapeMismatch);
  CHECK(codeOf([&] { x.dot(ctx, Tensor::ones(ctx, {"batch", "in"}, {5, 3}), "in"); }) == ErrorCode::ShapeMismatch);
  CHECK(codeOf([&] { x.dot(ctx, Tensor::ones(ctx, {"out", "in"}, {4, 3}, DType::u8), "in"); }) == ErrorCode::DTypeMismatch);
}

// ---------------------------------------------------------------- views and casts

TEST_CASE("views share storage and route gradients back") {
  ExecContext ctx(fucina::ExecOptions{.threads = 1});
  Tensor x = Tensor::variableFromSlice(ctx, {"r", "c"}, {2, 3}, {0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f});
  const size_t live = ctx.memory().live_bytes;
  Tensor p = x.permuteTo(ctx, {"c", "r"});
  Tensor n = x.narrow(ctx, "c", 1, 2);
  Tensor r = x.withTags(ctx, {"row", "col"});
  Tensor b = Tensor::fromSlice(ctx, {"c"}, {3}, {1, 2, 3}).broadcastTo(ctx, {"r", "c"}, {2, 3});
  CHECK(ctx.memory().live_bytes == live + 3 * sizeof(float));  // only b's source was allocated
  CHECK(p.toVector() == std::vector<float>{0.1f, 0.4f, 0.2f, 0.5f, 0.3f, 0.6f});
  CHECK(n.toVector() == std::vector<float>{0.2f, 0.3f, 0.5f, 0.6f});
  CHECK(r.tags() == fucina::Tags{"row", "col"});
  CHECK(b.toVector() == std::vector<float>{1, 2, 3, 1, 2, 3});
  CHECK(n.contiguous(ctx).toVector() == n.toVector());

  Tensor v = Tensor::variableFromSlice(ctx, {"c"}, {3}, {1, -2, 0.5f});
  auto loss = [&](ExecContext& c) {
    Tensor w = Tensor::fromSlice(c, {"r", "c"}, {2, 3}, {1, 2, 3, -1, 0.5f, 2});
    Tensor s = x.permuteTo(c, {"c", "r"}).mul(c, w).tanh(c).sumAll(c);
    s = s.add(c, x.narrow(c, "c", 1, 2).contiguous(c).exp(c).sumAll(c));
    s = s.add(c, x.withTags(c, {"a", "c"}).sum(c, "a").mul(c, v).sumAll(c));
    return s.add(c, v.broadcastTo(c, {"r", "c"}, {2, 3}).mul(c, w).sigmoid(c).sumAll(c));
  };
  fucina::gradcheck(ctx, loss, {&x, &v});
}

TEST_CASE("views: bad inputs") {
  ExecContext ctx;
  Tensor x = Tensor::ones(ctx, {"r", "c"}, {2, 3});
  CHECK(codeOf([&] { x.permuteTo(ctx, {"r"}); }) == ErrorCode::ShapeMismatch);
  CHECK(codeOf([&] { x.permuteTo(ctx, {"r", "x"}); }) == ErrorCode::ShapeMismatch);
  CHECK(codeOf([&] { x.narrow(ctx, "c", 2, 2); }) == ErrorCode::IndexOutOfRange);
  CHECK(codeOf([&] { x.narrow(ctx, "c", -1, 1); }) == ErrorCode::IndexOutOfRange);
  CHECK(codeOf([&] { x.narrow(ctx, "z", 0, 1); }) == ErrorCode::ShapeMismatch);
  CHECK(codeOf([&] { x.withTags(ctx, {"a", "a"}); }) == ErrorCode::ShapeMismatch);
  CHECK(codeOf([&] { x.withTags(ctx, {"a"}); }) == ErrorCode::ShapeMismatch);
  CHECK(codeOf([&] { x.broadcastTo(ctx, {"r", "c"}, {2, 4}); }) == ErrorCode::ShapeMismatch);
  CHECK(codeOf([&] { x.broadcastTo(ctx, {"c"}, {3}); }) == ErrorCode::ShapeMismatch);
}

TEST_CASE("casts: float targets are differentiable, others refuse gradient inputs") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"d"}, {3}, {1.5f, -2, 1000});
  Tensor h = x.to(ctx, DType::f16);
  CHECK(h.dtype() == DType::f16);
  CHECK(h.toVector() == std::vector<float>{1.5f, -2, 1000});
  Tensor back = h.to(ctx, DType::f32);
  back.mul(ctx, back).sumAll(ctx).backward(ctx);
  CHECK(x.grad(ctx)->toVector() == std::vector<float>{3, -4, 2000});
  CHECK(codeOf([&] { x.to(ctx, DType::i32); }) == ErrorCode::GradientCastUnsupported);
  CHECK(codeOf([&] { x.to(ctx, DType::f64); }) == ErrorCode::GradientCastUnsupported);
  CHECK(x.detach(ctx).to(ctx, DType::i32).toVector() == std::vector<float>{1, -2, 1000});
  CHECK(codeOf([&] { h.mul(ctx, h); }) == ErrorCode::UnsupportedGradient);
  CHECK(codeOf([&] { Tensor::ones(ctx, {"d"}, {2}, DType::q8_0); }) == ErrorCode::DTypeMismatch);
}

// ---------------------------------------------------------------- coverage

namespace {

std::string readSource(const std::string& relative) {
  std::ifstream f(FUCINA_SOURCE_DIR "/" + relative, std::ios::binary);
  return f.good() ? std::string(std::istreambuf_iterator<char>(f), {}) : std::string();
}

bool mentions(const std::string& text, const std::string& op) {
  return text.find("." + op + "(") != std::string::npos || text.find("::" + op + "(") != std::string::npos;
}

// The public surface: src/fucina/ops/ops.list, which the JS op table's test reads too.
std::vector<std::string> publicOps() {
  std::vector<std::string> ops;
  std::set<std::string> seen;
  std::istringstream list(readSource("src/fucina/ops/ops.list"));
  for (std::string line; std::getline(list, line);) {
    line = line.substr(0, line.find('#'));
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos) continue;
    const std::string op = line.substr(first, line.find_last_not_of(" \t\r") - first + 1);
    INFO("ops.list names " << op << " twice");
    CHECK(seen.insert(op).second);
    ops.push_back(op);
  }
  return ops;
}

// Per op, the PyTorch parity cases of tests/fixtures/parity (count, and how many check gradients).
struct ParityCount {
  std::string families;
  int cases = 0, with_grads = 0;
};
std::map<std::string, ParityCount> parityCases() {
  std::map<std::string, ParityCount> out;
  for (const auto& e : std::filesystem::directory_iterator(FUCINA_SOURCE_DIR "/tests/fixtures/parity")) {
    if (e.path().extension() != ".json") continue;
    const std::string family = e.path().stem().string();
    const auto doc = fucina::io::json::parse(readSource("tests/fixtures/parity/" + family + ".json"), family);
    for (const auto& c : doc.find("cases")->items) {
      ParityCount& p = out[c.find("op")->text];
      if (p.families.find(family) == std::string::npos) p.families += (p.families.empty() ? "" : "+") + family;
      ++p.cases;
      p.with_grads += !c.find("grads")->members.empty();
    }
  }
  return out;
}

}  // namespace

TEST_CASE("op coverage matrix") {
  // Where each op's tests live. forward, VJP and gradcheck: the Catch2 file (run natively) that
  // checks its values and gradcheck-s it, which must call the op and gradcheck; parity: the
  // fixtures (torch's values and gradients), or why there is none; JS: its entry in the op table
  // (web/ops.table.mjs) and the node:test files that call it on both wasm variants.
  std::map<std::string, std::string> home;
  for (const auto& op : elementwiseOps()) home[op.name] = "ops_tests.cpp";
  for (const auto& r : axisReductions()) home[r.name.substr(0, r.name.find('('))] = "ops_tests.cpp";
  for (const char* op : {"sumAll", "meanAll", "sum", "mean", "dot", "broadcastTo", "permuteTo", "withTags", "narrow",
                         "contiguous", "to", "biasAdd"})
    home[op] = "ops_tests.cpp";
  for (const char* op : {"insertAxis", "squeeze", "merge", "split", "flatten", "reshape", "select", "slice", "concat",
                         "stack", "pad", "where", "maskedFill", "tril", "triu", "bandPart", "indexSelect"})
    home[op] = "structure_tests.cpp";
  for (const char* op : {"softmax", "logSoftmax", "crossEntropy", "nllLoss", "mseLoss", "huberLoss", "bceLoss",
                         "bceWithLogitsLoss", "klDivLoss"})
    home[op] = "softmax_loss_tests.cpp";
  for (const char* op : {"layerNorm", "rmsNorm", "rmsNormMul", "l2Normalize", "standardizeAxis", "rmsNormMulAdd",
                         "groupNorm", "cosineSimilarity", "rmsNormMulRopeHalfPrepared"})
    home[op] = "norm_tests.cpp";
  for (const char* op : {"conv2d", "maxPool2d", "avgPool2d", "upsample2xNearest"}) home[op] = "conv_tests.cpp";
  for (const char* op : {"conv1d", "convTranspose1d", "causalConv1d", "groupedCausalConv1d", "causalDepthwiseConv1d",
                         "conv2dRelu", "unfold", "fold", "channelAffine"})
    home[op] = "conv1d_tests.cpp";
  for (const char* op : {"addDot", "matmul", "einsum", "transpose", "einsumMany", "dotTernarySte"}) home[op] = "contract_tests.cpp";
  for (const char* op : {"crossEntropyExt", "linearCrossEntropyExt", "linearDistillExt"}) home[op] = "losses_ext_tests.cpp";
  for (const char* op : {"gather", "takeAlongAxis", "scatterAdd"}) home[op] = "gather_tests.cpp";
  for (const char* op : {"swiglu", "geglu", "gated", "glu", "splitGated", "situ"}) home[op] = "gated_tests.cpp";
  for (const char* op : {"rope", "groupedAttention"}) home[op] = "attention_tests.cpp";
  for (const char* op : {"sumMany", "normAll", "cumprod", "linearRecurrence", "topK", "sort"}) home[op] = "statistics_tests.cpp";
  home["dropout"] = "ag_custom_tests.cpp";
  home["quantize"] = "q8_tests.cpp";
  home["compare"] = "dtype_rules_tests.cpp";
  for (const char* op : {"argmax", "argmin", "argsort", "multinomial", "isnan", "isinf", "isfinite", "logicalNot",
                         "logicalAnd", "logicalOr", "logicalXor", "any", "all", "anyAll", "allAll", "bandMask"})
    home[op] = "no_grad_tests.cpp";
  for (const char* op : {"addAxisVectorInPlace", "addAxisVectorUnaryInPlace", "addScaledInPlace", "takeAddNoGrad",
                         "takeScaleNoGrad", "routerTopK"})
    home[op] = "inplace_tests.cpp";
  for (const char* op : {"alignTo", "viewWithStrides", "materialize", "sliceStep", "zeroPad2d", "constantPad2d", "unbindInto",
                         "repeatAxis", "flip", "roll", "rollBy", "shiftBy", "relposShift"})
    home[op] = "views_tests.cpp";
  // Diagonals, masked selection and indexed updates.
  for (const char* op : {"diagonal", "trace", "diag", "diagEmbed", "indexAdd", "scatter", "maskedSelect", "maskedScatter",
                         "setSlice", "setRows", "zeroSlice", "zeroRows"})
    home[op] = "indexing_tests.cpp";
  for (const char* op : {"packRhs", "dotPacked", "rmsNormMulDotPacked", "splitSwiGluDotPacked", "gegluQuantDotPacked"})
    home[op] = "packed_tests.cpp";
  // The prepared convolution: inference only.
  for (const char* op : {"prepareConv2dWeights", "conv2dPrepared", "conv2dPreparedRelu"}) home[op] = "conv_prepared_tests.cpp";
  // Ops whose results are constants (no VJP, nothing for gradcheck or a gradient fixture).
  const std::set<std::string> constant_results = {"quantize", "compare", "argmax", "argmin", "argsort", "multinomial",
                                                  "isnan", "isinf", "isfinite", "logicalNot", "logicalAnd", "logicalOr",
                                                  "logicalXor", "any", "all", "anyAll", "allAll", "bandMask",
                                                  "addAxisVectorInPlace", "addAxisVectorUnaryInPlace", "addScaledInPlace",
                                                  "takeAddNoGrad", "takeScaleNoGrad", "routerTopK", "packRhs", "dotPacked",
                                                  "rmsNormMulDotPacked", "splitSwiGluDotPacked", "gegluQuantDotPacked", "prepareConv2dWeights",
                                                  "conv2dPrepared", "conv2dPreparedRelu"};
  // Ops with no PyTorch counterpart to match, and what stands in for the fixture.
  const std::map<std::string, std::string> no_counterpart = {
      {"dropout", "seeded mask, no torch counterpart: mask and scaling tested in ag_custom_tests.cpp"},
      {"to", "casts: round-to-nearest-even values tested in ops_tests.cpp"},
      {"quantize", "q8_0 rounding tested bit-exactly in q8_tests.cpp"},
      {"compare", "u8 masks tested in dtype_rules_tests.cpp"},
      {"multinomial", "seeded draws: frequencies against the weights in no_grad_tests.cpp"},
      {"packRhs", "inference-only: dotPacked checked against dot (PyTorch-parity tested) in packed_tests.cpp"},
      {"dotPacked", "inference-only: checked against dot/addDot in packed_tests.cpp"},
      {"rmsNormMulDotPacked", "inference-only: checked against rmsNormMul then dot in packed_tests.cpp"},
      {"splitSwiGluDotPacked", "inference-only: checked against swiglu then dot in packed_tests.cpp"},
      {"gegluQuantDotPacked", "inference-only: checked against geglu then the q8_0 dot in packed_tests.cpp"},
      {"prepareConv2dWeights", "inference only: conv2d's values in conv_prepared_tests.cpp"},
      {"conv2dPrepared", "inference only: conv2d's values in conv_prepared_tests.cpp"},
      {"conv2dPreparedRelu", "inference only: conv2dRelu's values in conv_prepared_tests.cpp"},
  };
  const auto parity = parityCases();
  const std::string table = readSource("web/ops.table.mjs");
  std::map<std::string, std::string> js_tests;
  for (const auto& e : std::filesystem::directory_iterator(FUCINA_SOURCE_DIR "/tests/js"))
    if (e.path().extension() == ".mjs") js_tests[e.path().filename().string()] = readSource("tests/js/" + e.path().filename().string());

  const auto ops = publicOps();
  REQUIRE(ops.size() > 120);
  int complete = 0;
  std::printf("op coverage (%zu ops): forward/VJP/gradcheck (native) | parity | JS\n", ops.size());
  for (const std::string& op : ops) {
    INFO(op);
    const bool differentiable = !constant_results.count(op);
    const auto h = home.find(op);
    const std::string file = h == home.end() ? "" : h->second;
    const std::string text = file.empty() ? "" : readSource("tests/cpp/" + file);
    const bool forward = mentions(text, op);
    const bool grad = !differentiable || text.find("gradcheck") != std::string::npos;
    const auto pc = parity.find(op);
    std::string parity_cell = pc != parity.end() ? pc->second.families + " (" + std::to_string(pc->second.cases) + ")" : "";
    if (pc != parity.end() && differentiable && pc->second.with_grads == 0) parity_cell.clear();  // values only is not enough
    if (parity_cell.empty() && no_counterpart.count(op)) parity_cell = "none: " + no_counterpart.at(op);
    // Hand-written ops are the keys of the table's HAND_WRITTEN list (rope: two forms; the prepared
    // convolution: a handle).
    const size_t hand_written = table.find("export const HAND_WRITTEN");
    const bool in_table = table.find("'" + op + "'") != std::string::npos ||
                          (hand_written != std::string::npos && table.find("\n  " + op + ": ", hand_written) != std::string::npos);
    std::string js_cell;
    for (const auto& [name, src] : js_tests)
      if (mentions(src, op) || (name == "ops_parity.test.mjs" && pc != parity.end())) js_cell += (js_cell.empty() ? "" : " ") + name;
    if (!in_table) js_cell.clear();
    const bool ok = forward && grad && !parity_cell.empty() && !js_cell.empty();
    complete += ok;
    std::printf("  %-18s %-22s %-24s | %s\n", op.c_str(), forward ? file.c_str() : "MISSING",
                parity_cell.empty() ? "MISSING" : parity_cell.substr(0, 60).c_str(),
                js_cell.empty() ? "MISSING" : js_cell.substr(0, 70).c_str());
    CHECK(forward);
    CHECK(grad);
    CHECK(!parity_cell.empty());
    CHECK(!js_cell.empty());
  }
  std::printf("op coverage: %d of %zu ops complete\n", complete, ops.size());
}
