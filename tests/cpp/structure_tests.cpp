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

TEST_CASE("concat and stack") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"a", "b"}, {2, 2}, {1, 2, 3, 4});
  Tensor y = Tensor::variableFromSlice(ctx, {"b", "a"}, {1, 2}, {5, 6});  // other axis order
  const std::vector<Tensor> xy = {x, y};
  Tensor c = Tensor::concat(ctx, xy, "b");
  CHECK(c.tags() == Tags{"a", "b"});
  CHECK(c.toVector() == std::vector<float>{1, 2, 5, 3, 4, 6});
  Tensor z = Tensor::variableFromSlice(ctx, {"b", "a"}, {2, 2}, {7, 8, 9, 10});
  const std::vector<Tensor> xz = {x, z};
  Tensor s = Tensor::stack(ctx, xz, "n");
  CHECK(s.tags() == Tags{"n", "a", "b"});
  CHECK(s.toVector() == std::vector<float>{1, 2, 3, 4, 7, 9, 8, 10});
  fucina::gradcheck(ctx, [&](ExecContext& c2) {
    const std::vector<Tensor> parts = {x.permuteTo(c2, {"b", "a"}), y, x.narrow(c2, "b", 1, 1)};
    return probe(c2, Tensor::concat(c2, parts, "b"));
  }, {&x, &y});
  fucina::gradcheck(ctx, [&](ExecContext& c2) {
    const std::vector<Tensor> parts = {x, z, x};
    return probe(c2, Tensor::stack(c2, parts, "n"));
  }, {&x, &z});
  // Constants among the operands get no gradient slot filled.
  Tensor k = Tensor::ones(ctx, {"a", "b"}, {2, 3});
  const std::vector<Tensor> xk = {x, k};
  Tensor::concat(ctx, xk, "b").sumAll(ctx).backward(ctx);
  CHECK(test::gradOf(ctx, x) == std::vector<float>{1, 1, 1, 1});

  CHECK_FUCINA_ERROR(Tensor::concat(ctx, std::vector<Tensor>{}, "b"), InvalidArgument);
  const std::vector<Tensor> bad = {x, Tensor::ones(ctx, {"a", "b"}, {3, 1})};
  CHECK_FUCINA_ERROR(Tensor::concat(ctx, bad, "b"), ShapeMismatch);
  CHECK_THROWS_WITH(Tensor::concat(ctx, bad, "b"), Catch::Contains("'b'"));
  const std::vector<Tensor> other = {x, Tensor::ones(ctx, {"a", "q"}, {2, 1})};
  CHECK_FUCINA_ERROR(Tensor::concat(ctx, other, "b"), ShapeMismatch);
  CHECK_FUCINA_ERROR(Tensor::concat(ctx, xy, "zz"), ShapeMismatch);
  const std::vector<Tensor> unequal = {x, y};
  CHECK_FUCINA_ERROR(Tensor::stack(ctx, unequal, "n"), ShapeMismatch);
  CHECK_FUCINA_ERROR(Tensor::stack(ctx, xz, "a"), ShapeMismatch);
}

TEST_CASE("pad") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"a", "b"}, {2, 2}, {1, 2, 3, 4});
  Tensor p = x.pad(ctx, "b", 1, 2, -1);
  CHECK(p.shape() == fucina::Extents{2, 5});
  CHECK(p.toVector() == std::vector<float>{-1, 1, 2, -1, -1, -1, 3, 4, -1, -1});
  CHECK(x.pad(ctx, "a", 0, 1).toVector() == std::vector<float>{1, 2, 3, 4, 0, 0});
  fucina::gradcheck(ctx, [&](ExecContext& c) { return probe(c, x.pad(c, "a", 1, 0, 0.5)); }, {&x});
  fucina::gradcheck(ctx, [&](ExecContext& c) {
    return probe(c, x.permuteTo(c, {"b", "a"}).narrow(c, "b", 1, 1).pad(c, "b", 2, 1));
  }, {&x});
  CHECK_FUCINA_ERROR(x.pad(ctx, "b", -1, 0), InvalidArgument);
  CHECK_FUCINA_ERROR(x.pad(ctx, "zz", 1, 0), ShapeMismatch);
}

TEST_CASE("where and maskedFill") {
  ExecContext ctx;
  Tensor a = Tensor::variableFromSlice(ctx, {"r", "c"}, {2, 3}, test::wave(6, 1, 0.1f, 0.9f));
  Tensor b = Tensor::variableFromSlice(ctx, {"c"}, {3}, {10, 20, 30});
  Tensor cond = Tensor::fromInts(ctx, {"c", "r"}, {3, 2}, {1, 0, 0, 1, 1, 1}, fucina::DType::u8);
  Tensor w = Tensor::where(ctx, cond, a, b);
  const std::vector<float> av = a.toVector();
  CHECK(w.tags() == Tags{"r", "c"});
  CHECK(w.toVector() == std::vector<float>{av[0], 20, av[2], 10, av[4], av[5]});
  Tensor fcond = Tensor::fromSlice(ctx, {"c"}, {3}, {0, 2.5f, 0});
  CHECK(Tensor::where(ctx, fcond, a, b).toVector() ==
        std::vector<float>{10, av[1], 30, 10, av[4], 30});
  Tensor::where(ctx, cond, a, b).sumAll(ctx).backward(ctx);
  CHECK(test::gradOf(ctx, a) == std::vector<float>{1, 0, 1, 0, 1, 1});
  CHECK(test::gradOf(ctx, b) == std::vector<float>{1, 1, 0});
  fucina::gradcheck(ctx, [&](ExecContext& c) {
    return probe(c, Tensor::where(c, cond, a.permuteTo(c, {"c", "r"}), b));
  }, {&a, &b});

  Tensor m = a.maskedFill(ctx, fcond, -5);
  CHECK(m.toVector() == std::vector<float>{av[0], -5, av[2], av[3], -5, av[5]});
  fucina::gradcheck(ctx, [&](ExecContext& c) { return probe(c, a.maskedFill(c, cond, 0.25)); }, {&a});
  a.zeroGrad();
  a.maskedFill(ctx, cond, 3).sumAll(ctx).backward(ctx);
  CHECK(test::gradOf(ctx, a) == std::vector<float>{0, 1, 0, 1, 0, 0});

  CHECK_FUCINA_ERROR(Tensor::where(ctx, Tensor::ones(ctx, {"c"}, {4}, fucina::DType::u8), a, b), ShapeMismatch);
  CHECK_FUCINA_ERROR(Tensor::where(ctx, Tensor::ones(ctx, {"c"}, {3}, fucina::DType::i64), a, b), DTypeMismatch);
  CHECK_FUCINA_ERROR(Tensor::where(ctx, cond, a, Tensor::ones(ctx, {"c"}, {2})), ShapeMismatch);
  CHECK_FUCINA_ERROR(a.maskedFill(ctx, Tensor::ones(ctx, {"q"}, {2}), 0), ShapeMismatch);
  CHECK_THROWS_WITH(a.maskedFill(ctx, Tensor::ones(ctx, {"q"}, {2}), 0), Catch::Contains("'q'"));
  CHECK_FUCINA_ERROR(a.maskedFill(ctx, Tensor::ones(ctx, {"c"}, {3}, fucina::DType::i32), 0), DTypeMismatch);
}

TEST_CASE("tril, triu, bandPart") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"i", "j"}, {3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  CHECK(x.tril(ctx, "i", "j").toVector() == std::vector<float>{1, 0, 0, 4, 5, 0, 7, 8, 9});
  CHECK(x.tril(ctx, "i", "j", -1).toVector() == std::vector<float>{0, 0, 0, 4, 0, 0, 7, 8, 0});
  CHECK(x.triu(ctx, "i", "j").toVector() == std::vector<float>{1, 2, 3, 0, 5, 6, 0, 0, 9});
  CHECK(x.triu(ctx, "i", "j", 1).toVector() == std::vector<float>{0, 2, 3, 0, 0, 6, 0, 0, 0});
  // Axes are named: tril over (j, i) is triu over (i, j), whatever the physical order.
  CHECK(x.tril(ctx, "j", "i").toVector() == x.triu(ctx, "i", "j").toVector());
  CHECK(x.permuteTo(ctx, {"j", "i"}).tril(ctx, "i", "j").permuteTo(ctx, {"i", "j"}).toVector() ==
        x.tril(ctx, "i", "j").toVector());
  CHECK(x.bandPart(ctx, "i", "j", 1, 0).toVector() == std::vector<float>{1, 0, 0, 4, 5, 0, 0, 8, 9});
  CHECK(x.bandPart(ctx, "i", "j", -1, 0).toVector() == x.tril(ctx, "i", "j").toVector());
  CHECK(x.bandPart(ctx, "i", "j", 0, -1).toVector() == x.triu(ctx, "i", "j").toVector());
  CHECK(x.bandPart(ctx, "i", "j", 0, 0).toVector() == std::vector<float>{1, 0, 0, 0, 5, 0, 0, 0, 9});
  Tensor bx = Tensor::variableFromSlice(ctx, {"b", "i", "j"}, {2, 2, 3}, test::wave(12, 1, 0.4f, 0.6f));
  fucina::gradcheck(ctx, [&](ExecContext& c) {
    return probe(c, bx.permuteTo(c, {"j", "b", "i"}).tril(c, "i", "j").add(c, bx.triu(c, "i", "j", 1)));
  }, {&bx});
  fucina::gradcheck(ctx, [&](ExecContext& c) {
    return probe(c, bx.narrow(c, "j", 1, 2).bandPart(c, "i", "j", 0, 1));
  }, {&bx});
  CHECK_FUCINA_ERROR(x.tril(ctx, "i", "i"), InvalidArgument);
  CHECK_FUCINA_ERROR(x.tril(ctx, "i", "zz"), ShapeMismatch);
  CHECK_FUCINA_ERROR(x.bandPart(ctx, "i", "j", -2, 0), InvalidArgument);
}

TEST_CASE("indexSelect") {
  ExecContext ctx;
  Tensor table = Tensor::variableFromSlice(ctx, {"vocab", "d"}, {4, 2}, {0, 1, 10, 11, 20, 21, 30, 31});
  Tensor ids = Tensor::fromInts(ctx, {"batch", "t"}, {2, 3}, {3, 0, 3, 1, 1, 2});
  Tensor e = table.indexSelect(ctx, "vocab", ids);
  CHECK(e.tags() == Tags{"batch", "t", "d"});
  CHECK(e.shape() == fucina::Extents{2, 3, 2});
  CHECK(e.toVector() == std::vector<float>{30, 31, 0, 1, 30, 31, 10, 11, 10, 11, 20, 21});
  e.sumAll(ctx).backward(ctx);  // duplicates accumulate
  CHECK(test::gradOf(ctx, table) == std::vector<float>{1, 1, 2, 2, 1, 1, 2, 2});
  // Axis in the middle, a permuted table, i64 indices.
  Tensor x = Tensor::variableFromSlice(ctx, {"a", "b", "c"}, {2, 3, 2}, test::wave(12, 1, 0.2f, 0.8f));
  Tensor i64 = Tensor::fromInts(ctx, {"k"}, {4}, {2, 0, 2, 1}, fucina::DType::i64);
  CHECK(x.indexSelect(ctx, "b", i64).tags() == Tags{"a", "k", "c"});
  CHECK(x.permuteTo(ctx, {"c", "b", "a"}).indexSelect(ctx, "b", i64).permuteTo(ctx, {"a", "k", "c"}).toVector() ==
        x.indexSelect(ctx, "b", i64).toVector());
  fucina::gradcheck(ctx, [&](ExecContext& c) { return probe(c, x.indexSelect(c, "b", i64)); }, {&x});
  fucina::gradcheck(ctx, [&](ExecContext& c) {
    return probe(c, x.permuteTo(c, {"c", "b", "a"}).narrow(c, "a", 1, 1).indexSelect(c, "b", i64));
  }, {&x});
  Tensor one = Tensor::fromInts(ctx, {"k"}, {1}, {0});
  fucina::gradcheck(ctx, [&](ExecContext& c) { return probe(c, table.indexSelect(c, "vocab", one)); }, {&table});

  CHECK_FUCINA_ERROR(table.indexSelect(ctx, "vocab", Tensor::fromInts(ctx, {"k"}, {2}, {1, 4})), IndexOutOfRange);
  CHECK_THROWS_WITH(table.indexSelect(ctx, "vocab", Tensor::fromInts(ctx, {"k"}, {2}, {1, -1})),
                    Catch::Contains("index -1 at position 1"));
  CHECK_FUCINA_ERROR(table.indexSelect(ctx, "vocab", Tensor::ones(ctx, {"k"}, {2})), DTypeMismatch);
  CHECK_FUCINA_ERROR(table.indexSelect(ctx, "vocab", Tensor::fromInts(ctx, {"d"}, {1}, {0})), ShapeMismatch);
  CHECK_FUCINA_ERROR(table.indexSelect(ctx, "zz", ids), ShapeMismatch);
}
