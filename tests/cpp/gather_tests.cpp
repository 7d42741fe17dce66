// Indexing by integer tensors along a named axis: gather, takeAlongAxis and scatterAdd. Values
// against a naive multi-index reference, gradcheck through permuted / narrowed views, repeated
// indices accumulating, and bad inputs.
#include "test_helpers.h"

#include <array>
#include <vector>

using fucina::DType;
using fucina::ExecContext;
using fucina::Extents;
using fucina::Tags;
using fucina::Tensor;

namespace {

// sum(tanh(y) * w) with fixed weights laid out like y: a loss that sees every element's position.
Tensor probe(ExecContext& c, const Tensor& y) {
  Tensor w = Tensor::fromSlice(c, y.tags(), y.shape(), test::wave(static_cast<size_t>(y.numel()), 1.0f, 0.3f, 0.7f));
  return y.tanh(c).mul(c, w).sumAll(c);
}

// Naive gather / take_along_axis on a row-major 3-D array of extents xs, giving extents os:
// indices have extents is (each equal to os, or 1 to broadcast), row-major over the same axes.
std::vector<float> naiveTake(const std::vector<float>& x, std::array<int64_t, 3> xs, const std::vector<int64_t>& idx,
                             std::array<int64_t, 3> is, std::array<int64_t, 3> os, size_t axis) {
  std::vector<float> out;
  for (int64_t i = 0; i < os[0]; ++i)
    for (int64_t j = 0; j < os[1]; ++j)
      for (int64_t k = 0; k < os[2]; ++k) {
        std::array<int64_t, 3> p{i, j, k}, q;
        for (size_t d = 0; d < 3; ++d) q[d] = is[d] == 1 ? 0 : p[d];
        p[axis] = idx[static_cast<size_t>((q[0] * is[1] + q[1]) * is[2] + q[2])];
        out.push_back(x[static_cast<size_t>((p[0] * xs[1] + p[1]) * xs[2] + p[2])]);
      }
  return out;
}

std::vector<int64_t> someIndices(size_t n, int64_t extent) {
  std::vector<int64_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<int64_t>((i * 7 + 3) % static_cast<size_t>(extent));
  return v;
}

}  // namespace

TEST_CASE("gather: hand-computed values, permuted indices, repeated indices accumulate") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"a", "b"}, {2, 3}, {0, 1, 2, 3, 4, 5});
  Tensor y = x.gather(ctx, "b", Tensor::fromInts(ctx, {"a", "b"}, {2, 2}, {2, 0, 1, 1}));
  CHECK(y.tags() == Tags{"a", "b"});
  CHECK(y.shape() == Extents{2, 2});
  CHECK(y.toVector() == std::vector<float>{2, 0, 4, 4});
  y.sumAll(ctx).backward(ctx);
  CHECK(test::gradOf(ctx, x) == std::vector<float>{1, 0, 1, 0, 2, 0});
  // Indices in another axis order, i64; the result keeps x's order and takes the indices' extents.
  Tensor ib = Tensor::fromInts(ctx, {"b", "a"}, {3, 1}, {1, 0, 1}, DType::i64);
  Tensor z = x.gather(ctx, "a", ib);
  CHECK(z.tags() == Tags{"a", "b"});
  CHECK(z.shape() == Extents{1, 3});
  CHECK(z.toVector() == std::vector<float>{3, 1, 5});
}

TEST_CASE("gather and takeAlongAxis match a naive reference on every axis and layout") {
  ExecContext ctx;
  const std::array<int64_t, 3> xs{3, 4, 2};
  const Tags tags{"a", "b", "c"};
  const std::vector<float> xv = test::wave(24, 1.0f, 0.2f, 0.9f);
  Tensor x = Tensor::variableFromSlice(ctx, tags, {3, 4, 2}, xv);
  Tensor xp = x.permuteTo(ctx, {"c", "a", "b"});  // forward only: gradchecks make their views inside the loss
  for (size_t axis = 0; axis < 3; ++axis) {
    const fucina::Tag t = tags[axis];
    INFO("along " << t.name());
    // gather: extents <= x's, any extent along the axis.
    std::array<int64_t, 3> is{2, 3, 1};
    is[axis] = 5;
    std::vector<int64_t> iv = someIndices(static_cast<size_t>(is[0] * is[1] * is[2]), xs[axis]);
    Tensor ix = Tensor::fromInts(ctx, tags, {is[0], is[1], is[2]}, iv);
    Tensor g = x.gather(ctx, t, ix);
    CHECK(g.shape() == Extents{is[0], is[1], is[2]});
    CHECK(g.toVector() == naiveTake(xv, xs, iv, is, is, axis));
    CHECK(xp.gather(ctx, t, ix).permuteTo(ctx, tags).toVector() == g.toVector());  // layout-free
    INFO("gather");
    fucina::gradcheck(ctx, [&](ExecContext& c) { return probe(c, x.gather(c, t, ix)); }, {&x});
    fucina::gradcheck(ctx, [&](ExecContext& c) { return probe(c, x.permuteTo(c, {"c", "a", "b"}).gather(c, t, ix.permuteTo(c, {"b", "c", "a"}))); }, {&x});
    // takeAlongAxis: one other axis broadcast with extent 1, the third missing.
    std::array<int64_t, 3> ts = xs;
    ts[axis] = 3;
    const size_t one = (axis + 1) % 3, gone = (axis + 2) % 3;
    ts[one] = 1;
    std::vector<int64_t> tv = someIndices(static_cast<size_t>(ts[axis] * ts[one]), xs[axis]);
    Tags itags{t, tags[one]};
    Tensor it = Tensor::fromInts(ctx, itags, {ts[axis], 1}, tv, DType::i64);
    std::array<int64_t, 3> tb = ts;
    tb[gone] = 1;  // the reference broadcasts the missing axis as extent 1
    std::vector<int64_t> tref(static_cast<size_t>(tb[0] * tb[1] * tb[2]));
    for (int64_t i = 0; i < ts[axis]; ++i) {  // tv is row-major over {axis, one}; tb is over {a, b, c}
      std::array<int64_t, 3> p{0, 0, 0};
      p[axis] = i;
      tref[static_cast<size_t>((p[0] * tb[1] + p[1]) * tb[2] + p[2])] = tv[static_cast<size_t>(i)];
    }
    Tensor r = x.takeAlongAxis(ctx, t, it);
    CHECK(r.tags() == tags);
    std::array<int64_t, 3> rs = xs;
    rs[axis] = 3;
    CHECK(r.shape() == Extents{rs[0], rs[1], rs[2]});
    CHECK(r.toVector() == naiveTake(xv, xs, tref, tb, rs, axis));
    CHECK(xp.takeAlongAxis(ctx, t, it).permuteTo(ctx, tags).toVector() == r.toVector());
    INFO("takeAlongAxis");
    fucina::gradcheck(ctx, [&](ExecContext& c) { return probe(c, x.takeAlongAxis(c, t, it)); }, {&x});
    fucina::gradcheck(ctx, [&](ExecContext& c) {
      return probe(c, x.permuteTo(c, {"c", "a", "b"}).narrow(c, tags[one], 0, 1).takeAlongAxis(c, t, it));
    }, {&x});
  }
}

TEST_CASE("takeAlongAxis: the argmax-style pick and full-shape indices") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"batch", "class"}, {2, 3}, {0.1f, 0.7f, 0.2f, 0.5f, 0.3f, 0.2f});
  Tensor pick = x.takeAlongAxis(ctx, "class", Tensor::fromInts(ctx, {"batch", "class"}, {2, 1}, {1, 0}));
  CHECK(pick.tags() == Tags{"batch", "class"});
  CHECK(pick.toVector() == std::vector<float>{0.7f, 0.5f});
  // Indices with only the axis broadcast over batch; a size-1 table axis.
  CHECK(x.takeAlongAxis(ctx, "class", Tensor::fromInts(ctx, {"class"}, {2}, {2, 2})).toVector() ==
        std::vector<float>{0.2f, 0.2f, 0.2f, 0.2f});
  Tensor s = Tensor::variableFromSlice(ctx, {"u", "v"}, {1, 3}, {4, 5, 6});
  CHECK(s.takeAlongAxis(ctx, "v", Tensor::fromInts(ctx, {"v", "u"}, {4, 1}, {2, 2, 0, 1})).toVector() ==
        std::vector<float>{6, 6, 4, 5});
  fucina::gradcheck(ctx, [&](ExecContext& c) {
    return probe(c, s.takeAlongAxis(c, "v", Tensor::fromInts(c, {"v"}, {4}, {2, 2, 0, 1})));
  }, {&s});
}

TEST_CASE("scatterAdd: values, gradients to both operands") {
  ExecContext ctx;
  Tensor base = Tensor::variableFromSlice(ctx, {"a", "b"}, {2, 3}, {0, 1, 2, 3, 4, 5});
  Tensor ix = Tensor::fromInts(ctx, {"b", "a"}, {2, 2}, {2, 0, 2, 1});  // idx[b][a]
  Tensor src = Tensor::variableFromSlice(ctx, {"a", "b"}, {2, 2}, {10, 20, 30, 40});
  Tensor y = base.scatterAdd(ctx, "b", ix, src);
  // row a=0: src 10 at b=idx[0][0]=2, 20 at idx[1][0]=2; row a=1: 30 at idx[0][1]=0, 40 at idx[1][1]=1.
  CHECK(y.tags() == Tags{"a", "b"});
  CHECK(y.toVector() == std::vector<float>{0, 1, 32, 33, 44, 5});
  Tensor w = Tensor::fromSlice(ctx, {"a", "b"}, {2, 3}, {1, 2, 3, 4, 5, 6});
  y.mul(ctx, w).sumAll(ctx).backward(ctx);
  CHECK(test::gradOf(ctx, base) == std::vector<float>{1, 2, 3, 4, 5, 6});
  CHECK(test::gradOf(ctx, src) == std::vector<float>{3, 3, 4, 5});
  // gradcheck both operands, with odd sizes, i64 indices and a permuted, narrowed base.
  Tensor x = Tensor::variableFromSlice(ctx, {"a", "b", "c"}, {3, 5, 2}, test::wave(30, 1.0f, 0.1f, 0.7f));
  Tensor sx = Tensor::variableFromSlice(ctx, {"c", "b", "a"}, {2, 7, 3}, test::wave(42, 0.8f, 0.4f, 1.3f));
  Tensor sixd = Tensor::fromInts(ctx, {"a", "c", "b"}, {3, 2, 7}, someIndices(42, 5), DType::i64);
  fucina::gradcheck(ctx, [&](ExecContext& c) { return probe(c, x.scatterAdd(c, "b", sixd, sx)); }, {&x, &sx});
  fucina::gradcheck(ctx, [&](ExecContext& c) {
    return probe(c, x.permuteTo(c, {"b", "c", "a"}).narrow(c, "c", 1, 1)
                        .scatterAdd(c, "b", sixd.narrow(c, "c", 0, 1), sx.narrow(c, "c", 1, 1)));
  }, {&x, &sx});
  // Same values whatever the layout of base.
  CHECK(x.permuteTo(ctx, {"c", "a", "b"}).scatterAdd(ctx, "b", sixd, sx).permuteTo(ctx, {"a", "b", "c"}).toVector() ==
        x.scatterAdd(ctx, "b", sixd, sx).toVector());
}

TEST_CASE("gather, takeAlongAxis, scatterAdd: empty indices") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"a", "b"}, {2, 3}, {0, 1, 2, 3, 4, 5});
  Tensor none = Tensor::fromInts(ctx, {"a", "b"}, {2, 0}, std::vector<int64_t>{});
  Tensor y = x.gather(ctx, "b", none);
  CHECK(y.shape() == Extents{2, 0});
  CHECK(x.takeAlongAxis(ctx, "b", none).shape() == Extents{2, 0});
  Tensor s = x.scatterAdd(ctx, "b", none, Tensor::zeros(ctx, {"a", "b"}, {2, 0}));
  CHECK(s.toVector() == x.toVector());
  y.sumAll(ctx).add(ctx, s.sumAll(ctx)).backward(ctx);
  CHECK(test::gradOf(ctx, x) == std::vector<float>{1, 1, 1, 1, 1, 1});
}

TEST_CASE("gather, takeAlongAxis, scatterAdd: bad inputs") {
  ExecContext ctx;
  Tensor x = Tensor::ones(ctx, {"a", "b"}, {2, 3});
  auto ints = [&](Tags tags, Extents shape, std::vector<int64_t> v) { return Tensor::fromInts(ctx, tags, shape, v); };
  CHECK_FUCINA_ERROR(x.gather(ctx, "b", ints({"a", "b"}, {1, 2}, {0, 3})), IndexOutOfRange);
  CHECK_THROWS_WITH(x.gather(ctx, "b", ints({"a", "b"}, {1, 2}, {0, 3})),
                    Catch::Contains("along 'b'") && Catch::Contains("index 3") && Catch::Contains("[0, 3)"));
  CHECK_THROWS_WITH(x.gather(ctx, "a", ints({"a", "b"}, {1, 1}, {-1})), Catch::Contains("index -1"));
  CHECK_FUCINA_ERROR(x.gather(ctx, "b", Tensor::ones(ctx, {"a", "b"}, {1, 1})), DTypeMismatch);
  CHECK_FUCINA_ERROR(x.gather(ctx, "b", ints({"b"}, {1}, {0})), ShapeMismatch);                  // missing axis
  CHECK_FUCINA_ERROR(x.gather(ctx, "b", ints({"a", "b", "k"}, {1, 1, 1}, {0})), ShapeMismatch);  // extra axis
  CHECK_THROWS_WITH(x.gather(ctx, "b", ints({"a", "b"}, {3, 1}, {0, 0, 0})), Catch::Contains("'a'"));
  CHECK_FUCINA_ERROR(x.gather(ctx, "zz", ints({"a", "b"}, {1, 1}, {0})), ShapeMismatch);
  CHECK_FUCINA_ERROR(x.takeAlongAxis(ctx, "b", ints({"a"}, {2}, {0, 0})), ShapeMismatch);  // lacks the axis
  CHECK_FUCINA_ERROR(x.takeAlongAxis(ctx, "b", ints({"b", "k"}, {1, 1}, {0})), ShapeMismatch);
  CHECK_THROWS_WITH(x.takeAlongAxis(ctx, "a", ints({"a", "b"}, {1, 2}, {0, 0})),
                    Catch::Contains("'b'") && Catch::Contains("extent 1"));
  CHECK_FUCINA_ERROR(x.takeAlongAxis(ctx, "a", ints({"a"}, {1}, {2})), IndexOutOfRange);
  Tensor src = Tensor::ones(ctx, {"a", "b"}, {1, 2});
  CHECK_FUCINA_ERROR(x.scatterAdd(ctx, "b", ints({"a", "b"}, {1, 2}, {0, 5}), src), IndexOutOfRange);
  CHECK_FUCINA_ERROR(x.scatterAdd(ctx, "b", ints({"a", "b"}, {1, 1}, {0}), src), ShapeMismatch);
  CHECK_FUCINA_ERROR(x.scatterAdd(ctx, "b", ints({"a", "b"}, {1, 2}, {0, 1}), Tensor::ones(ctx, {"a", "c"}, {1, 2})),
                     ShapeMismatch);
  CHECK_FUCINA_ERROR(x.scatterAdd(ctx, "b", ints({"a", "b"}, {1, 2}, {0, 1}), src.to(ctx, DType::i32)), DTypeMismatch);
}
