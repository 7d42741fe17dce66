// Diagonals, masked selection and indexed updates: diagonal, trace, diag, diagEmbed
// (ops/diagonal.cpp), maskedSelect, maskedScatter (ops/masked.cpp), setSlice, zeroSlice
// (ops/slice_update.cpp), indexAdd, scatter, setRows, zeroRows (ops/gather.cpp). Hand-checked
// values, gradcheck through permuted / narrowed / broadcast inputs, size-1 and empty axes, the
// rules for repeated indices, threads, dtypes and every bad input with its code.
#include "test_helpers.h"

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <vector>

using fucina::DType, fucina::ExecContext, fucina::Extents, fucina::Tags, fucina::Tensor;

namespace {

// y · w summed, w = 1, 2, 3, ... laid out like y: gradients are the weights at the positions used.
Tensor weighted(ExecContext& c, const Tensor& y) {
  std::vector<float> w(static_cast<size_t>(y.numel()));
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i + 1);
  return y.mul(c, Tensor::fromSlice(c, y.tags(), y.shape(), w)).sumAll(c);
}

// For gradcheck: sum(tanh(y) · w), w a fixed wave in [-1, 1] laid out like y (small, so f32 finite
// differences stay accurate), a smooth loss that sees every element's position.
Tensor probe(ExecContext& c, const Tensor& y) {
  const auto n = static_cast<size_t>(y.numel());
  return y.tanh(c).mul(c, Tensor::fromSlice(c, y.tags(), y.shape(), test::wave(n, 1.0f, 0.3f, 0.7f))).sumAll(c);
}

std::vector<float> iota(size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(i);
  return v;
}

Tensor ints(ExecContext& c, Tags tags, Extents shape, std::vector<int64_t> v, DType d = DType::i32) {
  return Tensor::fromInts(c, std::move(tags), std::move(shape), v, d);
}

constexpr int64_t kMin = std::numeric_limits<int64_t>::min(), kMax = std::numeric_limits<int64_t>::max();

}  // namespace

TEST_CASE("diagonal: offsets as torch, a zero-copy view, gradients scattered back") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"a", "b"}, {3, 4}, iota(12));
  Tensor d = x.diagonal(ctx, "a", "b", 0, "d");
  CHECK(d.tags() == Tags{"d"});
  CHECK(d.toVector() == std::vector<float>{0, 5, 10});
  CHECK(d.value().storage() == x.value().storage());  // a view
  CHECK(x.diagonal(ctx, "a", "b", 1, "d").toVector() == std::vector<float>{1, 6, 11});
  CHECK(x.diagonal(ctx, "a", "b", 3, "d").toVector() == std::vector<float>{3});
  CHECK(x.diagonal(ctx, "a", "b", -1, "d").toVector() == std::vector<float>{4, 9});
  CHECK(x.diagonal(ctx, "a", "b", -2, "d").toVector() == std::vector<float>{8});
  CHECK(x.diagonal(ctx, "b", "a", 1, "d").toVector() == std::vector<float>{4, 9});  // axes swapped
  for (int64_t past : std::initializer_list<int64_t>{4, -3, kMax, kMin + 1, kMin}) CHECK(x.diagonal(ctx, "a", "b", past, "d").shape() == Extents{0});
  // `into` may reuse a dropped name; other axes stay, in order, before it.
  Tensor b3 = Tensor::variableFromSlice(ctx, {"a", "n", "b"}, {3, 2, 4}, test::wave(24, 1.0f, 0.2f, 0.8f));
  Tensor db = b3.diagonal(ctx, "b", "a", -1, "a");
  CHECK(db.tags() == Tags{"n", "a"});
  CHECK(db.shape() == Extents{2, 3});
  d = x.diagonal(ctx, "a", "b", 1, "d");
  weighted(ctx, d).backward(ctx);
  CHECK(test::gradOf(ctx, x) == std::vector<float>{0, 1, 0, 0, 0, 0, 2, 0, 0, 0, 0, 3});
  // An empty diagonal passes a zero gradient.
  Tensor e = Tensor::variableFromSlice(ctx, {"a", "b"}, {2, 2}, {1, 2, 3, 4});
  e.diagonal(ctx, "a", "b", 5, "d").sumAll(ctx).backward(ctx);
  CHECK(test::gradOf(ctx, e) == std::vector<float>{0, 0, 0, 0});
  // Awkward layouts: permuted, narrowed, broadcast, size-1 axes.
  for (int64_t off : {0, 2, -1}) {
    INFO("offset " << off);
    fucina::gradcheck(ctx, [&](ExecContext& c) { return probe(c, b3.diagonal(c, "a", "b", off, "d")); }, {&b3});
    fucina::gradcheck(ctx, [&](ExecContext& c) {
      return probe(c, b3.permuteTo(c, {"b", "n", "a"}).narrow(c, "b", 1, 3).diagonal(c, "b", "a", off, "d"));
    }, {&b3});
  }
  Tensor v = Tensor::variableFromSlice(ctx, {"a"}, {3}, {1, 2, 3});
  CHECK(v.broadcastTo(ctx, {"a", "b"}, {3, 3}).diagonal(ctx, "a", "b", 0, "d").toVector() == std::vector<float>{1, 2, 3});
  fucina::gradcheck(ctx, [&](ExecContext& c) { return probe(c, v.broadcastTo(c, {"b", "a"}, {2, 3}).diagonal(c, "a", "b", 1, "d")); }, {&v});
  Tensor one = Tensor::variableFromSlice(ctx, {"a", "b", "c"}, {1, 5, 2}, test::wave(10, 1.0f, 0.5f, 0.6f));
  CHECK(one.diagonal(ctx, "a", "b", 2, "d").shape() == Extents{2, 1});
  fucina::gradcheck(ctx, [&](ExecContext& c) { return probe(c, one.diagonal(c, "a", "b", 2, "d")); }, {&one});
  // Any dtype but q8_0 (a view keeps it).
  CHECK(x.to(ctx, DType::f16).diagonal(ctx, "a", "b", 0, "d").dtype() == DType::f16);
  CHECK(ints(ctx, {"a", "b"}, {2, 2}, {1, 2, 3, 4}).diagonal(ctx, "a", "b", 0, "d").toVector() == std::vector<float>{1, 4});
}

TEST_CASE("trace: the main diagonal summed, other axes kept") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"a", "b"}, {3, 4}, iota(12));
  Tensor t = x.trace(ctx, "a", "b");
  CHECK(t.rank() == 0);
  CHECK(t.toVector() == std::vector<float>{15});
  t.backward(ctx);
  CHECK(test::gradOf(ctx, x) == std::vector<float>{1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0});
  Tensor b = Tensor::variableFromSlice(ctx, {"a", "n", "b"}, {2, 3, 2}, iota(12));
  Tensor tb = b.trace(ctx, "b", "a");
  CHECK(tb.tags() == Tags{"n"});
  CHECK(tb.toVector() == std::vector<float>{0 + 7, 2 + 9, 4 + 11});
  fucina::gradcheck(ctx, [&](ExecContext& c) { return probe(c, b.permuteTo(c, {"b", "a", "n"}).trace(c, "a", "b")); }, {&b});
  CHECK(Tensor::zeros(ctx, {"a", "b"}, {0, 3}).trace(ctx, "a", "b").toVector() == std::vector<float>{0});
}

TEST_CASE("diag and diagEmbed: both directions, offsets, batches") {
  ExecContext ctx;
  Tensor v = Tensor::variableFromSlice(ctx, {"n"}, {3}, {1, 2, 3});
  Tensor m = v.diag(ctx, "n", "i", "j");
  CHECK(m.tags() == Tags{"i", "j"});
  CHECK(m.toVector() == std::vector<float>{1, 0, 0, 0, 2, 0, 0, 0, 3});
  CHECK(v.diag(ctx, "n", "i", "j", 1).toVector() ==
        std::vector<float>{0, 1, 0, 0, 0, 0, 2, 0, 0, 0, 0, 3, 0, 0, 0, 0});
  CHECK(v.diagEmbed(ctx, "n", "i", "j", -1).toVector() ==
        std::vector<float>{0, 0, 0, 0, 1, 0, 0, 0, 0, 2, 0, 0, 0, 0, 3, 0});
  weighted(ctx, v.diag(ctx, "n", "i", "j", 1)).backward(ctx);
  CHECK(test::gradOf(ctx, v) == std::vector<float>{2, 7, 12});
  // Matrix to vector: diagonal of a two-axis tensor; round trip.
  CHECK(m.diag(ctx, "i", "j", 0, "n").toVector() == std::vector<float>{1, 2, 3});
  CHECK(v.diag(ctx, "n", "i", "j", -2).diag(ctx, "i", "j", -2, "k").toVector() == std::vector<float>{1, 2, 3});
  // diagEmbed: the axis replaced in place by the two new ones; the name may be reused.
  Tensor b = Tensor::variableFromSlice(ctx, {"x", "n", "y"}, {2, 3, 2}, test::wave(12, 1.0f, 0.1f, 0.9f));
  Tensor be = b.diagEmbed(ctx, "n", "n", "j", 1);
  CHECK(be.tags() == Tags{"x", "n", "j", "y"});
  CHECK(be.shape() == Extents{2, 4, 4, 2});
  CHECK(be.diagonal(ctx, "n", "j", 1, "n").permuteTo(ctx, {"x", "n", "y"}).toVector() == b.toVector());
  for (int64_t off : {0, 1, -2}) {
    INFO("offset " << off);
    fucina::gradcheck(ctx, [&](ExecContext& c) { return probe(c, b.diagEmbed(c, "n", "i", "j", off)); }, {&b});
    fucina::gradcheck(ctx, [&](ExecContext& c) {
      return probe(c, b.permuteTo(c, {"y", "n", "x"}).narrow(c, "n", 1, 2).diag(c, "n", "i", "j", off));
    }, {&b});
  }
  Tensor s = Tensor::variableFromSlice(ctx, {"r", "c"}, {3, 2}, test::wave(6, 1.0f, 0.4f, 1.1f));
  fucina::gradcheck(ctx, [&](ExecContext& c) { return probe(c, s.permuteTo(c, {"c", "r"}).diag(c, "r", "c", -1, "k")); }, {&s});
  Tensor empty = Tensor::zeros(ctx, {"b", "n"}, {2, 0});
  CHECK(empty.diagEmbed(ctx, "n", "i", "j").shape() == Extents{2, 0, 0});
  CHECK(empty.diagEmbed(ctx, "n", "i", "j", 2).toVector() == std::vector<float>(8, 0.0f));
  CHECK(v.to(ctx, DType::bf16).diagEmbed(ctx, "n", "i", "j").dtype() == DType::bf16);
}

TEST_CASE("diagonal, trace, diag, diagEmbed: bad inputs") {
  ExecContext ctx;
  Tensor x = Tensor::ones(ctx, {"a", "b", "c"}, {2, 3, 4});
  CHECK_FUCINA_ERROR(x.diagonal(ctx, "a", "zz", 0, "d"), ShapeMismatch);
  CHECK_FUCINA_ERROR(x.diagonal(ctx, "a", "a", 0, "d"), InvalidArgument);
  CHECK_FUCINA_ERROR(x.diagonal(ctx, "a", "b", 0, "c"), ShapeMismatch);  // `into` is a kept axis
  CHECK_THROWS_WITH(x.diagonal(ctx, "a", "b", 0, "c"), Catch::Contains("already has an axis 'c'"));
  CHECK_FUCINA_ERROR(x.trace(ctx, "b", "b"), InvalidArgument);
  CHECK_FUCINA_ERROR(x.trace(ctx, "b", "q"), ShapeMismatch);
  CHECK_FUCINA_ERROR(x.diag(ctx, "a", "b", 0, "d"), InvalidArgument);  // matrix form of three axes
  CHECK_THROWS_WITH(x.diag(ctx, "a", "b", 0, "d"), Catch::Contains("two axes"));
  CHECK_FUCINA_ERROR(x.diagEmbed(ctx, "a", "i", "i"), InvalidArgument);
  CHECK_FUCINA_ERROR(x.diagEmbed(ctx, "a", "i", "b"), ShapeMismatch);
  CHECK_FUCINA_ERROR(x.diagEmbed(ctx, "zz", "i", "j"), ShapeMismatch);
  CHECK_FUCINA_ERROR(x.diag(ctx, "a", "i", "j", kMin), InvalidArgument);
  CHECK_FUCINA_ERROR(x.diag(ctx, "a", "i", "j", kMax), InvalidArgument);      // n + offset overflows
  CHECK_FUCINA_ERROR(x.diagEmbed(ctx, "a", "i", "j", 1LL << 40), InvalidArgument);  // too many elements
  Tensor q = Tensor::ones(ctx, {"a", "b"}, {32, 32}).quantize(ctx, DType::q8_0, "b");
  CHECK_FUCINA_ERROR(q.diagonal(ctx, "a", "b", 0, "d"), DTypeMismatch);
  CHECK_FUCINA_ERROR(q.diagEmbed(ctx, "a", "i", "j"), DTypeMismatch);
}

TEST_CASE("indexAdd: repeated indices accumulate, gradients to both operands") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"a", "b"}, {2, 3}, iota(6));
  Tensor src = Tensor::variableFromSlice(ctx, {"a", "b"}, {2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  Tensor y = x.indexAdd(ctx, "b", ints(ctx, {"k"}, {4}, {2, 0, 2, 1}), src);
  CHECK(y.tags() == Tags{"a", "b"});
  CHECK(y.toVector() == std::vector<float>{2, 5, 6, 9, 12, 17});
  weighted(ctx, y).backward(ctx);
  CHECK(test::gradOf(ctx, x) == std::vector<float>{1, 2, 3, 4, 5, 6});
  CHECK(test::gradOf(ctx, src) == std::vector<float>{3, 1, 3, 2, 6, 4, 6, 5});
  // Layouts: permuted and narrowed operands, i64 indices, size-1 and odd extents.
  Tensor x3 = Tensor::variableFromSlice(ctx, {"a", "b", "c"}, {3, 5, 2}, test::wave(30, 1.0f, 0.1f, 0.7f));
  Tensor s3 = Tensor::variableFromSlice(ctx, {"c", "b", "a"}, {2, 4, 3}, test::wave(24, 0.8f, 0.4f, 1.3f));
  Tensor i64 = ints(ctx, {"k"}, {4}, {4, 0, 4, 3}, DType::i64);
  fucina::gradcheck(ctx, [&](ExecContext& c) { return probe(c, x3.indexAdd(c, "b", i64, s3)); }, {&x3, &s3});
  fucina::gradcheck(ctx, [&](ExecContext& c) {
    return probe(c, x3.permuteTo(c, {"c", "b", "a"}).narrow(c, "c", 1, 1).indexAdd(c, "b", i64, s3.narrow(c, "c", 0, 1)));
  }, {&x3, &s3});
  Tensor src1 = Tensor::variableFromSlice(ctx, {"a", "b", "c"}, {1, 5, 2}, test::wave(10, 1.0f, 0.2f, 0.5f));
  fucina::gradcheck(ctx, [&](ExecContext& c) {
    return probe(c, x3.indexAdd(c, "a", ints(c, {"k"}, {1}, {2}), src1.permuteTo(c, {"b", "c", "a"})));
  }, {&x3, &src1});
  // Empty indices leave x as it is.
  CHECK(x.indexAdd(ctx, "b", ints(ctx, {"k"}, {0}, {}), Tensor::zeros(ctx, {"a", "b"}, {2, 0})).toVector() == iota(6));
  // No-grad operands: only the variable gets a gradient.
  Tensor cx = Tensor::fromSlice(ctx, {"a", "b"}, {2, 3}, iota(6));
  Tensor vs = Tensor::variableFromSlice(ctx, {"a", "b"}, {2, 1}, {1, 1});
  cx.indexAdd(ctx, "b", ints(ctx, {"k"}, {1}, {1}), vs).sumAll(ctx).backward(ctx);
  CHECK(test::gradOf(ctx, vs) == std::vector<float>{1, 1});
  CHECK_FALSE(cx.grad(ctx).has_value());
  {
    auto ng = fucina::noGrad();
    CHECK_FALSE(x.indexAdd(ctx, "b", ints(ctx, {"k"}, {1}, {1}), vs).requiresGrad());
  }
}

TEST_CASE("indexAdd: the same sums in the same order on 1 and 2 threads") {
  const int64_t outer = 64, n = 7, k = 200, inner = 8;
  std::vector<int64_t> idx(static_cast<size_t>(k));
  for (size_t j = 0; j < idx.size(); ++j) idx[j] = static_cast<int64_t>((j * 5 + 1) % static_cast<size_t>(n));
  const std::vector<float> xv = test::wave(static_cast<size_t>(outer * n * inner), 1.0f, 0.3f, 0.37f);
  const std::vector<float> sv = test::wave(static_cast<size_t>(outer * k * inner), 1e3f, 0.1f, 0.91f);
  // Sequential reference in index order.
  std::vector<float> want = xv;
  for (int64_t u = 0; u < outer; ++u)
    for (int64_t j = 0; j < k; ++j)
      for (int64_t v = 0; v < inner; ++v)
        want[static_cast<size_t>((u * n + idx[static_cast<size_t>(j)]) * inner + v)] += sv[static_cast<size_t>((u * k + j) * inner + v)];
  for (int threads : {1, 2}) {
    INFO(threads << " threads");
    ExecContext ctx(fucina::ExecOptions{.threads = threads});
    Tensor x = Tensor::fromSlice(ctx, {"u", "n", "v"}, {outer, n, inner}, xv);
    Tensor s = Tensor::fromSlice(ctx, {"u", "n", "v"}, {outer, k, inner}, sv);
    CHECK(x.indexAdd(ctx, "n", ints(ctx, {"k"}, {k}, idx), s).toVector() == want);
  }
}

TEST_CASE("scatter: overwrites, the last repeated target wins, torch's gradients") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"a", "b"}, {2, 3}, iota(6));
  Tensor src = Tensor::variableFromSlice(ctx, {"a", "b"}, {2, 2}, {10, 20, 30, 40});
  Tensor ix = ints(ctx, {"b", "a"}, {2, 2}, {2, 1, 0, 1});  // idx[b][a]: row 0 -> 2, 0; row 1 -> 1, 1
  Tensor y = x.scatter(ctx, "b", ix, src);
  CHECK(y.toVector() == std::vector<float>{20, 1, 10, 3, 40, 5});
  weighted(ctx, y).backward(ctx);
  CHECK(test::gradOf(ctx, x) == std::vector<float>{0, 2, 0, 4, 0, 6});
  CHECK(test::gradOf(ctx, src) == std::vector<float>{3, 1, 5, 5});
  // The winner does not depend on the layout of x.
  CHECK(x.permuteTo(ctx, {"b", "a"}).scatter(ctx, "b", ix, src).permuteTo(ctx, {"a", "b"}).toVector() == y.toVector());
  // gradcheck with distinct targets per row, through views; i64 indices.
  Tensor x3 = Tensor::variableFromSlice(ctx, {"a", "b", "c"}, {3, 5, 2}, test::wave(30, 1.0f, 0.1f, 0.7f));
  Tensor s3 = Tensor::variableFromSlice(ctx, {"c", "b", "a"}, {2, 3, 3}, test::wave(18, 0.8f, 0.4f, 1.3f));
  std::vector<int64_t> iv;
  for (int64_t a = 0; a < 3; ++a)
    for (int64_t c = 0; c < 2; ++c)
      for (int64_t b = 0; b < 3; ++b) iv.push_back((a + 2 * c + 2 * b) % 5);  // distinct over b
  Tensor i3 = ints(ctx, {"a", "c", "b"}, {3, 2, 3}, iv, DType::i64);
  fucina::gradcheck(ctx, [&](ExecContext& c) { return probe(c, x3.scatter(c, "b", i3, s3)); }, {&x3, &s3});
  fucina::gradcheck(ctx, [&](ExecContext& c) {
    return probe(c, x3.permuteTo(c, {"b", "c", "a"}).narrow(c, "c", 1, 1).scatter(c, "b", i3.narrow(c, "c", 0, 1), s3.narrow(c, "c", 1, 1)));
  }, {&x3, &s3});
  Tensor none = ints(ctx, {"a", "b"}, {2, 0}, {});
  CHECK(x.scatter(ctx, "b", none, Tensor::zeros(ctx, {"a", "b"}, {2, 0})).toVector() == iota(6));
}

TEST_CASE("setRows and zeroRows: rows replaced or zeroed, the last repeated index wins") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"a", "b"}, {2, 3}, iota(6));
  Tensor src = Tensor::variableFromSlice(ctx, {"a", "b"}, {2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor rows = ints(ctx, {"k"}, {3}, {2, 0, 2});
  Tensor y = x.setRows(ctx, "b", rows, src);
  CHECK(y.toVector() == std::vector<float>{2, 1, 3, 5, 4, 6});
  weighted(ctx, y).backward(ctx);
  CHECK(test::gradOf(ctx, x) == std::vector<float>{0, 2, 0, 0, 5, 0});
  CHECK(test::gradOf(ctx, src) == std::vector<float>{3, 1, 3, 6, 4, 6});  // as torch's index_copy
  x.zeroGrad();
  Tensor z = x.zeroRows(ctx, "b", rows);
  CHECK(z.toVector() == std::vector<float>{0, 1, 0, 0, 4, 0});
  weighted(ctx, z).backward(ctx);
  CHECK(test::gradOf(ctx, x) == std::vector<float>{0, 2, 0, 0, 5, 0});
  Tensor x3 = Tensor::variableFromSlice(ctx, {"a", "b", "c"}, {3, 5, 2}, test::wave(30, 1.0f, 0.1f, 0.7f));
  Tensor s3 = Tensor::variableFromSlice(ctx, {"c", "b", "a"}, {2, 3, 3}, test::wave(18, 0.8f, 0.4f, 1.3f));
  Tensor distinct = ints(ctx, {"k"}, {3}, {4, 0, 2}, DType::i64);
  fucina::gradcheck(ctx, [&](ExecContext& c) { return probe(c, x3.setRows(c, "b", distinct, s3)); }, {&x3, &s3});
  fucina::gradcheck(ctx, [&](ExecContext& c) {
    return probe(c, x3.permuteTo(c, {"c", "a", "b"}).narrow(c, "a", 1, 2).setRows(c, "b", distinct, s3.narrow(c, "a", 0, 2)));
  }, {&x3, &s3});
  fucina::gradcheck(ctx, [&](ExecContext& c) { return probe(c, x3.permuteTo(c, {"b", "c", "a"}).zeroRows(c, "a", ints(c, {"k"}, {2}, {2, 2}))); }, {&x3});
  fucina::gradcheck(ctx, [&](ExecContext& c) { return probe(c, x3.zeroRows(c, "c", ints(c, {"k"}, {0}, {}))); }, {&x3});
  // The rows of a broadcast input.
  Tensor v = Tensor::variableFromSlice(ctx, {"b"}, {3}, {1, 2, 3});
  fucina::gradcheck(ctx, [&](ExecContext& c) { return probe(c, v.broadcastTo(c, {"a", "b"}, {2, 3}).zeroRows(c, "a", ints(c, {"k"}, {1}, {1}))); }, {&v});
  // 16-bit constants run in f32 and come back 16-bit.
  CHECK(Tensor::ones(ctx, {"a", "b"}, {2, 3}, DType::f16).zeroRows(ctx, "b", rows).dtype() == DType::f16);
}

TEST_CASE("indexAdd, scatter, setRows, zeroRows: bad inputs") {
  ExecContext ctx;
  Tensor x = Tensor::ones(ctx, {"a", "b"}, {2, 3});
  Tensor s2 = Tensor::ones(ctx, {"a", "b"}, {2, 2});
  Tensor two = ints(ctx, {"k"}, {2}, {0, 1});
  CHECK_FUCINA_ERROR(x.indexAdd(ctx, "b", ints(ctx, {"k"}, {2}, {0, 3}), s2), IndexOutOfRange);
  CHECK_THROWS_WITH(x.indexAdd(ctx, "b", ints(ctx, {"k"}, {2}, {0, 3}), s2),
                    Catch::Contains("indexAdd along 'b'") && Catch::Contains("index 3") && Catch::Contains("[0, 3)"));
  CHECK_FUCINA_ERROR(x.setRows(ctx, "b", ints(ctx, {"k"}, {2}, {-1, 0}), s2), IndexOutOfRange);
  CHECK_FUCINA_ERROR(x.zeroRows(ctx, "a", ints(ctx, {"k"}, {1}, {2}, DType::i64)), IndexOutOfRange);
  CHECK_FUCINA_ERROR(x.zeroRows(ctx, "a", ints(ctx, {"k"}, {1}, {kMin}, DType::i64)), IndexOutOfRange);
  CHECK_FUCINA_ERROR(x.indexAdd(ctx, "b", Tensor::zeros(ctx, {"k"}, {2}), s2), DTypeMismatch);
  CHECK_FUCINA_ERROR(x.zeroRows(ctx, "b", ints(ctx, {"k"}, {1}, {0}, DType::u8)), DTypeMismatch);
  CHECK_FUCINA_ERROR(x.setRows(ctx, "b", ints(ctx, {"k", "j"}, {2, 1}, {0, 1}), s2), ShapeMismatch);  // 2-D indices
  CHECK_FUCINA_ERROR(x.indexAdd(ctx, "b", two, Tensor::ones(ctx, {"a", "b"}, {2, 3})), ShapeMismatch);
  CHECK_FUCINA_ERROR(x.indexAdd(ctx, "b", two, Tensor::ones(ctx, {"a", "b"}, {1, 2})), ShapeMismatch);
  CHECK_FUCINA_ERROR(x.setRows(ctx, "b", two, Tensor::ones(ctx, {"a", "c"}, {2, 2})), ShapeMismatch);
  CHECK_FUCINA_ERROR(x.setRows(ctx, "b", two, Tensor::ones(ctx, {"a", "b", "c"}, {2, 2, 1})), ShapeMismatch);
  CHECK_FUCINA_ERROR(x.indexAdd(ctx, "zz", two, s2), ShapeMismatch);
  CHECK_FUCINA_ERROR(x.indexAdd(ctx, "b", two, s2.to(ctx, DType::i32)), DTypeMismatch);
  Tensor h = Tensor::variableFromSlice(ctx, {"a", "b"}, {2, 3}, iota(6), DType::f16);
  CHECK_FUCINA_ERROR(h.indexAdd(ctx, "b", two, s2), UnsupportedGradient);
  CHECK_FUCINA_ERROR(h.zeroRows(ctx, "b", two), UnsupportedGradient);
  Tensor sidx = ints(ctx, {"a", "b"}, {1, 2}, {0, 5});
  CHECK_FUCINA_ERROR(x.scatter(ctx, "b", sidx, Tensor::ones(ctx, {"a", "b"}, {1, 2})), IndexOutOfRange);
  CHECK_FUCINA_ERROR(x.scatter(ctx, "b", ints(ctx, {"a", "b"}, {1, 1}, {0}), Tensor::ones(ctx, {"a", "b"}, {1, 2})), ShapeMismatch);
  CHECK_FUCINA_ERROR(x.scatter(ctx, "b", ints(ctx, {"b"}, {1}, {0}), Tensor::ones(ctx, {"b"}, {1})), ShapeMismatch);
  CHECK_FUCINA_ERROR(x.scatter(ctx, "b", Tensor::zeros(ctx, {"a", "b"}, {1, 1}), Tensor::ones(ctx, {"a", "b"}, {1, 1})), DTypeMismatch);
}

TEST_CASE("maskedSelect and maskedScatter: row-major positions, broadcast masks, gradients") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"a", "b"}, {2, 3}, iota(6));
  Tensor mask = ints(ctx, {"b"}, {3}, {1, 0, 1}, DType::u8);  // broadcast over a
  Tensor sel = x.maskedSelect(ctx, mask, "k");
  CHECK(sel.tags() == Tags{"k"});
  CHECK(sel.toVector() == std::vector<float>{0, 2, 3, 5});
  weighted(ctx, sel).backward(ctx);
  CHECK(test::gradOf(ctx, x) == std::vector<float>{1, 0, 2, 3, 0, 4});
  // Row-major in x's own axis order; an f32 mask is set where nonzero.
  Tensor fm = Tensor::fromSlice(ctx, {"b", "a"}, {3, 2}, {0.5f, 0, 0, 0, 0, -1});
  CHECK(x.maskedSelect(ctx, fm, "k").toVector() == std::vector<float>{0, 5});
  CHECK(x.permuteTo(ctx, {"b", "a"}).maskedSelect(ctx, fm, "k").toVector() == std::vector<float>{0, 5});
  CHECK(x.maskedSelect(ctx, Tensor::zeros(ctx, {"a"}, {2}), "k").shape() == Extents{0});  // empty result
  x.zeroGrad();
  Tensor src = Tensor::variableFromSlice(ctx, {"s"}, {5}, {10, 20, 30, 40, 50});
  Tensor y = x.maskedScatter(ctx, mask, src);
  CHECK(y.tags() == Tags{"a", "b"});
  CHECK(y.toVector() == std::vector<float>{10, 1, 20, 30, 4, 40});
  weighted(ctx, y).backward(ctx);
  CHECK(test::gradOf(ctx, x) == std::vector<float>{0, 2, 0, 0, 5, 0});
  CHECK(test::gradOf(ctx, src) == std::vector<float>{1, 3, 4, 6, 0});
  // Awkward layouts: permuted, narrowed and broadcast inputs, a 2-D source in another order.
  Tensor x3 = Tensor::variableFromSlice(ctx, {"a", "b", "c"}, {3, 4, 2}, test::wave(24, 1.0f, 0.1f, 0.7f));
  Tensor m3 = ints(ctx, {"c", "b"}, {2, 4}, {1, 0, 0, 1, 1, 1, 0, 1}, DType::u8);
  Tensor s3 = Tensor::variableFromSlice(ctx, {"p", "q"}, {4, 5}, test::wave(20, 0.9f, 0.2f, 1.1f));
  fucina::gradcheck(ctx, [&](ExecContext& c) { return probe(c, x3.maskedSelect(c, m3, "k")); }, {&x3});
  fucina::gradcheck(ctx, [&](ExecContext& c) { return probe(c, x3.permuteTo(c, {"c", "a", "b"}).narrow(c, "a", 1, 2).maskedSelect(c, m3, "k")); }, {&x3});
  fucina::gradcheck(ctx, [&](ExecContext& c) { return probe(c, x3.maskedScatter(c, m3, s3)); }, {&x3, &s3});
  fucina::gradcheck(ctx, [&](ExecContext& c) {
    return probe(c, x3.permuteTo(c, {"b", "c", "a"}).maskedScatter(c, m3, s3.permuteTo(c, {"q", "p"})));
  }, {&x3, &s3});
  Tensor v = Tensor::variableFromSlice(ctx, {"c"}, {2}, {1, -2});
  fucina::gradcheck(ctx, [&](ExecContext& c) { return probe(c, v.broadcastTo(c, {"b", "c"}, {4, 2}).maskedSelect(c, m3, "k")); }, {&v});
  // A source longer than needed; none set; a constant x.
  CHECK(Tensor::zeros(ctx, {"b"}, {3}).maskedScatter(ctx, mask, src).toVector() == std::vector<float>{10, 0, 20});
  CHECK(x.maskedScatter(ctx, Tensor::zeros(ctx, {"b"}, {3}, DType::u8), Tensor::zeros(ctx, {"s"}, {0})).toVector() == iota(6));
  CHECK(Tensor::ones(ctx, {"a", "b"}, {2, 3}, DType::f16).maskedSelect(ctx, mask, "k").dtype() == DType::f16);
}

TEST_CASE("maskedSelect, maskedScatter: bad inputs") {
  ExecContext ctx;
  Tensor x = Tensor::ones(ctx, {"a", "b"}, {2, 3});
  Tensor mask = ints(ctx, {"a", "b"}, {2, 3}, {1, 1, 1, 0, 0, 0}, DType::u8);
  CHECK_FUCINA_ERROR(x.maskedSelect(ctx, ints(ctx, {"b"}, {3}, {1, 0, 1}), "k"), DTypeMismatch);  // i32 mask
  CHECK_FUCINA_ERROR(x.maskedSelect(ctx, Tensor::ones(ctx, {"b"}, {3}, DType::f16), "k"), DTypeMismatch);
  CHECK_FUCINA_ERROR(x.maskedSelect(ctx, ints(ctx, {"c"}, {3}, {1, 0, 1}, DType::u8), "k"), ShapeMismatch);
  CHECK_FUCINA_ERROR(x.maskedSelect(ctx, ints(ctx, {"b"}, {1}, {1}, DType::u8), "k"), ShapeMismatch);  // no size-1 stretching
  CHECK_FUCINA_ERROR(x.maskedScatter(ctx, mask, Tensor::ones(ctx, {"s"}, {2})), ShapeMismatch);
  CHECK_THROWS_WITH(x.maskedScatter(ctx, mask, Tensor::ones(ctx, {"s"}, {2})), Catch::Contains("sets 3 elements"));
  CHECK_FUCINA_ERROR(x.maskedScatter(ctx, mask, ints(ctx, {"s"}, {3}, {1, 2, 3})), DTypeMismatch);
  CHECK_FUCINA_ERROR(x.maskedScatter(ctx, ints(ctx, {"a"}, {2}, {1, 0}, DType::i64), Tensor::ones(ctx, {"s"}, {3})), DTypeMismatch);
  Tensor h = Tensor::variableFromSlice(ctx, {"a", "b"}, {2, 3}, iota(6), DType::bf16);
  CHECK_FUCINA_ERROR(h.maskedSelect(ctx, mask, "k"), UnsupportedGradient);
}

TEST_CASE("setSlice and zeroSlice: out-of-place slice updates and their gradients") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"a", "b"}, {2, 4}, iota(8));
  Tensor src = Tensor::variableFromSlice(ctx, {"b", "a"}, {2, 2}, {10, 30, 20, 40});  // another axis order
  Tensor y = x.setSlice(ctx, "b", 1, src);
  CHECK(y.tags() == Tags{"a", "b"});
  CHECK(y.toVector() == std::vector<float>{0, 10, 20, 3, 4, 30, 40, 7});
  weighted(ctx, y).backward(ctx);
  CHECK(test::gradOf(ctx, x) == std::vector<float>{1, 0, 0, 4, 5, 0, 0, 8});
  CHECK(test::gradOf(ctx, src) == std::vector<float>{2, 6, 3, 7});
  x.zeroGrad();
  Tensor z = x.zeroSlice(ctx, "b", 1, 3);
  CHECK(z.toVector() == std::vector<float>{0, 0, 0, 3, 4, 0, 0, 7});
  weighted(ctx, z).backward(ctx);
  CHECK(test::gradOf(ctx, x) == std::vector<float>{1, 0, 0, 4, 5, 0, 0, 8});
  // Empty slices and sources change nothing; the whole axis; size-1 axes.
  CHECK(x.zeroSlice(ctx, "b", 4, 4).toVector() == iota(8));
  CHECK(x.setSlice(ctx, "b", 4, Tensor::zeros(ctx, {"a", "b"}, {2, 0})).toVector() == iota(8));
  CHECK(x.zeroSlice(ctx, "a", 0, 2).toVector() == std::vector<float>(8, 0.0f));
  Tensor x3 = Tensor::variableFromSlice(ctx, {"a", "b", "c"}, {3, 5, 1}, test::wave(15, 1.0f, 0.1f, 0.7f));
  Tensor s3 = Tensor::variableFromSlice(ctx, {"c", "b", "a"}, {1, 2, 3}, test::wave(6, 0.8f, 0.4f, 1.3f));
  fucina::gradcheck(ctx, [&](ExecContext& c) { return probe(c, x3.setSlice(c, "b", 3, s3)); }, {&x3, &s3});
  fucina::gradcheck(ctx, [&](ExecContext& c) {
    return probe(c, x3.permuteTo(c, {"c", "b", "a"}).narrow(c, "b", 1, 4).setSlice(c, "b", 0, s3.permuteTo(c, {"a", "c", "b"})));
  }, {&x3, &s3});
  fucina::gradcheck(ctx, [&](ExecContext& c) { return probe(c, x3.permuteTo(c, {"b", "a", "c"}).zeroSlice(c, "a", 1, 2)); }, {&x3});
  Tensor v = Tensor::variableFromSlice(ctx, {"b"}, {5}, {1, 2, 3, 4, 5});
  Tensor row = Tensor::variableFromSlice(ctx, {"b", "a"}, {5, 1}, {-1, 2, -3, 4, -5});
  fucina::gradcheck(ctx, [&](ExecContext& c) { return probe(c, v.broadcastTo(c, {"a", "b"}, {2, 5}).setSlice(c, "a", 1, row)); }, {&v, &row});
  // Any dtype but q8_0: the copies keep it.
  Tensor i = ints(ctx, {"b"}, {4}, {1, 2, 3, 4});
  CHECK(i.setSlice(ctx, "b", 2, ints(ctx, {"b"}, {1}, {9})).toVector() == std::vector<float>{1, 2, 9, 4});
  CHECK(i.zeroSlice(ctx, "b", 0, 1).dtype() == DType::i32);
}

TEST_CASE("setSlice and zeroSlice: bad inputs") {
  ExecContext ctx;
  Tensor x = Tensor::ones(ctx, {"a", "b"}, {2, 4});
  Tensor s = Tensor::ones(ctx, {"a", "b"}, {2, 2});
  CHECK_FUCINA_ERROR(x.setSlice(ctx, "b", 3, s), IndexOutOfRange);
  CHECK_THROWS_WITH(x.setSlice(ctx, "b", 3, s), Catch::Contains("need 0 <= start <= 2"));
  CHECK_FUCINA_ERROR(x.setSlice(ctx, "b", -1, s), IndexOutOfRange);
  CHECK_FUCINA_ERROR(x.setSlice(ctx, "b", kMax, s), IndexOutOfRange);
  CHECK_FUCINA_ERROR(x.setSlice(ctx, "b", kMin, s), IndexOutOfRange);
  CHECK_FUCINA_ERROR(x.setSlice(ctx, "b", 0, Tensor::ones(ctx, {"a", "b"}, {2, 5})), IndexOutOfRange);
  CHECK_FUCINA_ERROR(x.setSlice(ctx, "b", 0, Tensor::ones(ctx, {"a", "b"}, {1, 2})), ShapeMismatch);
  CHECK_FUCINA_ERROR(x.setSlice(ctx, "b", 0, Tensor::ones(ctx, {"a", "c"}, {2, 2})), ShapeMismatch);
  CHECK_FUCINA_ERROR(x.setSlice(ctx, "b", 0, Tensor::ones(ctx, {"b"}, {2})), ShapeMismatch);
  CHECK_FUCINA_ERROR(x.setSlice(ctx, "zz", 0, s), ShapeMismatch);
  CHECK_FUCINA_ERROR(x.setSlice(ctx, "b", 0, s.to(ctx, DType::f16)), DTypeMismatch);
  CHECK_FUCINA_ERROR(x.zeroSlice(ctx, "b", 3, 2), IndexOutOfRange);
  CHECK_FUCINA_ERROR(x.zeroSlice(ctx, "b", 0, 5), IndexOutOfRange);
  CHECK_FUCINA_ERROR(x.zeroSlice(ctx, "b", -1, 2), IndexOutOfRange);
  CHECK_FUCINA_ERROR(x.zeroSlice(ctx, "b", kMin, kMax), IndexOutOfRange);
  CHECK_FUCINA_ERROR(x.zeroSlice(ctx, "zz", 0, 1), ShapeMismatch);
  Tensor q = Tensor::ones(ctx, {"a", "b"}, {2, 32}).quantize(ctx, DType::q8_0, "b");
  CHECK_FUCINA_ERROR(q.zeroSlice(ctx, "a", 0, 1), DTypeMismatch);
  CHECK_FUCINA_ERROR(q.setSlice(ctx, "a", 0, q.narrow(ctx, "a", 0, 1)), DTypeMismatch);
}
