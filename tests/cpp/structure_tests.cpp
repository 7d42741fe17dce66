// Structure ops (ops/view.cpp): insertAxis, squeeze, merge, split, flatten, reshape, select,
// slice. Forward values, gradcheck on several shapes (size 1, permuted and narrowed inputs) and
// bad inputs with the error codes the op list promises.
#include <catch2/catch.hpp>

#include <vector>

#include <fucina/fucina.h>
#include "test_helpers.h"

using fucina::ErrorCode;
using fucina::ExecContext;
using fucina::Tags;
using fucina::Tensor;

namespace {

// A variable {a, b, c} and two awkward views of one: permuted, and narrowed then permuted.
struct Inputs {
  Tensor base;                  // {a=2, b=3, c=4}
  std::vector<Tensor> layouts;  // each {a, b, c} in some order / strides, values of base
};

Tensor weights(ExecContext& ctx, const Tensor& like) {
  return Tensor::fromSlice(ctx, like.tags(), like.shape(),
                           test::wave(static_cast<size_t>(like.numel()), 1.0f, 0.3f, 0.7f));
}

// sum(tanh(y) * w) with fixed weights laid out like y: a loss that sees every element's position.
Tensor probe(ExecContext& c, const Tensor& y) { return y.tanh(c).mul(c, weights(c, y)).sumAll(c); }

}  // namespace

TEST_CASE("insertAxis and squeeze") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"a", "b"}, {2, 3}, test::wave(6, 1, 0.1f, 0.9f));
  Tensor y = x.insertAxis(ctx, "k", 1);
  CHECK(y.tags() == Tags{"a", "k", "b"});
  CHECK(y.shape() == fucina::Extents{2, 1, 3});
  CHECK(y.toVector() == x.toVector());
  CHECK(x.insertAxis(ctx, "k", 2).tags() == Tags{"a", "b", "k"});
  Tensor z = y.squeeze(ctx, "k");
  CHECK(z.tags() == Tags{"a", "b"});
  CHECK(z.toVector() == x.toVector());
  fucina::gradcheck(ctx, [&](ExecContext& c) { return probe(c, x.insertAxis(c, "k", 0)); }, {&x});
  fucina::gradcheck(ctx, [&](ExecContext& c) {
    return probe(c, x.permuteTo(c, {"b", "a"}).insertAxis(c, "k", 1).permuteTo(c, {"k", "a", "b"}).squeeze(c, "k"));
  }, {&x});
  Tensor one = Tensor::variableFromSlice(ctx, {"a", "u"}, {3, 1}, {1, 2, 3});
  CHECK(one.squeeze(ctx, "u").tags() == Tags{"a"});
  fucina::gradcheck(ctx, [&](ExecContext& c) { return probe(c, one.squeeze(c, "u")); }, {&one});
  Tensor s = Tensor::scalar(ctx, 2).insertAxis(ctx, "k", 0);
  CHECK(s.tags() == Tags{"k"});

  CHECK_FUCINA_ERROR(x.insertAxis(ctx, "k", 3), IndexOutOfRange);
  CHECK_FUCINA_ERROR(x.insertAxis(ctx, "a", 0), ShapeMismatch);
  CHECK_FUCINA_ERROR(x.squeeze(ctx, "a"), InvalidArgument);
  CHECK_FUCINA_ERROR(x.squeeze(ctx, "zz"), ShapeMismatch);
  CHECK_THROWS_WITH(x.squeeze(ctx, "a"), Catch::Contains("'a'"));
}

TEST_CASE("merge, split, flatten") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"a", "b", "c"}, {2, 3, 2}, test::wave(12, 1, 0.2f, 0.8f));
  const std::vector<float> v = x.toVector();
  Tensor m = x.merge(ctx, {"b", "c"}, "bc");
  CHECK(m.tags() == Tags{"a", "bc"});
  CHECK(m.shape() == fucina::Extents{2, 6});
  CHECK(m.toVector() == v);
  // Listed order decides the row-major order: {c, b} transposes inside each a.
  Tensor mt = x.merge(ctx, {"c", "b"}, "cb");
  CHECK(mt.toVector() == x.permuteTo(ctx, {"a", "c", "b"}).contiguous(ctx).toVector());
  // Non-adjacent axes: the group sits where the first of them was.
  Tensor ac = x.merge(ctx, {"a", "c"}, "ac");
  CHECK(ac.tags() == Tags{"ac", "b"});
  CHECK(ac.toVector() == x.permuteTo(ctx, {"a", "c", "b"}).contiguous(ctx).toVector());
  // A view when the strides allow it.
  const size_t live = ctx.memory().live_bytes;
  Tensor mv = x.merge(ctx, {"a", "b"}, "ab");
  CHECK(ctx.memory().live_bytes == live);
  CHECK(mv.toVector() == v);

  Tensor s = m.split(ctx, "bc", {"b", "c"}, {3, 2});
  CHECK(s.tags() == Tags{"a", "b", "c"});
  CHECK(s.toVector() == v);
  Tensor f = x.flatten(ctx, "all");
  CHECK(f.tags() == Tags{"all"});
  CHECK(f.toVector() == v);
  CHECK(x.permuteTo(ctx, {"c", "a", "b"}).flatten(ctx, "all").toVector() ==
        x.permuteTo(ctx, {"c", "a", "b"}).contiguous(ctx).toVector());

  fucina::gradcheck(ctx, [&](ExecContext& c) { return probe(c, x.merge(c, {"c", "a"}, "k")); }, {&x});
  fucina::gradcheck(ctx, [&](ExecContext& c) {
    return probe(c, x.narrow(c, "b", 1, 2).permuteTo(c, {"c", "b", "a"}).merge(c, {"b", "c"}, "k"));
  }, {&x});
  fucina::gradcheck(ctx, [&](ExecContext& c) { return probe(c, x.split(c, "b", {"p", "q"}, {1, 3})); }, {&x});
  fucina::gradcheck(ctx, [&](ExecContext& c) {
    return probe(c, x.permuteTo(c, {"c", "a", "b"}).slice(c, "b", 0, 3, 2).flatten(c, "all"));
  }, {&x});
  fucina::gradcheck(ctx, [&](ExecContext& c) {
    return probe(c, x.merge(c, {"a", "c"}, "k").split(c, "k", {"c", "a"}, {2, 2}));
  }, {&x});

  CHECK_FUCINA_ERROR(x.merge(ctx, {"b", "zz"}, "k"), ShapeMismatch);
  CHECK_FUCINA_ERROR(x.merge(ctx, {"b", "b"}, "k"), ShapeMismatch);
  CHECK_FUCINA_ERROR(x.merge(ctx, {"b", "c"}, "a"), ShapeMismatch);
  CHECK_FUCINA_ERROR(x.merge(ctx, {}, "k"), InvalidArgument);
  CHECK_FUCINA_ERROR(x.split(ctx, "b", {"p", "q"}, {2, 2}), ShapeMismatch);
  CHECK_FUCINA_ERROR(x.split(ctx, "b", {"p", "q"}, {3}), InvalidArgument);
  CHECK_FUCINA_ERROR(x.split(ctx, "b", {"p", "a"}, {1, 3}), ShapeMismatch);
  CHECK_FUCINA_ERROR(x.split(ctx, "zz", {"p"}, {3}), ShapeMismatch);
  CHECK_THROWS_WITH(x.split(ctx, "b", {"p", "q"}, {2, 2}), Catch::Contains("'b'"));
}

TEST_CASE("reshape") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"a", "b"}, {2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor r = x.reshape(ctx, {"p", "q", "s"}, {3, 1, 2});
  CHECK(r.shape() == fucina::Extents{3, 1, 2});
  CHECK(r.toVector() == x.toVector());
  // Row-major over the current axis order: a permuted view reads transposed.
  CHECK(x.permuteTo(ctx, {"b", "a"}).reshape(ctx, {"k"}, {6}).toVector() ==
        std::vector<float>{1, 4, 2, 5, 3, 6});
  fucina::gradcheck(ctx, [&](ExecContext& c) { return probe(c, x.reshape(c, {"p", "q"}, {3, 2})); }, {&x});
  fucina::gradcheck(ctx, [&](ExecContext& c) {
    return probe(c, x.permuteTo(c, {"b", "a"}).narrow(c, "b", 1, 2).reshape(c, {"p", "q"}, {2, 2}));
  }, {&x});
  CHECK_FUCINA_ERROR(x.reshape(ctx, {"p"}, {5}), ShapeMismatch);
  CHECK_FUCINA_ERROR(x.reshape(ctx, {"p", "p"}, {2, 3}), ShapeMismatch);
  CHECK_FUCINA_ERROR(x.reshape(ctx, {"p"}, {6, 1}), ShapeMismatch);
}

TEST_CASE("select and slice") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"a", "b"}, {3, 4}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  CHECK(x.select(ctx, "a", 1).toVector() == std::vector<float>{4, 5, 6, 7});
  CHECK(x.select(ctx, "a", 1).tags() == Tags{"b"});
  CHECK(x.select(ctx, "b", -1).toVector() == std::vector<float>{3, 7, 11});
  CHECK(x.slice(ctx, "b", 1, 4, 2).toVector() == std::vector<float>{1, 3, 5, 7, 9, 11});
  CHECK(x.slice(ctx, "a", 0, 3, 2).slice(ctx, "b", 1, 2).toVector() == std::vector<float>{1, 9});
  CHECK(x.slice(ctx, "b", 2, 2).shape() == fucina::Extents{3, 0});
  CHECK(x.permuteTo(ctx, {"b", "a"}).slice(ctx, "a", 1, 3).toVector() ==
        std::vector<float>{4, 8, 5, 9, 6, 10, 7, 11});
  fucina::gradcheck(ctx, [&](ExecContext& c) { return probe(c, x.select(c, "b", 2)); }, {&x});
  fucina::gradcheck(ctx, [&](ExecContext& c) {
    return probe(c, x.permuteTo(c, {"b", "a"}).select(c, "a", -1)).add(c, probe(c, x.select(c, "a", 0)));
  }, {&x});
  fucina::gradcheck(ctx, [&](ExecContext& c) { return probe(c, x.slice(c, "b", 0, 4, 3)); }, {&x});
  fucina::gradcheck(ctx, [&](ExecContext& c) {
    return probe(c, x.narrow(c, "a", 1, 2).permuteTo(c, {"b", "a"}).slice(c, "b", 1, 4, 2));
  }, {&x});
  Tensor one = Tensor::variableFromSlice(ctx, {"u"}, {1}, {0.5f});
  fucina::gradcheck(ctx, [&](ExecContext& c) { return probe(c, one.select(c, "u", 0).insertAxis(c, "v", 0)); }, {&one});

  CHECK_FUCINA_ERROR(x.select(ctx, "a", 3), IndexOutOfRange);
  CHECK_FUCINA_ERROR(x.select(ctx, "a", -4), IndexOutOfRange);
  CHECK_FUCINA_ERROR(x.select(ctx, "zz", 0), ShapeMismatch);
  CHECK_FUCINA_ERROR(x.slice(ctx, "b", 0, 5), IndexOutOfRange);
  CHECK_FUCINA_ERROR(x.slice(ctx, "b", 3, 2), IndexOutOfRange);
  CHECK_FUCINA_ERROR(x.slice(ctx, "b", 0, 2, 0), InvalidArgument);
  CHECK_THROWS_WITH(x.select(ctx, "a", 3), Catch::Contains("'a'"));
}
