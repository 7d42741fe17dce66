// Contractions beyond dot (ops/contract.cpp): addDot, matmul, einsum, einsumMany, dotTernarySte
// and transpose. Forward
// values against a scalar einsum loop, gradcheck on several structures and awkward layouts
// (size-1 axes, odd sizes, permuted and narrowed views), and bad inputs with their codes.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>
#include <vector>

#include <fucina/fucina.h>
#include "test_helpers.h"

using fucina::DType;
using fucina::Extents;
using fucina::ExecContext;
using fucina::Tag;
using fucina::Tags;
using fucina::Tensor;

namespace {

// The n-ary scalar reference: out[...] = sum over every other index of the product of the operands.
std::vector<float> einsumManyRef(const std::vector<Tensor>& ops, const Tags& out) {
  Tags all;
  Extents ext;
  for (const Tensor& t : ops)
    for (size_t d = 0; d < t.rank(); ++d)
      if (!fucina::hasTag(all, t.tags()[d])) all.push_back(t.tags()[d]), ext.push_back(t.shape()[d]);
  std::vector<std::vector<float>> vals;
  for (const Tensor& t : ops) vals.push_back(t.toVector());
  int64_t out_n = 1;
  for (Tag t : out) out_n *= ext[*fucina::findTag(all, t)];
  std::vector<double> acc(static_cast<size_t>(out_n), 0.0);
  std::vector<int64_t> idx(all.size(), 0);
  auto flat = [&](const Tags& tags) {
    int64_t f = 0;
    for (Tag t : tags) {
      const size_t i = *fucina::findTag(all, t);
      f = f * ext[i] + idx[i];
    }
    return static_cast<size_t>(f);
  };
  for (int64_t n = fucina::numelOf(ext); n > 0; --n) {
    double p = 1;
    for (size_t k = 0; k < ops.size(); ++k) p *= vals[k][flat(ops[k].tags())];
    acc[flat(out)] += p;
    for (size_t d = all.size(); d-- > 0;) {
      if (++idx[d] < ext[d]) break;
      idx[d] = 0;
    }
  }
  return {acc.begin(), acc.end()};
}

// The binary case: tags of a and b not in out are summed.
std::vector<float> einsumRef(const Tensor& a, const Tensor& b, const Tags& out) { return einsumManyRef({a, b}, out); }

void requireClose(const std::vector<float>& got, const std::vector<float>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) REQUIRE(got[i] == Approx(want[i]).margin(1e-4));
}

Tensor var(ExecContext& ctx, Tags tags, Extents shape, float phase) {
  const auto n = static_cast<size_t>(fucina::numelOf(shape));
  return Tensor::variableFromSlice(ctx, std::move(tags), std::move(shape), test::wave(n, 1, phase, 0.7f));
}

// sum(tanh(y) * w) with fixed weights: a loss that sees every element's position.
Tensor probe(ExecContext& c, const Tensor& y) {
  Tensor w = Tensor::fromSlice(c, y.tags(), y.shape(), test::wave(size_t(y.numel()), 1, 0.3f, 0.9f));
  return y.tanh(c).mul(c, w).sumAll(c);
}

}  // namespace

// ---------------------------------------------------------------- einsum

TEST_CASE("einsum: values against a scalar loop on several structures") {
  struct Case {
    const char* name;
    Tags a_tags, b_tags;
    Extents a_shape, b_shape;
    Tags out;
  };
  const std::vector<Case> cases = {
      {"outer product", {"i"}, {"j"}, {3}, {4}, {"i", "j"}},
      {"matmul", {"i", "k"}, {"k", "j"}, {3, 5}, {5, 2}, {"i", "j"}},
      {"batched matmul", {"b", "i", "k"}, {"b", "k", "j"}, {2, 3, 4}, {2, 4, 5}, {"b", "i", "j"}},
      {"trace-like, two axes contracted", {"i", "j"}, {"j", "i"}, {3, 4}, {4, 3}, {}},
      {"two contracted, one batch", {"b", "i", "j"}, {"j", "i", "b"}, {2, 3, 4}, {4, 3, 2}, {"b"}},
      {"sum-away axes", {"i", "s", "k"}, {"k", "t", "j"}, {2, 3, 4}, {4, 1, 3}, {"i", "j"}},
      {"out order permuted", {"b", "i", "k"}, {"b", "k", "j"}, {2, 3, 4}, {2, 4, 5}, {"j", "b", "i"}},
      {"elementwise product", {"i", "j"}, {"j", "i"}, {3, 2}, {2, 3}, {"j", "i"}},
      {"size-1 and odd", {"u", "i", "k"}, {"k", "u"}, {1, 7, 3}, {3, 1}, {"i", "u"}},
      {"one operand summed to a scalar", {"i"}, {"j", "s"}, {3}, {4, 2}, {"j"}},
      {"everything summed", {"i"}, {"j"}, {3}, {4}, {}},
  };
  ExecContext ctx(fucina::ExecOptions{.threads = 1});
  for (const Case& cs : cases) {
    INFO(cs.name);
    Tensor a = var(ctx, cs.a_tags, cs.a_shape, 0.1f);
    Tensor b = var(ctx, cs.b_tags, cs.b_shape, 0.6f);
    Tensor y = Tensor::einsum(ctx, a, b, cs.out);
    CHECK(y.tags() == cs.out);
    requireClose(y.toVector(), einsumRef(a, b, cs.out));
    // Axes by tag: a reversed view of each operand gives the same result.
    Tags ra(cs.a_tags.rbegin(), cs.a_tags.rend()), rb(cs.b_tags.rbegin(), cs.b_tags.rend());
    requireClose(Tensor::einsum(ctx, a.permuteTo(ctx, ra), b.permuteTo(ctx, rb), cs.out).toVector(),
                 y.toVector());
    fucina::gradcheck(ctx, [&](ExecContext& c) { return probe(c, Tensor::einsum(c, a, b, cs.out)); },
                      {&a, &b});
    fucina::gradcheck(ctx, [&](ExecContext& c) {
      return probe(c, Tensor::einsum(c, a.permuteTo(c, ra), b.permuteTo(c, rb), cs.out));
    }, {&a, &b});
  }
}

TEST_CASE("einsum: narrowed operand and the same tensor on both sides") {
  ExecContext ctx;
  Tensor w = var(ctx, {"k", "j"}, {4, 6}, 0.2f);
  Tensor x = var(ctx, {"i", "k"}, {3, 4}, 0.5f);
  Tensor wn = w.narrow(ctx, "j", 1, 3);
  requireClose(Tensor::einsum(ctx, x, wn, {"j", "i"}).toVector(), einsumRef(x, wn.contiguous(ctx), {"j", "i"}));
  fucina::gradcheck(ctx, [&](ExecContext& c) {
    return probe(c, Tensor::einsum(c, x, w.narrow(c, "j", 1, 3), {"j", "i"}));
  }, {&x, &w});
  // Gram matrix: x·xᵀ over k, written with a renamed view of x.
  fucina::gradcheck(ctx, [&](ExecContext& c) {
    return probe(c, Tensor::einsum(c, x, x.withTags(c, {"i2", "k"}), {"i", "i2"}));
  }, {&x});
}

TEST_CASE("einsum: bad inputs") {
  ExecContext ctx;
  Tensor a = Tensor::ones(ctx, {"i", "k"}, {2, 3});
  Tensor b = Tensor::ones(ctx, {"k", "j"}, {3, 4});
  CHECK_FUCINA_ERROR(Tensor::einsum(ctx, a, b, {"i", "z"}), ShapeMismatch);
  CHECK_THROWS_WITH(Tensor::einsum(ctx, a, b, {"i", "z"}), Catch::Contains("'z'"));
  CHECK_FUCINA_ERROR(Tensor::einsum(ctx, a, b, {"i", "i"}), ShapeMismatch);
  CHECK_FUCINA_ERROR(Tensor::einsum(ctx, a, Tensor::ones(ctx, {"k", "j"}, {4, 4}), {"i", "j"}), ShapeMismatch);
  CHECK_THROWS_WITH(Tensor::einsum(ctx, a, Tensor::ones(ctx, {"k", "j"}, {4, 4}), {"i", "j"}),
                    Catch::Contains("'k'"));
  CHECK_FUCINA_ERROR(Tensor::einsum(ctx, a, Tensor::ones(ctx, {"k"}, {3}, fucina::DType::i32), {"i"}),
                     DTypeMismatch);
}

// ---------------------------------------------------------------- addDot

TEST_CASE("addDot: dot plus a broadcast bias, fused, on awkward sizes and threads") {
  for (int threads : {1, 2}) {
    ExecContext ctx(fucina::ExecOptions{.threads = threads});
    for (auto [m, n, k] : std::vector<std::array<int64_t, 3>>{{1, 1, 1}, {3, 5, 7}, {17, 1, 33}, {2, 3, 0}}) {
      INFO(threads << " threads, m=" << m << " n=" << n << " k=" << k);
      Tensor x = var(ctx, {"batch", "in"}, {m, k}, 0.1f);
      Tensor w = var(ctx, {"out", "in"}, {n, k}, 0.4f);
      Tensor bias = var(ctx, {"out"}, {n}, 0.8f);
      const std::vector<float> prod = einsumRef(x, w, {"batch", "out"}), bv = bias.toVector();
      std::vector<float> want(prod.size());
      for (size_t i = 0; i < want.size(); ++i) want[i] = prod[i] + bv[i % size_t(n)];
      Tensor y = x.addDot(ctx, w, "in", bias);
      CHECK(y.tags() == Tags{"batch", "out"});
      requireClose(y.toVector(), want);
      // Same values through a transposed (strided) weight view.
      requireClose(x.addDot(ctx, w.permuteTo(ctx, {"in", "out"}), "in", bias).toVector(), want);
    }
  }
}

TEST_CASE("addDot: bias over any subset of the result's axes, gradcheck of all three") {
  ExecContext ctx(fucina::ExecOptions{.threads = 1});
  Tensor x = var(ctx, {"b", "t", "in"}, {2, 3, 4}, 0.1f);
  Tensor w = var(ctx, {"in", "out"}, {4, 5}, 0.4f);
  for (auto [tags, shape] : std::vector<std::pair<Tags, Extents>>{
           {{"out"}, {5}}, {{"t", "out"}, {3, 5}}, {{"out", "b"}, {5, 2}}, {{}, {}}, {{"b", "t", "out"}, {2, 3, 5}}}) {
    INFO(fucina::describe(tags, shape));
    Tensor bias = var(ctx, tags, shape, 0.9f);
    Tensor y = x.addDot(ctx, w, "in", bias);
    requireClose(y.toVector(), x.dot(ctx, w, "in").add(ctx, bias).toVector());
    fucina::gradcheck(ctx, [&](ExecContext& c) { return probe(c, x.addDot(c, w, "in", bias)); }, {&x, &w, &bias});
  }
  // Permuted and narrowed operands, size-1 axis.
  Tensor wide = var(ctx, {"out", "in"}, {7, 4}, 0.3f);
  Tensor x1 = var(ctx, {"u", "in"}, {1, 4}, 0.15f);
  Tensor one = var(ctx, {"u", "out"}, {1, 3}, 0.7f);
  Tensor b3 = var(ctx, {"out"}, {3}, 0.35f);
  fucina::gradcheck(ctx, [&](ExecContext& c) {
    Tensor ws = wide.narrow(c, "out", 2, 3).permuteTo(c, {"in", "out"});
    return probe(c, x.permuteTo(c, {"in", "t", "b"}).addDot(c, ws, "in", b3))
        .add(c, probe(c, x1.permuteTo(c, {"in", "u"}).addDot(c, ws, "in", one.permuteTo(c, {"out", "u"}))));
  }, {&x, &x1, &wide, &one, &b3});
  // Only the bias tracked, or only the weights: the other gradients are not computed.
  Tensor xc = Tensor::fromSlice(ctx, {"b", "in"}, {2, 4}, test::wave(8, 1, 0.2f, 0.5f));
  Tensor bias = var(ctx, {"out"}, {5}, 0.5f);
  xc.addDot(ctx, w.detach(ctx), "in", bias).sumAll(ctx).backward(ctx);
  CHECK(test::gradOf(ctx, bias) == std::vector<float>(5, 2.0f));
}

TEST_CASE("addDot: bad inputs") {
  ExecContext ctx;
  Tensor x = Tensor::ones(ctx, {"batch", "in"}, {2, 3});
  Tensor w = Tensor::ones(ctx, {"out", "in"}, {4, 3});
  CHECK_FUCINA_ERROR(x.addDot(ctx, w, "in", Tensor::ones(ctx, {"in"}, {3})), ShapeMismatch);
  CHECK_THROWS_WITH(x.addDot(ctx, w, "in", Tensor::ones(ctx, {"zz"}, {4})), Catch::Contains("'zz'"));
  CHECK_FUCINA_ERROR(x.addDot(ctx, w, "in", Tensor::ones(ctx, {"out"}, {5})), ShapeMismatch);
  CHECK_THROWS_WITH(x.addDot(ctx, w, "in", Tensor::ones(ctx, {"out"}, {5})), Catch::Contains("'out'"));
  CHECK_FUCINA_ERROR(x.addDot(ctx, w, "k", Tensor::ones(ctx, {"out"}, {4})), ShapeMismatch);
  CHECK_FUCINA_ERROR(x.addDot(ctx, Tensor::ones(ctx, {"out", "in"}, {4, 5}), "in", Tensor::ones(ctx, {"out"}, {4})),
                     ShapeMismatch);
  // Integer operands are refused; 16-bit ones are typed branches (tests/cpp/typed_tests.cpp).
  CHECK_FUCINA_ERROR(x.addDot(ctx, w, "in", Tensor::ones(ctx, {"out"}, {4}, fucina::DType::i32)), DTypeMismatch);
  CHECK_FUCINA_ERROR(x.addDot(ctx, w, "in", Tensor::variableFromSlice(ctx, {"out"}, {4}, {1, 2, 3, 4}, fucina::DType::bf16)),
                     UnsupportedGradient);
}

// ---------------------------------------------------------------- matmul

TEST_CASE("matmul: positional product, 2-D, batched, transposed and permuted") {
  ExecContext ctx(fucina::ExecOptions{.threads = 1});
  // 2-D: the names of the contracted axes do not matter; n keeps y's tag.
  Tensor x = var(ctx, {"m", "k"}, {3, 4}, 0.1f);
  Tensor y = var(ctx, {"p", "n"}, {4, 5}, 0.4f);
  Tensor z = x.matmul(ctx, y);
  CHECK(z.tags() == Tags{"m", "n"});
  requireClose(z.toVector(), einsumRef(x, y.withTags(ctx, {"k", "n"}), {"m", "n"}));
  fucina::gradcheck(ctx, [&](ExecContext& c) { return probe(c, x.matmul(c, y)); }, {&x, &y});
  // y's n may reuse the name of this's contracted axis.
  Tensor yk = var(ctx, {"q", "k"}, {4, 2}, 0.5f);
  CHECK(x.matmul(ctx, yk).tags() == Tags{"m", "k"});
  requireClose(x.matmul(ctx, yk).toVector(), einsumRef(x, yk.withTags(ctx, {"k", "n"}), {"m", "n"}));
  // transpose_y: y is {n, k'}.
  Tensor yt = var(ctx, {"n", "p"}, {5, 4}, 0.6f);
  requireClose(x.matmul(ctx, yt, true).toVector(), einsumRef(x, yt.withTags(ctx, {"n", "k"}), {"m", "n"}));
  fucina::gradcheck(ctx, [&](ExecContext& c) { return probe(c, x.matmul(c, yt, true)); }, {&x, &yt});
  // Batched: batch axes matched by tag, in this's order; y's in another order.
  Tensor bx = var(ctx, {"b", "h", "t", "d"}, {2, 3, 4, 5}, 0.2f);
  Tensor by = var(ctx, {"h", "b", "d", "s"}, {3, 2, 5, 1}, 0.7f);
  Tensor bz = bx.matmul(ctx, by);
  CHECK(bz.tags() == Tags{"b", "h", "t", "s"});
  requireClose(bz.toVector(), einsumRef(bx, by, {"b", "h", "t", "s"}));
  fucina::gradcheck(ctx, [&](ExecContext& c) { return probe(c, bx.matmul(c, by)); }, {&bx, &by});
  // Attention-style q·kᵀ: both operands {b, t, d}-like, transpose_y, odd sizes.
  Tensor q = var(ctx, {"b", "t", "d"}, {2, 3, 5}, 0.3f);
  Tensor kk = var(ctx, {"b", "s", "d"}, {2, 7, 5}, 0.8f);
  requireClose(q.matmul(ctx, kk, true).toVector(), einsumRef(q, kk, {"b", "t", "s"}));
  fucina::gradcheck(ctx, [&](ExecContext& c) { return probe(c, q.matmul(c, kk, true)); }, {&q, &kk});
  // Positional: a permuted view is read in its current order (xᵀ · y here), a narrowed one too.
  Tensor xs = var(ctx, {"k", "m"}, {4, 3}, 0.9f);
  Tensor ys = var(ctx, {"p", "n"}, {6, 5}, 0.2f);
  Tensor xsT = xs.permuteTo(ctx, {"m", "k"});
  Tensor ysN = ys.narrow(ctx, "p", 1, 4);
  requireClose(xsT.matmul(ctx, ysN).toVector(),
               einsumRef(xsT.contiguous(ctx), ysN.contiguous(ctx).withTags(ctx, {"k", "n"}), {"m", "n"}));
  fucina::gradcheck(ctx, [&](ExecContext& c) {
    return probe(c, xs.permuteTo(c, {"m", "k"}).matmul(c, ys.narrow(c, "p", 1, 4)));
  }, {&xs, &ys});
}

TEST_CASE("matmul: bad inputs") {
  ExecContext ctx;
  Tensor x = Tensor::ones(ctx, {"m", "k"}, {2, 3});
  CHECK_FUCINA_ERROR(x.matmul(ctx, Tensor::ones(ctx, {"k"}, {3})), ShapeMismatch);
  CHECK_FUCINA_ERROR(x.matmul(ctx, Tensor::ones(ctx, {"k", "n"}, {4, 2})), ShapeMismatch);
  CHECK_FUCINA_ERROR(x.matmul(ctx, Tensor::ones(ctx, {"k", "n"}, {3, 2}), true), ShapeMismatch);
  // Result would hold m twice.
  CHECK_FUCINA_ERROR(x.matmul(ctx, Tensor::ones(ctx, {"k", "m"}, {3, 4})), ShapeMismatch);
  CHECK_THROWS_WITH(x.matmul(ctx, Tensor::ones(ctx, {"k", "m"}, {3, 4})), Catch::Contains("withTags"));
  // Batch axes must be the same tags with the same extents.
  Tensor bx = Tensor::ones(ctx, {"b", "m", "k"}, {2, 2, 3});
  CHECK_FUCINA_ERROR(bx.matmul(ctx, Tensor::ones(ctx, {"k", "n"}, {3, 4})), ShapeMismatch);
  CHECK_FUCINA_ERROR(bx.matmul(ctx, Tensor::ones(ctx, {"c", "k", "n"}, {2, 3, 4})), ShapeMismatch);
  CHECK_FUCINA_ERROR(bx.matmul(ctx, Tensor::ones(ctx, {"b", "k", "n"}, {5, 3, 4})), ShapeMismatch);
  CHECK_FUCINA_ERROR(x.matmul(ctx, Tensor::ones(ctx, {"k", "n"}, {3, 4}, fucina::DType::i64)), DTypeMismatch);
}

// ---------------------------------------------------------------- transpose

TEST_CASE("transpose swaps two axis names, a view") {
  ExecContext ctx(fucina::ExecOptions{.threads = 1});
  Tensor x = Tensor::variableFromSlice(ctx, {"a", "b", "c"}, {2, 3, 1}, {1, 2, 3, 4, 5, 6});
  const size_t live = ctx.memory().live_bytes;
  Tensor t = x.transpose(ctx, "a", "b");
  CHECK(ctx.memory().live_bytes == live);
  CHECK(t.tags() == Tags{"b", "a", "c"});  // same data, names swapped: extents travel
  CHECK(t.shape() == Extents{2, 3, 1});
  // Read in {a, b, c} order: result[a=i, b=j] = x[a=j, b=i].
  Tensor r = t.permuteTo(ctx, {"a", "b", "c"});
  CHECK(r.shape() == Extents{3, 2, 1});
  CHECK(r.toVector() == std::vector<float>{1, 4, 2, 5, 3, 6});
  CHECK(x.transpose(ctx, "b", "a").tags() == t.tags());
  // Aligned by tag, a transposed square matrix adds to its transpose: x + xᵀ is symmetric.
  Tensor s = Tensor::variableFromSlice(ctx, {"i", "j"}, {2, 2}, {1, 2, 3, 4});
  CHECK(s.add(ctx, s.transpose(ctx, "i", "j")).toVector() == std::vector<float>{2, 5, 5, 8});
  fucina::gradcheck(ctx, [&](ExecContext& c) { return probe(c, x.transpose(c, "a", "c").permuteTo(c, {"a", "b", "c"})); }, {&x});
  fucina::gradcheck(ctx, [&](ExecContext& c) {
    return probe(c, s.permuteTo(c, {"j", "i"}).transpose(c, "i", "j").mul(c, s));
  }, {&s});

  CHECK_FUCINA_ERROR(x.transpose(ctx, "a", "a"), InvalidArgument);
  CHECK_THROWS_WITH(x.transpose(ctx, "a", "a"), Catch::Contains("'a'"));
  CHECK_FUCINA_ERROR(x.transpose(ctx, "a", "zz"), ShapeMismatch);
  CHECK_THROWS_WITH(x.transpose(ctx, "a", "zz"), Catch::Contains("'zz'"));
}

// ops_fuzz found GEMM offsetting an empty operand's null buffer (UB, seen by UBSan): an empty
// contracted axis gives zeros, or the bias, with batch axes too; an empty result skips the GEMM.
TEST_CASE("contractions over an empty axis give zeros or the bias, with batch axes") {
  ExecContext ctx;
  const Tensor a = Tensor::variable(ctx, Tensor::zeros(ctx, {"a", "b", "c", "h"}, {1, 0, 2, 1}));
  const Tensor y = a.dot(ctx, a, "b");
  CHECK(y.shape() == Extents{1, 2, 1});
  CHECK(y.toVector() == std::vector<float>{0, 0});
  const Tensor w = Tensor::fromSlice(ctx, {"b", "o"}, {0, 3}, std::vector<float>{});
  const Tensor bias = Tensor::fromSlice(ctx, {"o"}, {3}, {1, 2, 3});
  CHECK(a.addDot(ctx, w, "b", bias).toVector() == std::vector<float>{1, 2, 3, 1, 2, 3});
  CHECK(a.dot(ctx, w, "b").toVector() == std::vector<float>(6, 0));
  const Tensor none = Tensor::zeros(ctx, {"n", "k"}, {0, 4}), k = Tensor::ones(ctx, {"k", "o"}, {4, 3});
  CHECK(none.dot(ctx, k, "k").shape() == Extents{0, 3});
  y.sumAll(ctx).backward(ctx);
  CHECK(a.grad(ctx)->numel() == 0);
  // 2^40 batch matrices with no elements: no list of 2^40 batch offsets (ops_fuzz: 8 TiB asked).
  const int64_t huge = int64_t{1} << 40;
  const Tensor p = Tensor::variable(ctx, Tensor::zeros(ctx, {"n", "i", "k"}, {huge, 0, 2}));
  const Tensor q = Tensor::ones(ctx, {"k", "j"}, {2, 3}).broadcastTo(ctx, {"n", "k", "j"}, {huge, 2, 3});
  const Tensor pq = p.dot(ctx, q, "k");
  CHECK(pq.shape() == Extents{huge, 0, 3});
  pq.sumAll(ctx).backward(ctx);
  CHECK(p.grad(ctx)->shape() == p.shape());
}

// ---------------------------------------------------------------- einsumMany

TEST_CASE("einsumMany: values against a scalar loop, gradcheck of every operand") {
  struct Case {
    const char* name;
    std::vector<std::pair<Tags, Extents>> ops;
    Tags out;
  };
  const std::vector<Case> cases = {
      {"chain of three matrices", {{{"i", "j"}, {3, 5}}, {{"j", "k"}, {5, 2}}, {{"k", "l"}, {2, 4}}}, {"i", "l"}},
      {"shared batch axis, hyperedge", {{{"b", "i"}, {2, 3}}, {{"b", "i", "j"}, {2, 3, 4}}, {{"j", "b"}, {4, 2}}}, {"b"}},
      {"four operands, odd and size-1", {{{"a", "u"}, {3, 1}}, {{"u", "b"}, {1, 5}}, {{"b", "c"}, {5, 3}}, {{"c", "a", "d"}, {3, 3, 2}}},
       {"d", "u"}},
      {"axis summed away in one operand", {{{"i", "s"}, {3, 2}}, {{"i", "j"}, {3, 4}}, {{"j"}, {4}}}, {}},
      {"one operand", {{{"i", "j", "k"}, {2, 3, 4}}}, {"k", "i"}},
  };
  ExecContext ctx(fucina::ExecOptions{.threads = 1});
  for (const Case& cs : cases) {
    INFO(cs.name);
    std::vector<Tensor> ops;
    for (size_t k = 0; k < cs.ops.size(); ++k) ops.push_back(var(ctx, cs.ops[k].first, cs.ops[k].second, 0.3f + 0.4f * float(k)));
    const Tensor y = Tensor::einsumMany(ctx, ops, cs.out);
    CHECK(y.tags() == cs.out);
    requireClose(y.toVector(), einsumManyRef(ops, cs.out));
    std::vector<Tensor*> inputs;
    for (Tensor& t : ops) inputs.push_back(&t);
    fucina::gradcheck(ctx, [&](ExecContext& c) {
      std::vector<Tensor> views;  // reversed views: axes by tag
      for (const Tensor& t : ops) views.push_back(t.permuteTo(c, Tags(t.tags().rbegin(), t.tags().rend())));
      return probe(c, Tensor::einsumMany(c, views, cs.out));
    }, inputs);
  }
}

TEST_CASE("einsumMany joins the pair with the smallest intermediate first, as the nested binary form") {
  ExecContext ctx(fucina::ExecOptions{.threads = 1});
  // a{i:6, j:5} b{j:5, k:7} v{k:7}: b·v first (an intermediate of 5) beats a·b (6·7 = 42).
  Tensor a = var(ctx, {"i", "j"}, {6, 5}, 0.1f), b = var(ctx, {"j", "k"}, {5, 7}, 0.5f), v = var(ctx, {"k"}, {7}, 0.9f);
  const std::vector<Tensor> ops{a, b, v};
  const Tensor y = Tensor::einsumMany(ctx, ops, {"i"});
  const Tensor nested = Tensor::einsum(ctx, a, Tensor::einsum(ctx, b, v, {"j"}), {"i"});
  CHECK(y.toVector() == nested.toVector());  // the same binary einsums, bit for bit
  probe(ctx, y).backward(ctx);
  const auto ga = test::gradOf(ctx, a), gb = test::gradOf(ctx, b), gv = test::gradOf(ctx, v);
  for (Tensor* t : {&a, &b, &v}) t->zeroGrad();
  probe(ctx, nested).backward(ctx);
  CHECK(ga == test::gradOf(ctx, a));
  CHECK(gb == test::gradOf(ctx, b));
  CHECK(gv == test::gradOf(ctx, v));
}

TEST_CASE("einsumMany: bad inputs") {
  ExecContext ctx;
  const Tensor a = Tensor::ones(ctx, {"i", "j"}, {2, 3}), b = Tensor::ones(ctx, {"j", "k"}, {4, 2});
  CHECK_FUCINA_ERROR(Tensor::einsumMany(ctx, {}, {"i"}), InvalidArgument);
  const std::vector<Tensor> ops{a, b};
  CHECK_FUCINA_ERROR(Tensor::einsumMany(ctx, ops, {"i", "k"}), ShapeMismatch);  // j: 3 vs 4
  const std::vector<Tensor> one{a};
  CHECK_FUCINA_ERROR(Tensor::einsumMany(ctx, one, {"z"}), ShapeMismatch);
  CHECK_FUCINA_ERROR(Tensor::einsumMany(ctx, one, {"i", "i"}), ShapeMismatch);
}

// ---------------------------------------------------------------- dotTernarySte

TEST_CASE("dotTernarySte: the forward contracts the ternary weight, the gradients are straight-through") {
  ExecContext ctx(fucina::ExecOptions{.threads = 1});
  Tensor x = var(ctx, {"b", "k"}, {3, 7}, 0.2f);
  const std::vector<float> wv = test::wave(35, 1.3f, 0.4f, 0.83f);
  Tensor w = Tensor::variableFromSlice(ctx, {"n", "k"}, {5, 7}, wv);
  double s = 0;
  for (float v : wv) s += std::fabs(v);
  s /= double(wv.size());
  std::vector<float> qv;
  for (float v : wv) qv.push_back(float(std::nearbyint(std::clamp(v / float(s), -1.0f, 1.0f))) * float(s));
  for (float q : qv) CHECK((q == 0 || std::fabs(std::fabs(q) - s) < 1e-6));
  const Tensor wq = Tensor::fromSlice(ctx, {"n", "k"}, {5, 7}, qv);
  // A transposed view of x: axes by tag.
  auto xv = [&] { return x.permuteTo(ctx, {"k", "b"}); };  // a fresh view per graph
  const Tensor y = xv().dotTernarySte(ctx, w, "k");
  const Tensor want = xv().dot(ctx, wq, "k");
  CHECK(y.tags() == want.tags());
  requireClose(y.toVector(), want.toVector());
  probe(ctx, y).backward(ctx);
  const auto gx = test::gradOf(ctx, x), gw = test::gradOf(ctx, w);
  x.zeroGrad(), w.zeroGrad();
  // dx through the quantized weight; dW is dot's dW with the weight unquantized.
  probe(ctx, xv().dot(ctx, wq, "k")).backward(ctx);
  requireClose(gx, test::gradOf(ctx, x));
  x.zeroGrad();
  const Tensor plain = xv().dot(ctx, w, "k");
  probe(ctx, y.detach(ctx).add(ctx, plain).sub(ctx, plain.detach(ctx))).backward(ctx);
  requireClose(gw, test::gradOf(ctx, w));
  x.zeroGrad(), w.zeroGrad();
  // x's gradient is exact (the op is linear in x): gradcheck; w's is the STE by design.
  fucina::gradcheck(ctx, [&](ExecContext& c) { return probe(c, x.dotTernarySte(c, w.detach(c), "k")); }, {&x});
  // A zero weight quantizes to zero.
  CHECK(x.dotTernarySte(ctx, Tensor::zeros(ctx, {"k"}, {7}), "k").toVector() == std::vector<float>(3, 0.0f));
}

TEST_CASE("dotTernarySte: bad inputs") {
  ExecContext ctx;
  const Tensor x = Tensor::ones(ctx, {"b", "k"}, {2, 3});
  CHECK_FUCINA_ERROR(x.dotTernarySte(ctx, Tensor::ones(ctx, {"n", "k"}, {2, 4}), "k"), ShapeMismatch);
  CHECK_FUCINA_ERROR(x.dotTernarySte(ctx, Tensor::ones(ctx, {"n", "j"}, {2, 3}), "k"), ShapeMismatch);
  CHECK_FUCINA_ERROR(x.dotTernarySte(ctx, Tensor::ones(ctx, {"n", "k"}, {2, 3}, DType::f64), "k"), DTypeMismatch);
}
