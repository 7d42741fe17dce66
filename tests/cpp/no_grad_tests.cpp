// The intentionally no-grad ops: argmax, argmin, argsort, multinomial, isnan,
// isinf, isfinite, the logical ops, any/all and bandMask. Their results are constants even from
// variables; values against naive references, every dtype they read, edge points, bad inputs.
#include "test_helpers.h"

#include <cmath>
#include <limits>
#include <vector>

using fucina::DType;
using fucina::ExecContext;
using fucina::Extents;
using fucina::Tags;
using fucina::Tensor;

namespace {
const float kNan = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();
}  // namespace

TEST_CASE("argmax, argmin and argsort: first extremum, NaN as the extreme, any layout and dtype, no graph") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"r", "c"}, {3, 4}, {1, 5, 5, 2, -1, -3, -3, 0, 2, kNan, 9, kNan});
  Tensor am = x.argmax(ctx, "c");
  CHECK(am.dtype() == DType::i64);
  CHECK(am.tags() == Tags{"r"});
  CHECK(!am.requiresGrad());
  CHECK(am.toVector() == std::vector<float>{1, 3, 1});  // ties: the first; NaN wins
  CHECK(x.argmin(ctx, "c").toVector() == std::vector<float>{0, 1, 1});
  CHECK(x.argmax(ctx, "r").toVector() == std::vector<float>{2, 2, 2, 2});  // NaN in columns 1 and 3
  CHECK(x.permuteTo(ctx, {"c", "r"}).argmax(ctx, "c").toVector() == std::vector<float>{1, 3, 1});
  CHECK(x.narrow(ctx, "c", 2, 2).argmax(ctx, "c").toVector() == std::vector<float>{0, 1, 1});
  CHECK(x.argsort(ctx, "c").toVector() == x.sort(ctx, "c").indices.toVector());
  CHECK(x.argsort(ctx, "c", true).toVector() == x.sort(ctx, "c", true).indices.toVector());
  CHECK(!x.argsort(ctx, "c").requiresGrad());
  const std::vector<int64_t> big{3, int64_t(1) << 40, -7};
  CHECK(Tensor::fromInts(ctx, {"d"}, {3}, big, DType::i64).argmax(ctx, "d").item() == 1);
  CHECK(Tensor::fromInts(ctx, {"d"}, {3}, {4, 9, 1}, DType::u8).argmin(ctx, "d").item() == 2);
  CHECK(x.detach(ctx).to(ctx, DType::f16).argmax(ctx, "c").toVector() == std::vector<float>{1, 3, 1});
  CHECK(Tensor::ones(ctx, {"r", "c"}, {0, 3}).argmax(ctx, "c").shape() == Extents{0});
  REQUIRE_FUCINA_ERROR(Tensor::ones(ctx, {"r", "c"}, {2, 0}).argmax(ctx, "c"), InvalidArgument);
  REQUIRE_FUCINA_ERROR(x.argmax(ctx, "z"), ShapeMismatch);
  REQUIRE_FUCINA_ERROR(Tensor::ones(ctx, {"r", "c"}, {2, 32}).quantize(ctx, DType::q8_0, "c").argmax(ctx, "c"), DTypeMismatch);
}

TEST_CASE("multinomial: seeded, the frequencies of the weights, with and without replacement") {
  ExecContext ctx;
  Tensor w = Tensor::variableFromSlice(ctx, {"r", "k"}, {2, 4}, {1, 0, 3, 0, 0, 2, 0, 2});
  Tensor s = w.multinomial(ctx, "k", 4000, 7, true);
  CHECK(s.dtype() == DType::i64);
  CHECK(s.tags() == Tags{"r", "k"});
  CHECK(s.shape() == Extents{2, 4000});
  CHECK(!s.requiresGrad());
  const std::vector<float> v = s.toVector();
  std::vector<int> count(8, 0);
  for (size_t j = 0; j < v.size(); ++j) count[(j / 4000) * 4 + size_t(v[j])] += 1;
  CHECK(count[1] == 0);
  CHECK(count[3] == 0);
  CHECK(std::abs(count[0] - 1000) < 120);  // 1/4 of 4000; sd ~27
  CHECK(std::abs(count[2] - 3000) < 120);
  CHECK(std::abs(count[5] - 2000) < 150);
  CHECK(count[4] == 0);
  // The same seed gives the same draws; another seed others.
  CHECK(w.multinomial(ctx, "k", 4000, 7, true).toVector() == v);
  CHECK(w.multinomial(ctx, "k", 4000, 8, true).toVector() != v);
  // Without replacement: each positive category once, in some order.
  Tensor p = Tensor::fromSlice(ctx, {"k", "r"}, {5, 1}, {0.1f, 0.2f, 0.3f, 0.25f, 0.15f});
  std::vector<float> all = p.multinomial(ctx, "k", 5, 3).toVector();
  std::sort(all.begin(), all.end());
  CHECK(all == std::vector<float>{0, 1, 2, 3, 4});
  CHECK(p.multinomial(ctx, "k", 0, 3).shape() == Extents{0, 1});
  // An empty tensor may have a huge axis: nothing to draw from, nothing allocated for it (ops_fuzz
  // found a 16 GiB scratch vector sized by that axis).
  CHECK(Tensor::ones(ctx, {"r", "k"}, {0, int64_t(1) << 40}).multinomial(ctx, "k", 2, 1, true).shape() == Extents{0, 2});
  REQUIRE_FUCINA_ERROR(p.multinomial(ctx, "k", 6, 3), InvalidArgument);
  REQUIRE_FUCINA_ERROR(w.multinomial(ctx, "k", 3, 3), InvalidArgument);  // only 2 positive weights per row
  REQUIRE_FUCINA_ERROR(Tensor::fromSlice(ctx, {"k"}, {2}, {1, -1}).multinomial(ctx, "k", 1, 3, true), InvalidArgument);
  REQUIRE_FUCINA_ERROR(Tensor::fromSlice(ctx, {"k"}, {2}, {1, kNan}).multinomial(ctx, "k", 1, 3, true), InvalidArgument);
  REQUIRE_FUCINA_ERROR(Tensor::fromSlice(ctx, {"k"}, {2}, {0, 0}).multinomial(ctx, "k", 1, 3, true), InvalidArgument);
  REQUIRE_FUCINA_ERROR(p.multinomial(ctx, "k", -1, 3, true), InvalidArgument);
  REQUIRE_FUCINA_ERROR(p.multinomial(ctx, "z", 1, 3, true), ShapeMismatch);
}

TEST_CASE("isnan, isinf, isfinite and the logical ops: u8 masks from any dtype, broadcast by tag") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"d"}, {5}, {1, kNan, -kInf, 0, kInf});
  CHECK(x.isnan(ctx).dtype() == DType::u8);
  CHECK(!x.isnan(ctx).requiresGrad());
  CHECK(x.isnan(ctx).toVector() == std::vector<float>{0, 1, 0, 0, 0});
  CHECK(x.isinf(ctx).toVector() == std::vector<float>{0, 0, 1, 0, 1});
  CHECK(x.isfinite(ctx).toVector() == std::vector<float>{1, 0, 0, 1, 0});
  CHECK(x.logicalNot(ctx).toVector() == std::vector<float>{0, 0, 0, 1, 0});  // NaN is true
  CHECK(Tensor::fromInts(ctx, {"d"}, {2}, {0, 3}, DType::i32).isfinite(ctx).toVector() == std::vector<float>{1, 1});
  Tensor a = Tensor::fromInts(ctx, {"r", "c"}, {2, 2}, {1, 0, 1, 0}, DType::u8);
  Tensor b = Tensor::fromInts(ctx, {"c"}, {2}, {1, 1}, DType::u8);
  Tensor f = Tensor::fromSlice(ctx, {"c", "r"}, {2, 2}, {0, 2, 0, -1});  // f32, other axis order
  CHECK(a.logicalAnd(ctx, b).toVector() == std::vector<float>{1, 0, 1, 0});
  CHECK(a.logicalOr(ctx, f).tags() == Tags{"r", "c"});
  CHECK(a.logicalOr(ctx, f).toVector() == std::vector<float>{1, 0, 1, 1});
  CHECK(a.logicalXor(ctx, f).toVector() == std::vector<float>{1, 0, 0, 1});
  REQUIRE_FUCINA_ERROR(a.logicalAnd(ctx, Tensor::ones(ctx, {"c"}, {3})), ShapeMismatch);
  REQUIRE_FUCINA_ERROR(Tensor::ones(ctx, {"c"}, {32}).quantize(ctx, DType::q8_0, "c").isnan(ctx), DTypeMismatch);
  REQUIRE_FUCINA_ERROR(Tensor().isnan(ctx), InvalidArgument);
}

TEST_CASE("any, all, anyAll and allAll: along an axis or everything, empty cases, views") {
  ExecContext ctx;
  Tensor x = Tensor::fromSlice(ctx, {"r", "c"}, {3, 3}, {0, 0, 0, 1, 0, 2, 1, kNan, -1});
  CHECK(x.any(ctx, "c").toVector() == std::vector<float>{0, 1, 1});
  CHECK(x.all(ctx, "c").toVector() == std::vector<float>{0, 0, 1});
  CHECK(x.any(ctx, "r").toVector() == std::vector<float>{1, 1, 1});
  CHECK(x.all(ctx, "r").toVector() == std::vector<float>{0, 0, 0});
  CHECK(x.permuteTo(ctx, {"c", "r"}).any(ctx, "c").toVector() == std::vector<float>{0, 1, 1});
  CHECK(x.narrow(ctx, "r", 1, 2).all(ctx, "r").toVector() == std::vector<float>{1, 0, 1});
  CHECK(x.any(ctx, "c").dtype() == DType::u8);
  CHECK(x.anyAll(ctx).item() == 1);
  CHECK(x.allAll(ctx).item() == 0);
  CHECK(x.anyAll(ctx).rank() == 0);
  Tensor empty = Tensor::ones(ctx, {"r", "c"}, {2, 0});
  CHECK(empty.any(ctx, "c").toVector() == std::vector<float>{0, 0});
  CHECK(empty.all(ctx, "c").toVector() == std::vector<float>{1, 1});
  CHECK(empty.anyAll(ctx).item() == 0);
  CHECK(empty.allAll(ctx).item() == 1);
  REQUIRE_FUCINA_ERROR(x.any(ctx, "z"), ShapeMismatch);
}

TEST_CASE("bandMask: bandPart's band as a u8 mask") {
  ExecContext ctx;
  Tensor m = Tensor::bandMask(ctx, "q", "k", 3, 4, -1, 0);  // causal: k <= q
  CHECK(m.tags() == Tags{"q", "k"});
  CHECK(m.dtype() == DType::u8);
  CHECK(m.toVector() == std::vector<float>{1, 0, 0, 0, 1, 1, 0, 0, 1, 1, 1, 0});
  Tensor ones = Tensor::ones(ctx, {"q", "k"}, {3, 4});
  for (auto [lo, up] : std::vector<std::pair<int64_t, int64_t>>{{0, -1}, {1, 1}, {-1, 0}, {-1, -1}, {2, 0}})
    CHECK(Tensor::bandMask(ctx, "q", "k", 3, 4, lo, up).toVector() == ones.bandPart(ctx, "q", "k", lo, up).toVector());
  CHECK(Tensor::bandMask(ctx, "q", "k", 0, 4, 0, 0).shape() == Extents{0, 4});
  REQUIRE_FUCINA_ERROR(Tensor::bandMask(ctx, "q", "q", 3, 3, 0, 0), InvalidArgument);
  REQUIRE_FUCINA_ERROR(Tensor::bandMask(ctx, "q", "k", -1, 3, 0, 0), InvalidArgument);
  REQUIRE_FUCINA_ERROR(Tensor::bandMask(ctx, "q", "k", 3, 3, -2, 0), InvalidArgument);
}
