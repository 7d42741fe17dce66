// The views, flips and shifts (ops/strided_views.cpp, ops/shift.cpp, ops/pad2d.cpp):
// alignTo, viewWithStrides, materialize, sliceStep, zeroPad2d, constantPad2d, unbindInto,
// repeatAxis, flip, roll, rollBy, shiftBy, relposShift. Hand-checked values, which results share
// storage, gradcheck on permuted / narrowed / broadcast inputs with size-1 and empty axes, every
// bad input with its code, other dtypes, constants, and 1 vs 2 threads.
#include "test_helpers.h"

#include <array>
#include <cstdint>
#include <limits>
#include <vector>

using fucina::DType;
using fucina::ExecContext;
using fucina::ExecOptions;
using fucina::Tag;
using fucina::Extents;
using fucina::Tags;
using fucina::Tensor;

namespace {

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

// sum(tanh(y) * w) with fixed weights laid out like y: a loss that sees every element's position.
Tensor probe(ExecContext& c, const Tensor& y) {
  Tensor w = Tensor::fromSlice(c, y.tags(), y.shape(), test::wave(static_cast<size_t>(y.numel()), 1.0f, 0.3f, 0.7f));
  return y.tanh(c).mul(c, w).sumAll(c);
}

std::vector<float> iota(size_t n, float from = 0) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = from + static_cast<float>(i);
  return v;
}

// A variable {c=5, a=2, b=3}; the gradchecks read it through awk(), as {a, b, c}, so that every op
// sees a non-contiguous input.
Tensor permutedVariable(ExecContext& ctx) {
  return Tensor::variableFromSlice(ctx, {"c", "a", "b"}, {5, 2, 3}, test::wave(30, 1.0f, 0.2f, 0.45f));
}
Tensor awk(ExecContext& c, const Tensor& v) { return v.permuteTo(c, {"a", "b", "c"}); }

bool sharesStorage(const Tensor& a, const Tensor& b) { return a.value().storage() == b.value().storage(); }

}  // namespace

TEST_CASE("alignTo: permutes and adds extent-1 axes as a view") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"a", "b"}, {2, 3}, iota(6));
  Tensor y = x.alignTo(ctx, {"n", "b", "m", "a"});
  CHECK(y.tags() == Tags{"n", "b", "m", "a"});
  CHECK(y.shape() == Extents{1, 3, 1, 2});
  CHECK(y.toVector() == std::vector<float>{0, 3, 1, 4, 2, 5});
  CHECK(sharesStorage(x, y));
  y.mul(ctx, Tensor::fromSlice(ctx, y.tags(), y.shape(), iota(6, 1))).sumAll(ctx).backward(ctx);
  CHECK(test::gradOf(ctx, x) == std::vector<float>{1, 3, 5, 2, 4, 6});
  // Exactly its own axes: a permutation; none: a scalar stays a scalar with new axes.
  CHECK(x.alignTo(ctx, {"b", "a"}).toVector() == std::vector<float>{0, 3, 1, 4, 2, 5});
  CHECK(Tensor::scalar(ctx, 4).alignTo(ctx, {"p", "q"}).shape() == Extents{1, 1});
  Tensor v = permutedVariable(ctx);
  fucina::gradcheck(ctx, [&](ExecContext& c) { return probe(c, awk(c, v).alignTo(c, {"b", "z", "a", "c"})); }, {&v});
  fucina::gradcheck(ctx, [&](ExecContext& c) { return probe(c, awk(c, v).narrow(c, "c", 1, 3).alignTo(c, {"c", "b", "a"})); }, {&v});
  // Any dtype, constants stay constants.
  const Tensor i = Tensor::fromInts(ctx, {"a"}, {2}, {7, 8});
  CHECK(i.alignTo(ctx, {"x", "a"}).dtype() == DType::i32);
  CHECK_FALSE(i.alignTo(ctx, {"x", "a"}).requiresGrad());
  REQUIRE_FUCINA_ERROR(x.alignTo(ctx, {"a"}), ShapeMismatch);  // b is missing
  REQUIRE_FUCINA_ERROR(x.alignTo(ctx, {"a", "b", "a"}), InvalidArgument);
  REQUIRE_FUCINA_ERROR(x.alignTo(ctx, {"a", "b", "n", "n"}), InvalidArgument);
}

TEST_CASE("viewWithStrides: as_strided over the row-major elements, overlapping views accumulate") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"t"}, {5}, iota(5, 1));
  // Sliding windows of 3 with stride 1: each middle element is read up to three times.
  Tensor w = x.viewWithStrides(ctx, {"win", "k"}, {3, 3}, {1, 1});
  CHECK(w.toVector() == std::vector<float>{1, 2, 3, 2, 3, 4, 3, 4, 5});
  CHECK(sharesStorage(x, w));
  w.sumAll(ctx).backward(ctx);
  CHECK(test::gradOf(ctx, x) == std::vector<float>{1, 2, 3, 2, 1});
  fucina::gradcheck(ctx, [&](ExecContext& c) { return probe(c, x.viewWithStrides(c, {"win", "k"}, {3, 3}, {1, 1})); }, {&x});
  // With an offset, a zero stride (broadcast) and a size-1 axis.
  CHECK(x.viewWithStrides(ctx, {"p", "q", "r"}, {2, 1, 2}, {0, 7, 2}, 1).toVector() == std::vector<float>{2, 4, 2, 4});
  // A permuted input is read in row-major order of its own axes: its contiguous copy, viewed.
  Tensor m = Tensor::variableFromSlice(ctx, {"c", "r"}, {3, 2}, iota(6));  // m[c, r] = 2c + r
  Tensor mt = m.permuteTo(ctx, {"r", "c"});                                // row-major: 0 2 4 1 3 5
  CHECK(mt.viewWithStrides(ctx, {"d"}, {2}, {4}, 1).toVector() == std::vector<float>{2, 5});
  fucina::gradcheck(ctx, [&](ExecContext& c) {
    return probe(c, m.permuteTo(c, {"r", "c"}).viewWithStrides(c, {"u", "v"}, {2, 4}, {1, 1}));
  }, {&m});
  Tensor v = permutedVariable(ctx);
  fucina::gradcheck(ctx, [&](ExecContext& c) {
    return probe(c, awk(c, v).narrow(c, "b", 1, 2).viewWithStrides(c, {"i", "j", "k"}, {3, 2, 4}, {4, 3, 2}, 1));
  }, {&v});
  // Empty views may start at the end; nothing is read.
  CHECK(x.viewWithStrides(ctx, {"e"}, {0}, {9}, 5).numel() == 0);
  CHECK(x.viewWithStrides(ctx, {"e", "f"}, {0, 4}, {1, kMax}, 5).numel() == 0);
  // Bad inputs.
  REQUIRE_FUCINA_ERROR(x.viewWithStrides(ctx, {"d"}, {3}, {2}, 1), InvalidArgument);       // reaches element 5
  REQUIRE_FUCINA_ERROR(x.viewWithStrides(ctx, {"d"}, {1}, {1}, 5), InvalidArgument);       // offset past the end
  REQUIRE_FUCINA_ERROR(x.viewWithStrides(ctx, {"d"}, {2}, {1}, -1), InvalidArgument);
  REQUIRE_FUCINA_ERROR(x.viewWithStrides(ctx, {"d"}, {2}, {-1}, 4), InvalidArgument);
  REQUIRE_FUCINA_ERROR(x.viewWithStrides(ctx, {"d"}, {3}, {kMax}), InvalidArgument);      // overflows
  REQUIRE_FUCINA_ERROR(x.viewWithStrides(ctx, {"d", "e"}, {2, 2}, {kMax, kMax}), InvalidArgument);
  REQUIRE_FUCINA_ERROR(x.viewWithStrides(ctx, {"d"}, {2}, {1, 1}), InvalidArgument);       // counts disagree
  REQUIRE_FUCINA_ERROR(x.viewWithStrides(ctx, {"d", "e"}, {2}, {1}), InvalidArgument);
  REQUIRE_FUCINA_ERROR(x.viewWithStrides(ctx, {"d", "d"}, {1, 1}, {0, 0}), ShapeMismatch);  // a tag twice
  const Tensor q = Tensor::ones(ctx, {"r", "c"}, {2, 32}).quantize(ctx, DType::q8_0, "c");
  REQUIRE_FUCINA_ERROR(q.viewWithStrides(ctx, {"d"}, {2}, {1}), DTypeMismatch);
  // Other dtypes are viewed as they are.
  const Tensor h = Tensor::fromSlice(ctx, {"t"}, {4}, {1, 2, 3, 4}).to(ctx, DType::f16);
  CHECK(h.viewWithStrides(ctx, {"d"}, {2}, {2}, 1).dtype() == DType::f16);
  CHECK(h.viewWithStrides(ctx, {"d"}, {2}, {2}, 1).toVector() == std::vector<float>{2, 4});
}

TEST_CASE("materialize: a fresh contiguous copy even when already contiguous") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"a", "b"}, {2, 3}, iota(6));
  CHECK(sharesStorage(x, x.contiguous(ctx)));
  Tensor y = x.materialize(ctx);
  CHECK_FALSE(sharesStorage(x, y));
  CHECK(y.toVector() == x.toVector());
  CHECK(y.value().isContiguous());
  Tensor p = x.permuteTo(ctx, {"b", "a"}).materialize(ctx);
  CHECK(p.value().isContiguous());
  CHECK(p.toVector() == std::vector<float>{0, 3, 1, 4, 2, 5});
  Tensor v = permutedVariable(ctx);
  fucina::gradcheck(ctx, [&](ExecContext& c) { return probe(c, awk(c, v).materialize(c)); }, {&v});
  fucina::gradcheck(ctx, [&](ExecContext& c) {
    return probe(c, awk(c, v).sum(c, "a").broadcastTo(c, {"b", "a", "c"}, {3, 2, 5}).materialize(c));
  }, {&v});
  const Tensor q = Tensor::ones(ctx, {"r", "c"}, {2, 32}).quantize(ctx, DType::q8_0, "c");
  CHECK(q.materialize(ctx).dtype() == DType::q8_0);
  CHECK(Tensor::zeros(ctx, {"e"}, {0}).materialize(ctx).numel() == 0);
}

TEST_CASE("sliceStep: Python slicing, negative steps copy") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"a", "t"}, {1, 7}, iota(7));
  auto s = [&](int64_t start, int64_t end, int64_t step) { return x.sliceStep(ctx, "t", start, end, step).toVector(); };
  CHECK(s(1, 6, 2) == std::vector<float>{1, 3, 5});
  CHECK(s(-3, 100, 1) == std::vector<float>{4, 5, 6});
  CHECK(s(-100, 2, 1) == std::vector<float>{0, 1});
  CHECK(s(5, 2, 1).empty());
  CHECK(s(5, 0, -2) == std::vector<float>{5, 3, 1});
  CHECK(s(-1, -8, -1) == std::vector<float>{6, 5, 4, 3, 2, 1, 0});
  CHECK(s(-1, kMin, -3) == std::vector<float>{6, 3, 0});
  CHECK(s(100, 4, -1) == std::vector<float>{6, 5});
  CHECK(s(2, 5, -1).empty());
  CHECK(s(3, -100, kMin) == std::vector<float>{3});
  CHECK(s(0, kMax, kMax) == std::vector<float>{0});
  CHECK(x.sliceStep(ctx, "t", 1, 6, 2).shape() == Extents{1, 3});
  CHECK(sharesStorage(x, x.sliceStep(ctx, "t", 1, 6, 2)));  // a positive step is a view
  CHECK_FALSE(sharesStorage(x, x.sliceStep(ctx, "t", 5, 0, -2)));
  x.sliceStep(ctx, "t", 6, 0, -3).mul(ctx, Tensor::fromSlice(ctx, {"a", "t"}, {1, 2}, {10, 20})).sumAll(ctx).backward(ctx);
  CHECK(test::gradOf(ctx, x) == std::vector<float>{0, 0, 0, 20, 0, 0, 10});
  Tensor v = permutedVariable(ctx);
  const std::vector<std::array<int64_t, 3>> slices = {{4, -6, -2}, {-1, kMin, -1}, {1, 5, 3}, {3, 3, -1}, {0, 1, -1}};
  for (const auto& a : slices)
    fucina::gradcheck(ctx, [&](ExecContext& c) { return probe(c, awk(c, v).sliceStep(c, "c", a[0], a[1], a[2])); }, {&v});
  fucina::gradcheck(ctx, [&](ExecContext& c) { return probe(c, awk(c, v).narrow(c, "b", 1, 2).sliceStep(c, "b", 1, -3, -1)); }, {&v});
  REQUIRE_FUCINA_ERROR(x.sliceStep(ctx, "t", 0, 3, 0), InvalidArgument);
  REQUIRE_FUCINA_ERROR(x.sliceStep(ctx, "z", 0, 3, 1), ShapeMismatch);
  const Tensor q = Tensor::ones(ctx, {"r", "c"}, {2, 64}).quantize(ctx, DType::q8_0, "c");
  REQUIRE_FUCINA_ERROR(q.sliceStep(ctx, "c", 40, 2, -1), DTypeMismatch);
  CHECK(q.sliceStep(ctx, "r", 1, 2, 1).shape() == Extents{1, 64});  // other axes of q8_0 still slice
  const Tensor i = Tensor::fromInts(ctx, {"t"}, {4}, {1, 2, 3, 4}, DType::i64);
  CHECK(i.sliceStep(ctx, "t", -1, kMin, -2).toVector() == std::vector<float>{4, 2});
  CHECK(i.sliceStep(ctx, "t", -1, kMin, -2).dtype() == DType::i64);
}

TEST_CASE("zeroPad2d and constantPad2d: torch's pad on two named axes, negative pads crop") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"h", "w"}, {2, 3}, iota(6, 1));
  // (left, right, top, bottom) = (1, 0, 0, 1)
  CHECK(x.zeroPad2d(ctx, "h", "w", {1, 0, 0, 1}).shape() == Extents{3, 4});
  CHECK(x.zeroPad2d(ctx, "h", "w", {1, 0, 0, 1}).toVector() == std::vector<float>{0, 1, 2, 3, 0, 4, 5, 6, 0, 0, 0, 0});
  CHECK(x.constantPad2d(ctx, "h", "w", {0, 1, 1, 0}, -1).toVector() ==
        std::vector<float>{-1, -1, -1, -1, 1, 2, 3, -1, 4, 5, 6, -1});
  // Negative pads crop: one column off the left, one row off the top, then a column of 9 on the right.
  CHECK(x.constantPad2d(ctx, "h", "w", {-1, 1, -1, 0}, 9).toVector() == std::vector<float>{5, 6, 9});
  // Cropping past the input leaves only padding; cropping everything leaves an empty axis.
  CHECK(x.constantPad2d(ctx, "h", "w", {-4, 2, 0, 0}, 7).toVector() == std::vector<float>{7, 7});
  CHECK(x.zeroPad2d(ctx, "h", "w", {0, 0, -1, -1}).shape() == Extents{0, 3});
  CHECK(x.zeroPad2d(ctx, "h", "w", {5, -7, 0, 0}).shape() == Extents{2, 1});
  CHECK(x.zeroPad2d(ctx, "h", "w", {5, -7, 0, 0}).toVector() == std::vector<float>{0, 0});
  // The axes are named: w first in memory works the same.
  CHECK(x.permuteTo(ctx, {"w", "h"}).zeroPad2d(ctx, "h", "w", {1, 0, 0, 1}).permuteTo(ctx, {"h", "w"}).toVector() ==
        x.zeroPad2d(ctx, "h", "w", {1, 0, 0, 1}).toVector());
  x.constantPad2d(ctx, "h", "w", {-1, 1, 0, 1}, 3).sumAll(ctx).backward(ctx);
  CHECK(test::gradOf(ctx, x) == std::vector<float>{0, 1, 1, 0, 1, 1});
  Tensor v = permutedVariable(ctx);  // {c=5, a=2, b=3}; h = c, w = b
  const std::vector<std::array<int64_t, 4>> pads = {{1, 2, 0, 1}, {-1, 1, 2, -2}, {0, 0, -3, 1}, {-2, -1, 0, 0}};
  for (const auto& p : pads) {
    fucina::gradcheck(ctx, [&](ExecContext& c) { return probe(c, awk(c, v).zeroPad2d(c, "c", "b", p)); }, {&v});
    fucina::gradcheck(ctx, [&](ExecContext& c) { return probe(c, awk(c, v).narrow(c, "c", 1, 3).constantPad2d(c, "c", "b", p, 0.5)); }, {&v});
  }
  REQUIRE_FUCINA_ERROR(x.zeroPad2d(ctx, "h", "h", {1, 1, 1, 1}), InvalidArgument);
  REQUIRE_FUCINA_ERROR(x.zeroPad2d(ctx, "h", "z", {1, 1, 1, 1}), ShapeMismatch);
  REQUIRE_FUCINA_ERROR(x.zeroPad2d(ctx, "h", "w", {-2, -2, 0, 0}), InvalidArgument);  // extent 3 - 4
  REQUIRE_FUCINA_ERROR(x.zeroPad2d(ctx, "h", "w", {0, 0, kMin, 0}), InvalidArgument);
  REQUIRE_FUCINA_ERROR(x.zeroPad2d(ctx, "h", "w", {kMax, 1, 0, 0}), InvalidArgument);  // overflow
  REQUIRE_FUCINA_ERROR(x.zeroPad2d(ctx, "h", "w", {kMax - 5, 0, 0, 0}), InvalidArgument);  // too many elements
  CHECK(x.zeroPad2d(ctx, "h", "w", {kMin, kMax, 0, 0}).shape() == Extents{2, 2});  // -2^63 + 2^63-1 + 3
  const Tensor q = Tensor::ones(ctx, {"h", "w"}, {2, 32}).quantize(ctx, DType::q8_0, "w");
  REQUIRE_FUCINA_ERROR(q.zeroPad2d(ctx, "h", "w", {0, 0, 1, 0}), DTypeMismatch);
  const Tensor i = Tensor::fromInts(ctx, {"h", "w"}, {1, 1}, {5}, DType::u8);
  CHECK(i.constantPad2d(ctx, "h", "w", {1, 0, 0, 0}, 2).toVector() == std::vector<float>{2, 5});
  CHECK(i.constantPad2d(ctx, "h", "w", {1, 0, 0, 0}, 2).dtype() == DType::u8);
}

TEST_CASE("unbindInto: one select view per index") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"a", "b"}, {2, 3}, iota(6));
  const std::vector<Tensor> rows = x.unbindInto(ctx, "b");
  REQUIRE(rows.size() == 3);
  CHECK(rows[1].tags() == Tags{"a"});
  CHECK(rows[1].toVector() == std::vector<float>{1, 4});
  for (const Tensor& r : rows) CHECK(sharesStorage(x, r));
  rows[0].add(ctx, rows[2].scale(ctx, 3)).sumAll(ctx).backward(ctx);
  CHECK(test::gradOf(ctx, x) == std::vector<float>{1, 0, 3, 1, 0, 3});
  Tensor v = permutedVariable(ctx);
  fucina::gradcheck(ctx, [&](ExecContext& c) {
    const std::vector<Tensor> parts = awk(c, v).unbindInto(c, "c");
    Tensor acc = probe(c, parts[0]);
    for (size_t k = 1; k < parts.size(); ++k) acc = acc.add(c, probe(c, parts[k].scale(c, double(k + 1))));
    return acc;
  }, {&v});
  CHECK(Tensor::zeros(ctx, {"a", "e"}, {2, 0}).unbindInto(ctx, "e").empty());
  CHECK(Tensor::zeros(ctx, {"a", "e"}, {2, 0}).unbindInto(ctx, "a").size() == 2);
  REQUIRE_FUCINA_ERROR(x.unbindInto(ctx, "z"), ShapeMismatch);
}

TEST_CASE("repeatAxis: tiled or interleaved, the gradient sums the copies") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"h", "d"}, {2, 2}, {1, 2, 3, 4});
  CHECK(x.repeatAxis(ctx, "h", 2).toVector() == std::vector<float>{1, 2, 3, 4, 1, 2, 3, 4});
  CHECK(x.repeatAxis(ctx, "h", 2, true).toVector() == std::vector<float>{1, 2, 1, 2, 3, 4, 3, 4});
  CHECK(x.repeatAxis(ctx, "d", 3).toVector() == std::vector<float>{1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4});
  CHECK(x.repeatAxis(ctx, "d", 3, true).toVector() == std::vector<float>{1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4});
  CHECK(x.repeatAxis(ctx, "d", 3).shape() == Extents{2, 6});
  CHECK(x.repeatAxis(ctx, "d", 1).toVector() == x.toVector());
  x.repeatAxis(ctx, "h", 3, true).mul(ctx, Tensor::fromSlice(ctx, {"h"}, {6}, iota(6))).sumAll(ctx).backward(ctx);
  CHECK(test::gradOf(ctx, x) == std::vector<float>{3, 3, 12, 12});
  Tensor e = Tensor::variableFromSlice(ctx, {"h"}, {2}, {1, 2});
  Tensor none = e.repeatAxis(ctx, "h", 0);
  CHECK(none.shape() == Extents{0});
  none.sumAll(ctx).backward(ctx);
  CHECK(test::gradOf(ctx, e) == std::vector<float>{0, 0});
  Tensor v = permutedVariable(ctx);
  for (const bool interleave : {false, true}) {
    fucina::gradcheck(ctx, [&](ExecContext& c) { return probe(c, awk(c, v).repeatAxis(c, "a", 3, interleave)); }, {&v});
    fucina::gradcheck(ctx, [&](ExecContext& c) { return probe(c, awk(c, v).narrow(c, "c", 2, 3).repeatAxis(c, "c", 2, interleave)); }, {&v});
    fucina::gradcheck(ctx, [&](ExecContext& c) {
      return probe(c, awk(c, v).sum(c, "a").broadcastTo(c, {"b", "a", "c"}, {3, 2, 5}).repeatAxis(c, "a", 2, interleave));
    }, {&v});
  }
  // A tensor already using the counting axis's name.
  Tensor r = Tensor::variableFromSlice(ctx, {"repeat", "x"}, {2, 1}, {1, 2});
  CHECK(r.repeatAxis(ctx, "x", 2, true).toVector() == std::vector<float>{1, 1, 2, 2});
  fucina::gradcheck(ctx, [&](ExecContext& c) { return probe(c, r.repeatAxis(c, "repeat", 2)); }, {&r});
  REQUIRE_FUCINA_ERROR(x.repeatAxis(ctx, "h", -1), InvalidArgument);
  REQUIRE_FUCINA_ERROR(x.repeatAxis(ctx, "z", 2), ShapeMismatch);
  REQUIRE_FUCINA_ERROR(x.repeatAxis(ctx, "h", kMax), InvalidArgument);
  REQUIRE_FUCINA_ERROR(x.repeatAxis(ctx, "h", int64_t{1} << 61), InvalidArgument);
  const Tensor q = Tensor::ones(ctx, {"r", "c"}, {2, 32}).quantize(ctx, DType::q8_0, "c");
  REQUIRE_FUCINA_ERROR(q.repeatAxis(ctx, "r", 2), DTypeMismatch);
  const Tensor h = Tensor::fromSlice(ctx, {"k"}, {2}, {1.5f, -2}).to(ctx, DType::bf16);
  CHECK(h.repeatAxis(ctx, "k", 2, true).dtype() == DType::bf16);
  CHECK(h.repeatAxis(ctx, "k", 2, true).toVector() == std::vector<float>{1.5f, 1.5f, -2, -2});
}

TEST_CASE("flip and roll") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"a", "t"}, {2, 4}, iota(8));
  CHECK(x.flip(ctx, "t").toVector() == std::vector<float>{3, 2, 1, 0, 7, 6, 5, 4});
  CHECK(x.flip(ctx, "a").toVector() == std::vector<float>{4, 5, 6, 7, 0, 1, 2, 3});
  CHECK_FALSE(sharesStorage(x, x.flip(ctx, "t")));
  CHECK(x.roll(ctx, "t", 1).toVector() == std::vector<float>{3, 0, 1, 2, 7, 4, 5, 6});
  CHECK(x.roll(ctx, "t", -1).toVector() == std::vector<float>{1, 2, 3, 0, 5, 6, 7, 4});
  CHECK(x.roll(ctx, "t", 9).toVector() == x.roll(ctx, "t", 1).toVector());
  CHECK(x.roll(ctx, "t", -7).toVector() == x.roll(ctx, "t", 1).toVector());
  CHECK(x.roll(ctx, "t", 8).toVector() == x.toVector());
  CHECK(x.roll(ctx, "t", kMin).toVector() == x.toVector());  // -2^63 is a multiple of 4
  CHECK(x.roll(ctx, "t", kMax).toVector() == x.roll(ctx, "t", 3).toVector());
  x.roll(ctx, "t", 1).mul(ctx, Tensor::fromSlice(ctx, {"t"}, {4}, {1, 2, 3, 4})).sumAll(ctx).backward(ctx);
  CHECK(test::gradOf(ctx, x) == std::vector<float>{2, 3, 4, 1, 2, 3, 4, 1});
  Tensor v = permutedVariable(ctx);
  for (Tag axis : Tags{"a", "b", "c"}) {
    fucina::gradcheck(ctx, [&](ExecContext& c) { return probe(c, awk(c, v).flip(c, axis)); }, {&v});
    for (const int64_t s : {int64_t{2}, int64_t{-1}, int64_t{11}, kMin})
      fucina::gradcheck(ctx, [&](ExecContext& c) { return probe(c, awk(c, v).roll(c, axis, s)); }, {&v});
  }
  fucina::gradcheck(ctx, [&](ExecContext& c) { return probe(c, awk(c, v).narrow(c, "c", 1, 3).flip(c, "c").roll(c, "c", -2)); }, {&v});
  fucina::gradcheck(ctx, [&](ExecContext& c) {
    return probe(c, awk(c, v).sum(c, "a").broadcastTo(c, {"b", "a", "c"}, {3, 2, 5}).flip(c, "a").roll(c, "a", 1));
  }, {&v});
  // Size 1 and empty axes.
  CHECK(x.narrow(ctx, "t", 2, 1).flip(ctx, "t").toVector() == std::vector<float>{2, 6});
  CHECK(x.narrow(ctx, "t", 2, 1).roll(ctx, "t", 5).toVector() == std::vector<float>{2, 6});
  CHECK(x.narrow(ctx, "t", 2, 0).flip(ctx, "t").numel() == 0);
  CHECK(x.narrow(ctx, "t", 2, 0).roll(ctx, "t", 3).numel() == 0);
  // Other dtypes, and a 16-bit variable whose gradient is f32.
  const Tensor i = Tensor::fromInts(ctx, {"t"}, {3}, {1, 2, 3}, DType::i64);
  CHECK(i.flip(ctx, "t").toVector() == std::vector<float>{3, 2, 1});
  CHECK(i.roll(ctx, "t", 1).dtype() == DType::i64);
  Tensor h = Tensor::variableFromSlice(ctx, {"t"}, {3}, {1, 2, 3}, DType::f16);
  Tensor hr = h.roll(ctx, "t", 1);
  CHECK(hr.dtype() == DType::f16);
  hr.flip(ctx, "t").to(ctx, DType::f32).mul(ctx, Tensor::fromSlice(ctx, {"t"}, {3}, {1, 2, 3})).sumAll(ctx).backward(ctx);
  CHECK(test::gradOf(ctx, h) == std::vector<float>{2, 1, 3});
  REQUIRE_FUCINA_ERROR(x.flip(ctx, "z"), ShapeMismatch);
  REQUIRE_FUCINA_ERROR(x.roll(ctx, "z", 1), ShapeMismatch);
  const Tensor q = Tensor::ones(ctx, {"r", "c"}, {2, 32}).quantize(ctx, DType::q8_0, "c");
  REQUIRE_FUCINA_ERROR(q.flip(ctx, "r"), DTypeMismatch);
  REQUIRE_FUCINA_ERROR(q.roll(ctx, "c", 1), DTypeMismatch);
}

TEST_CASE("rollBy and shiftBy: a shift per slice of another axis") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"b", "t"}, {3, 4}, iota(12));
  for (const DType dt : {DType::i32, DType::i64}) {
    const Tensor k = Tensor::fromInts(ctx, {"b"}, {3}, {1, -1, 6}, dt);
    CHECK(x.rollBy(ctx, "t", "b", k).toVector() == std::vector<float>{3, 0, 1, 2, 5, 6, 7, 4, 10, 11, 8, 9});
    CHECK(x.shiftBy(ctx, "t", "b", k).toVector() == std::vector<float>{0, 0, 1, 2, 5, 6, 7, 0, 0, 0, 0, 0});
  }
  const Tensor k = Tensor::fromInts(ctx, {"b"}, {3}, {2, -3, 0});
  CHECK(x.shiftBy(ctx, "t", "b", k).toVector() == std::vector<float>{0, 0, 0, 1, 7, 0, 0, 0, 8, 9, 10, 11});
  // Axes in the other order in memory; extreme shifts.
  CHECK(x.permuteTo(ctx, {"t", "b"}).rollBy(ctx, "t", "b", k).permuteTo(ctx, {"b", "t"}).toVector() ==
        x.rollBy(ctx, "t", "b", k).toVector());
  const Tensor far = Tensor::fromInts(ctx, {"b"}, {3}, {kMin, kMax, -5}, DType::i64);
  CHECK(x.rollBy(ctx, "t", "b", far).toVector() == std::vector<float>{0, 1, 2, 3, 5, 6, 7, 4, 9, 10, 11, 8});
  CHECK(x.shiftBy(ctx, "t", "b", far).toVector() == std::vector<float>(12, 0.0f));
  x.shiftBy(ctx, "t", "b", k).sumAll(ctx).backward(ctx);
  CHECK(test::gradOf(ctx, x) == std::vector<float>{1, 1, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1});
  Tensor v = permutedVariable(ctx);  // {c=5, a=2, b=3}
  const Tensor ka = Tensor::fromInts(ctx, {"a"}, {2}, {-2, 7}, DType::i64);
  const Tensor kc = Tensor::fromInts(ctx, {"c"}, {5}, {0, 1, -1, 3, -4});
  fucina::gradcheck(ctx, [&](ExecContext& c) { return probe(c, awk(c, v).rollBy(c, "c", "a", ka)); }, {&v});
  fucina::gradcheck(ctx, [&](ExecContext& c) { return probe(c, awk(c, v).shiftBy(c, "c", "a", ka)); }, {&v});
  fucina::gradcheck(ctx, [&](ExecContext& c) { return probe(c, awk(c, v).rollBy(c, "b", "c", kc)); }, {&v});
  fucina::gradcheck(ctx, [&](ExecContext& c) { return probe(c, awk(c, v).shiftBy(c, "b", "c", kc)); }, {&v});
  fucina::gradcheck(ctx, [&](ExecContext& c) {
    return probe(c, awk(c, v).narrow(c, "b", 0, 2).shiftBy(c, "b", "c", kc).rollBy(c, "c", "a", ka));
  }, {&v});
  // Empty axes: nothing to move.
  CHECK(x.narrow(ctx, "t", 0, 0).rollBy(ctx, "t", "b", k).numel() == 0);
  CHECK(x.narrow(ctx, "b", 0, 0).shiftBy(ctx, "t", "b", Tensor::fromInts(ctx, {"b"}, {0}, std::vector<int64_t>{})).numel() == 0);
  // Bad inputs.
  REQUIRE_FUCINA_ERROR(x.rollBy(ctx, "t", "b", Tensor::fromSlice(ctx, {"b"}, {3}, {1, 2, 3})), DTypeMismatch);
  REQUIRE_FUCINA_ERROR(x.shiftBy(ctx, "t", "b", Tensor::fromInts(ctx, {"b"}, {3}, {1, 2, 3}, DType::u8)), DTypeMismatch);
  REQUIRE_FUCINA_ERROR(x.rollBy(ctx, "t", "b", Tensor::fromInts(ctx, {"b"}, {2}, {1, 2})), ShapeMismatch);
  REQUIRE_FUCINA_ERROR(x.rollBy(ctx, "t", "b", Tensor::fromInts(ctx, {"q"}, {3}, {1, 2, 3})), ShapeMismatch);
  REQUIRE_FUCINA_ERROR(x.rollBy(ctx, "t", "b", Tensor::fromInts(ctx, {"b", "q"}, {3, 1}, {1, 2, 3})), ShapeMismatch);
  REQUIRE_FUCINA_ERROR(x.shiftBy(ctx, "t", "t", Tensor::fromInts(ctx, {"t"}, {4}, {1, 2, 3, 4})), InvalidArgument);
  REQUIRE_FUCINA_ERROR(x.shiftBy(ctx, "z", "b", k), ShapeMismatch);
  REQUIRE_FUCINA_ERROR(x.shiftBy(ctx, "t", "z", k), ShapeMismatch);
  const Tensor q = Tensor::ones(ctx, {"b", "c"}, {3, 32}).quantize(ctx, DType::q8_0, "c");
  REQUIRE_FUCINA_ERROR(q.rollBy(ctx, "c", "b", k), DTypeMismatch);
}

namespace {

// relposShift by its closed form, on a row-major (batch, Q, K) array.
std::vector<float> relposReference(const std::vector<float>& x, int64_t batch, int64_t q, int64_t k) {
  std::vector<float> out;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < q; ++i)
      for (int64_t j = 0; j < k; ++j) {
        const int64_t f = q + i * k + j, r = f / (k + 1), c = f % (k + 1);
        out.push_back(c == 0 ? 0.0f : x[static_cast<size_t>((b * q + r) * k + c - 1)]);
      }
  return out;
}

}  // namespace

TEST_CASE("relposShift: Transformer-XL's relative shift and its adjoint") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"q", "k"}, {2, 3}, iota(6, 1));
  CHECK(x.relposShift(ctx, "q", "k").toVector() == std::vector<float>{2, 3, 0, 4, 5, 6});
  x.relposShift(ctx, "q", "k").mul(ctx, Tensor::fromSlice(ctx, {"q", "k"}, {2, 3}, iota(6, 1))).sumAll(ctx).backward(ctx);
  CHECK(test::gradOf(ctx, x) == std::vector<float>{0, 1, 2, 4, 5, 6});
  const std::vector<std::array<int64_t, 3>> shapes = {{2, 3, 5}, {1, 4, 1}, {3, 5, 2}, {2, 1, 1}, {1, 1, 4}};
  for (const auto& s : shapes) {
    const auto n = static_cast<size_t>(s[0] * s[1] * s[2]);
    const std::vector<float> v = iota(n, 1);
    Tensor t = Tensor::fromSlice(ctx, {"b", "q", "k"}, {s[0], s[1], s[2]}, v);
    INFO(s[0] << " " << s[1] << " " << s[2]);
    CHECK(t.relposShift(ctx, "q", "k").toVector() == relposReference(v, s[0], s[1], s[2]));
    // The key axis first in memory and the batch axis last: the same values in result order.
    CHECK(t.permuteTo(ctx, {"k", "q", "b"}).relposShift(ctx, "q", "k").permuteTo(ctx, {"b", "q", "k"}).toVector() ==
          relposReference(v, s[0], s[1], s[2]));
  }
  Tensor y = x.alignTo(ctx, {"k", "h", "q"});
  CHECK(y.relposShift(ctx, "q", "k").tags() == Tags{"h", "q", "k"});
  Tensor v = permutedVariable(ctx);  // {c=5, a=2, b=3}
  fucina::gradcheck(ctx, [&](ExecContext& c) { return probe(c, awk(c, v).relposShift(c, "a", "c")); }, {&v});
  fucina::gradcheck(ctx, [&](ExecContext& c) { return probe(c, awk(c, v).relposShift(c, "c", "b")); }, {&v});
  fucina::gradcheck(ctx, [&](ExecContext& c) { return probe(c, awk(c, v).narrow(c, "c", 1, 1).relposShift(c, "b", "c")); }, {&v});
  fucina::gradcheck(ctx, [&](ExecContext& c) {
    return probe(c, awk(c, v).sum(c, "a").broadcastTo(c, {"b", "a", "c"}, {3, 2, 5}).relposShift(c, "a", "b"));
  }, {&v});
  CHECK(x.narrow(ctx, "k", 0, 0).relposShift(ctx, "q", "k").shape() == Extents{2, 0});
  CHECK(x.narrow(ctx, "q", 0, 0).relposShift(ctx, "q", "k").shape() == Extents{0, 3});
  REQUIRE_FUCINA_ERROR(x.relposShift(ctx, "q", "q"), InvalidArgument);
  REQUIRE_FUCINA_ERROR(x.relposShift(ctx, "q", "z"), ShapeMismatch);
  const Tensor q = Tensor::ones(ctx, {"q", "k"}, {2, 32}).quantize(ctx, DType::q8_0, "k");
  REQUIRE_FUCINA_ERROR(q.relposShift(ctx, "q", "k"), DTypeMismatch);
  const Tensor i = Tensor::fromInts(ctx, {"q", "k"}, {2, 3}, {1, 2, 3, 4, 5, 6});
  CHECK(i.relposShift(ctx, "q", "k").toVector() == std::vector<float>{2, 3, 0, 4, 5, 6});
}

TEST_CASE("views and shifts of constants record nothing, under noGrad neither") {
  ExecContext ctx;
  const Tensor c = Tensor::fromSlice(ctx, {"a", "b"}, {2, 3}, iota(6));
  const Tensor k = Tensor::fromInts(ctx, {"a"}, {2}, {1, 2});
  for (const Tensor& t : {c.alignTo(ctx, {"b", "a"}), c.viewWithStrides(ctx, {"d"}, {2}, {1}), c.materialize(ctx),
                          c.sliceStep(ctx, "b", 2, kMin, -1), c.zeroPad2d(ctx, "a", "b", {1, 1, 1, 1}),
                          c.constantPad2d(ctx, "a", "b", {1, 1, 1, 1}, 2), c.unbindInto(ctx, "a")[0],
                          c.repeatAxis(ctx, "a", 2), c.flip(ctx, "a"), c.roll(ctx, "b", 1), c.rollBy(ctx, "b", "a", k),
                          c.shiftBy(ctx, "b", "a", k), c.relposShift(ctx, "a", "b")})
    CHECK_FALSE(t.requiresGrad());
  Tensor v = Tensor::variableFromSlice(ctx, {"a", "b"}, {2, 3}, iota(6));
  fucina::NoGradScope off;
  CHECK_FALSE(v.flip(ctx, "a").requiresGrad());
  CHECK_FALSE(v.relposShift(ctx, "a", "b").requiresGrad());
  CHECK_FALSE(v.viewWithStrides(ctx, {"d"}, {2}, {2}).requiresGrad());
}

TEST_CASE("views and shifts give the same values and gradients on 1 and 2 threads") {
  // Large enough that copyConvert splits the copies over the pool.
  auto run = [](int threads) {
    ExecContext ctx(ExecOptions{.threads = threads});
    Tensor x = Tensor::variableFromSlice(ctx, {"b", "t", "d"}, {3, 300, 257}, test::wave(3 * 300 * 257, 1.0f, 0.1f, 0.013f));
    const Tensor k = Tensor::fromInts(ctx, {"b"}, {3}, {5, -17, 301});
    Tensor y = x.flip(ctx, "t").roll(ctx, "d", 100).rollBy(ctx, "t", "b", k).shiftBy(ctx, "d", "b", k)
                   .repeatAxis(ctx, "b", 2, true).zeroPad2d(ctx, "t", "d", {3, -2, -1, 4}).relposShift(ctx, "t", "d");
    y.mul(ctx, y).sumAll(ctx).backward(ctx);
    std::vector<float> out = y.toVector();
    const std::vector<float> g = test::gradOf(ctx, x);
    out.insert(out.end(), g.begin(), g.end());
    return out;
  };
  CHECK(run(1) == run(2));
}
