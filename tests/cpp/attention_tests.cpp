// rope and groupedAttention: rope against a scalar reference in both modes and from both sources,
// attention against a reference composed of existing ops (indexSelect, dot, maskedFill, softmax),
// gradchecks on awkward shapes and views, and bad inputs.
#include "test_helpers.h"

#include <cmath>
#include <string>

using fucina::AttentionOptions;
using fucina::ExecContext;
using fucina::RopeOptions;
using fucina::Tag;
using fucina::Tags;
using fucina::Tensor;
using test::wave;
using Mode = RopeOptions::Mode;

namespace {

// RoPE by the formula, over x laid out as [rows, T, D] (row-major).
std::vector<float> ropeReference(const std::vector<float>& x, int64_t T, int64_t D, int64_t offset,
                                 double base, Mode mode) {
  std::vector<float> y(x.size());
  const int64_t half = D / 2;
  for (size_t r = 0; r < x.size() / static_cast<size_t>(T * D); ++r)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t i = 0; i < half; ++i) {
        const double angle = static_cast<double>(offset + t) * std::pow(base, -2.0 * i / D);
        const int64_t a = mode == Mode::half ? i : 2 * i;
        const int64_t b = mode == Mode::half ? i + half : 2 * i + 1;
        const size_t row = r * static_cast<size_t>(T * D) + static_cast<size_t>(t * D);
        const double x0 = x[row + a], x1 = x[row + b];
        y[row + a] = static_cast<float>(x0 * std::cos(angle) - x1 * std::sin(angle));
        y[row + b] = static_cast<float>(x0 * std::sin(angle) + x1 * std::cos(angle));
      }
  return y;
}

// cos and sin tables {t: rows, d: D/2} for base.
std::pair<Tensor, Tensor> ropeTables(ExecContext& ctx, int64_t rows, int64_t D, double base) {
  std::vector<float> c, s;
  for (int64_t t = 0; t < rows; ++t)
    for (int64_t i = 0; i < D / 2; ++i) {
      c.push_back(static_cast<float>(std::cos(t * std::pow(base, -2.0 * i / D))));
      s.push_back(static_cast<float>(std::sin(t * std::pow(base, -2.0 * i / D))));
    }
  return {Tensor::fromSlice(ctx, {"t", "d"}, {rows, D / 2}, c),
          Tensor::fromSlice(ctx, {"t", "d"}, {rows, D / 2}, s)};
}

void checkClose(const std::vector<float>& got, const std::vector<float>& want, double tol = 1e-5) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i);
    CHECK(got[i] == Approx(want[i]).margin(tol));
  }
}

Tensor renamed(ExecContext& c, const Tensor& t, Tag from, Tag to) {
  Tags tags = t.tags();
  for (Tag& tag : tags)
    if (tag == from) tag = to;
  return t.withTags(c, tags);
}

// Attention composed of existing ops: kv heads repeated by indexSelect, scores by dot over d,
// the causal mask by maskedFill, softmax over keys (axis "s"), dot with v over s.
Tensor composedAttention(ExecContext& c, const Tensor& q, const Tensor& k, const Tensor& v,
                         bool causal, double scale) {
  const int64_t H = q.extent("head"), group = H / k.extent("head");
  const int64_t Tq = q.extent("t"), Tk = k.extent("t");
  std::vector<int64_t> heads;
  for (int64_t h = 0; h < H; ++h) heads.push_back(h / group);
  const Tensor ids = Tensor::fromInts(c, {"head"}, {H}, heads);
  const Tensor ke = renamed(c, k.indexSelect(c, "head", ids), "t", "s");
  const Tensor ve = renamed(c, v.indexSelect(c, "head", ids), "t", "s");
  Tensor scores = q.dot(c, ke, "d").scale(c, scale);
  if (causal) {
    std::vector<int64_t> mask;
    for (int64_t i = 0; i < Tq; ++i)
      for (int64_t j = 0; j < Tk; ++j) mask.push_back(j > i + Tk - Tq ? 1 : 0);
    scores = scores.maskedFill(c, Tensor::fromInts(c, {"t", "s"}, {Tq, Tk}, mask, fucina::DType::u8), -1e30);
  }
  return scores.softmax(c, "s").dot(c, ve, "s");
}

struct AttentionCase {
  const char* name;
  Tags q_tags, k_tags, v_tags;
  fucina::Extents q_shape, k_shape, v_shape;
  bool causal = true;
  std::optional<double> scale = std::nullopt;
};

std::vector<AttentionCase> attentionCases() {
  return {
      {"H = Hkv, Tq = Tk", {"b", "head", "t", "d"}, {"b", "head", "t", "d"}, {"b", "head", "t", "d"},
       {2, 2, 3, 4}, {2, 2, 3, 4}, {2, 2, 3, 4}},
      {"H = 2·Hkv, Tq < Tk, Dv != D", {"b", "head", "t", "d"}, {"b", "head", "t", "d"}, {"b", "head", "t", "d"},
       {1, 4, 2, 3}, {1, 2, 5, 3}, {1, 2, 5, 2}},
      {"Tq = 1 (decoding)", {"head", "t", "d"}, {"head", "t", "d"}, {"head", "t", "d"},
       {3, 1, 4}, {1, 4, 4}, {1, 4, 4}},
      {"non-causal, Tq > Tk", {"b", "head", "t", "d"}, {"b", "head", "t", "d"}, {"b", "head", "t", "d"},
       {2, 2, 4, 3}, {2, 1, 3, 3}, {2, 1, 3, 3}, false},
      {"custom scale, permuted batch axes", {"t", "x", "head", "b", "d"}, {"head", "b", "d", "x", "t"},
       {"d", "t", "b", "x", "head"}, {3, 2, 2, 2, 2}, {1, 2, 2, 2, 4}, {3, 4, 2, 2, 1}, true, 0.7},
  };
}

Tensor makeInput(ExecContext& ctx, const Tags& tags, const fucina::Extents& shape, float phase, bool variable) {
  const auto values = wave(static_cast<size_t>(fucina::numelOf(shape)), 1.1f, phase, 0.7f);
  return variable ? Tensor::variableFromSlice(ctx, tags, shape, values) : Tensor::fromSlice(ctx, tags, shape, values);
}

}  // namespace

// ------------------------------------------------------------------------------------ rope

TEST_CASE("rope matches the scalar reference in both modes, with offset and base") {
  ExecContext ctx;
  const auto xv = wave(2 * 3 * 6, 1.5f, 0.4f, 0.8f);
  Tensor x = Tensor::fromSlice(ctx, {"b", "t", "d"}, {2, 3, 6}, xv);
  for (Mode mode : {Mode::half, Mode::interleaved}) {
    INFO("mode " << (mode == Mode::half ? "half" : "interleaved"));
    checkClose(x.rope(ctx, {.mode = mode}).toVector(), ropeReference(xv, 3, 6, 0, 10000, mode));
    const RopeOptions o{.base = 100, .offset = 5, .mode = mode};
    const auto want = ropeReference(xv, 3, 6, 5, 100, mode);
    checkClose(x.rope(ctx, o).toVector(), want);
    // A permuted view: same values, the view's axis order.
    Tensor y = x.permuteTo(ctx, {"d", "b", "t"}).rope(ctx, o);
    CHECK(y.tags() == Tags{"d", "b", "t"});
    checkClose(y.permuteTo(ctx, {"b", "t", "d"}).contiguous(ctx).toVector(), want);
    // The table form agrees with the angles computed on the fly.
    auto [cos, sin] = ropeTables(ctx, 9, 6, 100);
    checkClose(x.rope(ctx, cos, sin, o).toVector(), want);
    checkClose(x.rope(ctx, cos.permuteTo(ctx, {"d", "t"}), sin.permuteTo(ctx, {"d", "t"}), o).toVector(), want);
  }
}

TEST_CASE("rope: hand-computed values, D = 2 and custom axis names") {
  ExecContext ctx;
  // Positions 0 and 1 of the vector (1, 0): angles 0 and 1 (theta_0 = 1 for any base).
  Tensor x = Tensor::fromSlice(ctx, {"pos", "e"}, {2, 2}, {1, 0, 1, 0});
  const RopeOptions o{.position = "pos", .dim = "e"};
  checkClose(x.rope(ctx, o).toVector(), {1, 0, std::cos(1.0f), std::sin(1.0f)});
  // D = 4, half mode pairs (0, 2) and (1, 3); at position 1 theta_1 = base^(-1/2) = 0.1.
  Tensor y = Tensor::fromSlice(ctx, {"t", "d"}, {1, 4}, {1, 2, 3, 4});
  const float c0 = std::cos(1.0f), s0 = std::sin(1.0f), c1 = std::cos(0.1f), s1 = std::sin(0.1f);
  checkClose(y.rope(ctx, {.base = 100, .offset = 1}).toVector(),
             {1 * c0 - 3 * s0, 2 * c1 - 4 * s1, 1 * s0 + 3 * c0, 2 * s1 + 4 * c1});
  checkClose(y.rope(ctx, {.base = 100, .offset = 1, .mode = Mode::interleaved}).toVector(),
             {1 * c0 - 2 * s0, 1 * s0 + 2 * c0, 3 * c1 - 4 * s1, 3 * s1 + 4 * c1});
}

TEST_CASE("rope passes gradcheck on awkward shapes and views, from both sources") {
  ExecContext ctx(fucina::ExecOptions{.threads = 1});
  Tensor one = Tensor::variableFromSlice(ctx, {"t", "d"}, {1, 2}, {0.3f, -0.8f});
  Tensor w1 = Tensor::fromSlice(ctx, {"t", "d"}, {1, 2}, {1.5f, -0.7f});
  Tensor x = Tensor::variableFromSlice(ctx, {"h", "t", "d"}, {3, 2, 6}, wave(36, 1.2f, 0.1f, 0.9f));
  Tensor w = Tensor::fromSlice(ctx, {"h", "t", "d"}, {3, 2, 6}, wave(36, 1, 1.3f, 0.6f));
  // Named tensors, not a structured binding: clang 14 (the sanitizer build) cannot capture those.
  const auto tables = ropeTables(ctx, 6, 6, 50);
  const Tensor& cos = tables.first;
  const Tensor& sin = tables.second;
  for (Mode mode : {Mode::half, Mode::interleaved}) {
    INFO("mode " << (mode == Mode::half ? "half" : "interleaved"));
    const RopeOptions o{.base = 50, .offset = 3, .mode = mode};
    fucina::gradcheck(ctx, [&](ExecContext& c) { return one.rope(c, o).mul(c, w1).sumAll(c); }, {&one});
    fucina::gradcheck(ctx, [&](ExecContext& c) { return x.rope(c, o).mul(c, w).sumAll(c); }, {&x});
    fucina::gradcheck(ctx, [&](ExecContext& c) { return x.rope(c, cos, sin, o).mul(c, w).sumAll(c); }, {&x});
    // Permuted and narrowed (non-contiguous) input; T = 1 along the narrowed position axis.
    fucina::gradcheck(ctx, [&](ExecContext& c) {
      return x.permuteTo(c, {"d", "t", "h"}).narrow(c, "t", 1, 1).rope(c, o)
          .mul(c, w.narrow(c, "t", 0, 1)).sumAll(c);
    }, {&x});
  }
  // The two sources give the same gradient.
  x.rope(ctx, {.base = 50, .offset = 3}).mul(ctx, w).sumAll(ctx).backward(ctx);
  const auto g1 = test::gradOf(ctx, x);
  x.zeroGrad();
  x.rope(ctx, cos, sin, {.base = 50, .offset = 3}).mul(ctx, w).sumAll(ctx).backward(ctx);
  checkClose(test::gradOf(ctx, x), g1);
}

TEST_CASE("rope: bad inputs") {
  ExecContext ctx;
  Tensor x = Tensor::ones(ctx, {"t", "d"}, {3, 4});
  auto [cos, sin] = ropeTables(ctx, 4, 4, 10000);
  REQUIRE_THROWS_WITH(x.rope(ctx, {.position = "pos"}), Catch::Contains("'pos'"));
  REQUIRE_FUCINA_ERROR(x.rope(ctx, {.position = "pos"}), ShapeMismatch);
  REQUIRE_FUCINA_ERROR(x.rope(ctx, {.dim = "e"}), ShapeMismatch);
  REQUIRE_FUCINA_ERROR(Tensor::ones(ctx, {"t", "d"}, {3, 5}).rope(ctx), InvalidArgument);
  REQUIRE_THROWS_WITH(Tensor::ones(ctx, {"t", "d"}, {3, 5}).rope(ctx), Catch::Contains("'d'"));
  REQUIRE_FUCINA_ERROR(x.rope(ctx, {.position = "d"}), InvalidArgument);
  REQUIRE_FUCINA_ERROR(x.rope(ctx, {.offset = -1}), InvalidArgument);
  REQUIRE_FUCINA_ERROR(x.rope(ctx, {.base = 0}), InvalidArgument);
  REQUIRE_FUCINA_ERROR(Tensor::ones(ctx, {"t", "d"}, {3, 4}, fucina::DType::i32).rope(ctx), DTypeMismatch);
  // Tables: too few positions for offset + T, wrong dim extent (D instead of D/2), extra axes.
  REQUIRE_FUCINA_ERROR(x.rope(ctx, cos, sin, {.offset = 2}), ShapeMismatch);
  auto [cos4, sin4] = ropeTables(ctx, 4, 8, 10000);
  REQUIRE_FUCINA_ERROR(x.rope(ctx, cos4, sin4), ShapeMismatch);
  REQUIRE_FUCINA_ERROR(x.rope(ctx, cos.insertAxis(ctx, "h", 0), sin), ShapeMismatch);
  // Tables take no gradient.
  Tensor vc = Tensor::variable(ctx, cos);
  REQUIRE_FUCINA_ERROR(x.rope(ctx, vc, sin), UnsupportedGradient);
  fucina::NoGradScope s = fucina::noGrad();
  CHECK(x.rope(ctx, vc, sin).toVector() == x.rope(ctx, cos, sin).toVector());
}

// ------------------------------------------------------------------------ groupedAttention

TEST_CASE("groupedAttention matches the composed reference in value and gradient") {
  ExecContext ctx(fucina::ExecOptions{.threads = 2});
  for (const AttentionCase& tc : attentionCases()) {
    INFO(tc.name);
    Tensor q = makeInput(ctx, tc.q_tags, tc.q_shape, 0.1f, true);
    Tensor k = makeInput(ctx, tc.k_tags, tc.k_shape, 0.9f, true);
    Tensor v = makeInput(ctx, tc.v_tags, tc.v_shape, 1.7f, true);
    const double scale = tc.scale ? *tc.scale : 1 / std::sqrt(double(q.extent("d")));
    Tensor got = Tensor::groupedAttention(ctx, q, k, v, {.causal = tc.causal, .scale = tc.scale});
    Tensor want = composedAttention(ctx, q, k, v, tc.causal, scale);
    // Result axes: q's batch axes in q's order, then head, t, d.
    Tags order;
    for (Tag t : q.tags())
      if (!(t == "head") && !(t == "t") && !(t == "d")) order.push_back(t);
    for (Tag t : {"head", "t", "d"}) order.push_back(t);
    CHECK(got.tags() == order);
    CHECK(got.extent("d") == v.extent("d"));
    checkClose(got.toVector(), want.permuteTo(ctx, order).contiguous(ctx).toVector());
    // Gradients of a weighted sum agree with the composed graph's.
    Tensor w = makeInput(ctx, got.tags(), got.shape(), 2.3f, false);
    got.mul(ctx, w).sumAll(ctx).backward(ctx);
    const auto gq = test::gradOf(ctx, q), gk = test::gradOf(ctx, k), gv = test::gradOf(ctx, v);
    for (Tensor* t : {&q, &k, &v}) t->zeroGrad();
    want.mul(ctx, w).sumAll(ctx).backward(ctx);
    checkClose(gq, test::gradOf(ctx, q));
    checkClose(gk, test::gradOf(ctx, k));
    checkClose(gv, test::gradOf(ctx, v));
  }
}

TEST_CASE("groupedAttention reads slices of a fused projection in place and takes a broadcast gradient") {
  // q, k and v as slices of one {b, t, part, head, d} tensor (each tile strided in time), and the
  // gradient of a plain sum, which reaches the op as a stride-0 broadcast.
  ExecContext ctx(fucina::ExecOptions{.threads = 2});
  Tensor qkv = makeInput(ctx, {"b", "t", "part", "head", "d"}, {2, 5, 3, 2, 4}, 0.4f, true);
  for (bool causal : {true, false}) {
    INFO("causal " << causal);
    auto part = [&](int64_t i) { return qkv.select(ctx, "part", i); };  // fresh slices per graph
    Tensor got = Tensor::groupedAttention(ctx, part(0), part(1), part(2), {.causal = causal});
    Tensor want = composedAttention(ctx, part(0), part(1), part(2), causal, 0.5);
    checkClose(got.toVector(), want.permuteTo(ctx, got.tags()).contiguous(ctx).toVector());
    got.sumAll(ctx).backward(ctx);
    const auto g_fast = test::gradOf(ctx, qkv);
    qkv.zeroGrad();
    want.sumAll(ctx).backward(ctx);
    checkClose(g_fast, test::gradOf(ctx, qkv));
    qkv.zeroGrad();
  }
}

TEST_CASE("groupedAttention: causal with Tq = Tk keeps row 0 on key 0, non-causal rows see all keys") {
  ExecContext ctx;
  Tensor q = Tensor::fromSlice(ctx, {"head", "t", "d"}, {1, 2, 1}, {1, 1});
  Tensor k = Tensor::fromSlice(ctx, {"head", "t", "d"}, {1, 2, 1}, {0, std::log(3.0f)});
  Tensor v = Tensor::fromSlice(ctx, {"head", "t", "d"}, {1, 2, 1}, {10, 20});
  // Scores (scale 1) are 0 and ln 3: row 1 weighs the keys 1/4 and 3/4.
  checkClose(Tensor::groupedAttention(ctx, q, k, v).toVector(), {10, 17.5f});
  checkClose(Tensor::groupedAttention(ctx, q, k, v, {.causal = false}).toVector(), {17.5f, 17.5f});
  checkClose(Tensor::groupedAttention(ctx, q, k, v, {.causal = false, .scale = 0}).toVector(), {15, 15});
}

TEST_CASE("groupedAttention passes gradcheck for q, k and v, including narrowed views") {
  ExecContext ctx(fucina::ExecOptions{.threads = 1});
  for (const AttentionCase& tc : attentionCases()) {
    INFO(tc.name);
    Tensor q = makeInput(ctx, tc.q_tags, tc.q_shape, 0.1f, true);
    Tensor k = makeInput(ctx, tc.k_tags, tc.k_shape, 0.9f, true);
    Tensor v = makeInput(ctx, tc.v_tags, tc.v_shape, 1.7f, true);
    const AttentionOptions o{.causal = tc.causal, .scale = tc.scale};
    Tensor probe = Tensor::groupedAttention(ctx, q, k, v, o);
    Tensor w = makeInput(ctx, probe.tags(), probe.shape(), 2.3f, false);
    fucina::gradcheck(ctx, [&](ExecContext& c) { return Tensor::groupedAttention(c, q, k, v, o).mul(c, w).sumAll(c); },
                      {&q, &k, &v});
  }
  // Narrowed, permuted operands: the last 2 queries against the first 4 keys.
  Tensor q = makeInput(ctx, {"d", "t", "head"}, {3, 4, 2}, 0.3f, true);
  Tensor k = makeInput(ctx, {"t", "head", "d"}, {6, 1, 3}, 1.1f, true);
  Tensor v = makeInput(ctx, {"head", "d", "t"}, {1, 5, 6}, 2.1f, true);
  Tensor w = makeInput(ctx, {"head", "t", "d"}, {2, 2, 4}, 0.5f, false);
  fucina::gradcheck(ctx, [&](ExecContext& c) {
    return Tensor::groupedAttention(c, q.narrow(c, "t", 2, 2), k.narrow(c, "t", 0, 4),
                                    v.narrow(c, "t", 0, 4).narrow(c, "d", 1, 4))
        .mul(c, w).sumAll(c);
  }, {&q, &k, &v});
}

TEST_CASE("groupedAttention: bad inputs name the tags") {
  ExecContext ctx;
  Tensor q = Tensor::ones(ctx, {"b", "head", "t", "d"}, {2, 4, 3, 8});
  Tensor k = Tensor::ones(ctx, {"b", "head", "t", "d"}, {2, 2, 3, 8});
  Tensor v = Tensor::ones(ctx, {"b", "head", "t", "d"}, {2, 2, 3, 5});
  using Catch::Contains;
  // Missing axis.
  Tensor noHead = Tensor::ones(ctx, {"b", "t", "d"}, {2, 3, 8});
  REQUIRE_FUCINA_ERROR(Tensor::groupedAttention(ctx, q, noHead, v), ShapeMismatch);
  REQUIRE_THROWS_WITH(Tensor::groupedAttention(ctx, q, noHead, v), Contains("'head'") && Contains("k"));
  REQUIRE_THROWS_WITH(Tensor::groupedAttention(ctx, q, k, v, {.time = "s"}), Contains("'s'"));
  // H not a multiple of Hkv.
  Tensor k3 = Tensor::ones(ctx, {"b", "head", "t", "d"}, {2, 3, 3, 8});
  Tensor v3 = Tensor::ones(ctx, {"b", "head", "t", "d"}, {2, 3, 3, 5});
  REQUIRE_FUCINA_ERROR(Tensor::groupedAttention(ctx, q, k3, v3), ShapeMismatch);
  REQUIRE_THROWS_WITH(Tensor::groupedAttention(ctx, q, k3, v3), Contains("'head'") && Contains("multiple"));
  // Dim mismatch between q and k.
  Tensor k7 = Tensor::ones(ctx, {"b", "head", "t", "d"}, {2, 2, 3, 7});
  REQUIRE_FUCINA_ERROR(Tensor::groupedAttention(ctx, q, k7, v), ShapeMismatch);
  REQUIRE_THROWS_WITH(Tensor::groupedAttention(ctx, q, k7, v), Contains("'d'"));
  // k and v disagree on time.
  REQUIRE_FUCINA_ERROR(Tensor::groupedAttention(ctx, q, k, Tensor::ones(ctx, {"b", "head", "t", "d"}, {2, 2, 4, 5})),
                       ShapeMismatch);
  // Batch axes differ: an extra axis, a missing one, a different extent.
  Tensor kx = Tensor::ones(ctx, {"x", "b", "head", "t", "d"}, {1, 2, 2, 3, 8});
  REQUIRE_FUCINA_ERROR(Tensor::groupedAttention(ctx, q, kx, v), ShapeMismatch);
  REQUIRE_THROWS_WITH(Tensor::groupedAttention(ctx, q, kx, v), Contains("'x'"));
  REQUIRE_FUCINA_ERROR(Tensor::groupedAttention(ctx, q, k.select(ctx, "b", 0), v), ShapeMismatch);
  Tensor kb = Tensor::ones(ctx, {"b", "head", "t", "d"}, {3, 2, 3, 8});
  REQUIRE_THROWS_WITH(Tensor::groupedAttention(ctx, q, kb, v), Contains("'b'"));
  // A query that sees no key, and options that name one axis twice.
  Tensor kShort = Tensor::ones(ctx, {"b", "head", "t", "d"}, {2, 2, 2, 8});
  Tensor vShort = Tensor::ones(ctx, {"b", "head", "t", "d"}, {2, 2, 2, 5});
  REQUIRE_FUCINA_ERROR(Tensor::groupedAttention(ctx, q, kShort, vShort), InvalidArgument);
  CHECK(Tensor::groupedAttention(ctx, q, kShort, vShort, {.causal = false}).extent("t") == 3);
  REQUIRE_FUCINA_ERROR(Tensor::groupedAttention(ctx, q, k, v, {.time = "d"}), InvalidArgument);
  // f16/bf16/q8_0 k and v are KV-cache constants (q8_tests.cpp); f64 and integers are not.
  REQUIRE_FUCINA_ERROR(Tensor::groupedAttention(ctx, q, k, v.to(ctx, fucina::DType::f64)), DTypeMismatch);
  REQUIRE_FUCINA_ERROR(Tensor::groupedAttention(ctx, q, k.to(ctx, fucina::DType::i32), v), DTypeMismatch);
}

TEST_CASE("rope and groupedAttention give the same values and gradients on 1 and 2 threads") {
  // Shapes large enough that the tiles (and rope's rows) are split over the pool.
  auto run = [](int threads) {
    ExecContext ctx(fucina::ExecOptions{.threads = threads});
    Tensor q = makeInput(ctx, {"b", "head", "t", "d"}, {2, 4, 64, 32}, 0.1f, true);
    Tensor k = makeInput(ctx, {"b", "head", "t", "d"}, {2, 2, 64, 32}, 0.9f, true);
    Tensor v = makeInput(ctx, {"b", "head", "t", "d"}, {2, 2, 64, 32}, 1.7f, true);
    Tensor x = makeInput(ctx, {"b", "t", "d"}, {16, 64, 32}, 0.4f, true);
    Tensor y = Tensor::groupedAttention(ctx, q.rope(ctx), k.rope(ctx), v);
    Tensor r = x.rope(ctx, {.mode = Mode::interleaved});
    Tensor wy = makeInput(ctx, y.tags(), y.shape(), 2.3f, false);
    Tensor wr = makeInput(ctx, r.tags(), r.shape(), 0.6f, false);
    y.mul(ctx, wy).sumAll(ctx).add(ctx, r.mul(ctx, wr).sumAll(ctx)).backward(ctx);
    return std::vector<std::vector<float>>{y.toVector(), r.toVector(), test::gradOf(ctx, q),
                                           test::gradOf(ctx, k), test::gradOf(ctx, v), test::gradOf(ctx, x)};
  };
  const auto one = run(1), two = run(2);
  for (size_t i = 0; i < one.size(); ++i) {
    INFO("output " << i);
    checkClose(two[i], one[i], 1e-6);
  }
}
