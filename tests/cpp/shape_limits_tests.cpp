// Shape arithmetic at the int64 limits: extents, pads, strides, kernels, dilations and
// positions near INT64_MAX are refused with a fucina::Error before any product or sum overflows
// (the UBSan build reports any that does), and nothing is allocated for them.
#include <limits>

#include "test_helpers.h"

using fucina::Conv2dOptions;
using fucina::ExecContext;
using fucina::Tensor;

namespace {
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
}  // namespace

TEST_CASE("shape limits: extents whose product (zeros aside) overflows are refused", "[shape]") {
  ExecContext ctx;
  // A zero extent makes the element count 0, but the strides still multiply the other extents.
  REQUIRE_FUCINA_ERROR(Tensor::zeros(ctx, {"a", "b", "c"}, {0, int64_t{1} << 62, int64_t{1} << 62}), InvalidArgument);
  REQUIRE_FUCINA_ERROR(Tensor::zeros(ctx, {"a", "b"}, {kMax, 2}), InvalidArgument);
  const Tensor e = Tensor::zeros(ctx, {"a", "b"}, {0, int64_t{1} << 40});
  CHECK(e.numel() == 0);
  REQUIRE_FUCINA_ERROR(e.split(ctx, "a", {"x", "y", "z"}, {kMax, 2, 0}), InvalidArgument);
  REQUIRE_FUCINA_ERROR(e.split(ctx, "b", {"x", "y"}, {int64_t{1} << 40, int64_t{1} << 40}), InvalidArgument);
  REQUIRE_FUCINA_ERROR(e.reshape(ctx, {"x", "y", "z"}, {0, kMax, kMax}), InvalidArgument);
  REQUIRE_FUCINA_ERROR(e.insertAxis(ctx, "n", 0).broadcastTo(ctx, {"n", "a", "b"}, {int64_t{1} << 40, 0, int64_t{1} << 40}), InvalidArgument);
}

TEST_CASE("shape limits: narrow, slice and pad at INT64_MAX", "[shape]") {
  ExecContext ctx;
  const Tensor t = Tensor::zeros(ctx, {"a"}, {4});
  REQUIRE_FUCINA_ERROR(t.narrow(ctx, "a", kMax, kMax), IndexOutOfRange);
  REQUIRE_FUCINA_ERROR(t.narrow(ctx, "a", 1, kMax), IndexOutOfRange);
  CHECK(t.slice(ctx, "a", 1, 4, kMax).shape() == fucina::Extents{1});
  CHECK(t.slice(ctx, "a", 0, 4, kMax - 1).shape() == fucina::Extents{1});
  REQUIRE_FUCINA_ERROR(t.pad(ctx, "a", kMax, kMax), InvalidArgument);
  REQUIRE_FUCINA_ERROR(t.pad(ctx, "a", kMax - 2, 0), InvalidArgument);
  CHECK(ctx.memory().live_bytes == 16);
}

TEST_CASE("shape limits: pooling and conv2d refuse absurd pads, kernels, strides and dilations", "[shape]") {
  ExecContext ctx;
  const Tensor x = Tensor::zeros(ctx, {"c", "h", "w"}, {1, 4, 4});
  const Tensor empty = Tensor::zeros(ctx, {"n", "c", "h", "w"}, {0, 1, 4, 4});
  for (const Tensor& in : {x, empty}) {
    REQUIRE_FUCINA_ERROR(in.maxPool2d(ctx, 2, 2, 1, 1, kMax), InvalidArgument);
    REQUIRE_FUCINA_ERROR(in.avgPool2d(ctx, 3, 3, 1, 1, int64_t{1} << 62), InvalidArgument);  // ops_fuzz: 2 * pad wrapped
    REQUIRE_FUCINA_ERROR(in.avgPool2d(ctx, kMax, kMax, 1, 1, kMax / 2), InvalidArgument);
    REQUIRE_FUCINA_ERROR(in.maxPool2d(ctx, kMax, 2, 1, 1, 1), ShapeMismatch);
    // Within pad <= kernel / 2, yet 2^40 x 2^40 taps per window: a pad past the input is refused.
    REQUIRE_FUCINA_ERROR(in.avgPool2d(ctx, int64_t{1} << 40, int64_t{1} << 40, 1, 1, int64_t{1} << 39), InvalidArgument);
    CHECK(in.maxPool2d(ctx, 2, 2, kMax, kMax).shape() == (in.rank() == 3 ? fucina::Extents{1, 1, 1} : fucina::Extents{0, 1, 1, 1}));
  }
  const Tensor w = Tensor::zeros(ctx, {"out", "c", "kh", "kw"}, {1, 1, 2, 2});
  const Tensor w3 = Tensor::zeros(ctx, {"out", "c", "kh", "kw"}, {1, 1, 3, 3});
  for (const Conv2dOptions& o : {Conv2dOptions{.pad_h = kMax}, Conv2dOptions{.pad_w = kMax / 2},
                                 Conv2dOptions{.dilation_h = kMax}, Conv2dOptions{.dilation_w = kMax / 2 + 1}}) {
    CHECK_FUCINA_ERROR(x.conv2d(ctx, w3, o), InvalidArgument);
    CHECK_FUCINA_ERROR(empty.conv2d(ctx, w3, o), InvalidArgument);
  }
  CHECK(x.conv2d(ctx, w, Conv2dOptions{.stride_h = kMax, .stride_w = kMax}).shape() == fucina::Extents{1, 1, 1});
  // An output too large to index is refused even with no images to compute.
  REQUIRE_FUCINA_ERROR(empty.conv2d(ctx, w, Conv2dOptions{.pad_h = int64_t{1} << 40, .pad_w = int64_t{1} << 40}), InvalidArgument);
  const Tensor tall = Tensor::zeros(ctx, {"n", "h", "w"}, {0, int64_t{1} << 57, 2});
  REQUIRE_FUCINA_ERROR(tall.upsample2xNearest(ctx), InvalidArgument);
}

// ops_fuzz: an empty tensor may have 2^40 along its other axes; a loop over them (one per image
// or plane, each with nothing to do) never ended.
TEST_CASE("shape limits: empty tensors with huge other extents compute nothing, at once", "[shape]") {
  ExecContext ctx;
  const int64_t n = int64_t{1} << 40;
  const Tensor x = Tensor::variable(ctx, Tensor::zeros(ctx, {"n", "c", "h", "w"}, {n, 4, 0, 3}));
  const Tensor up = x.upsample2xNearest(ctx);
  CHECK(up.shape() == fucina::Extents{n, 4, 0, 6});
  const Tensor w = Tensor::variable(ctx, Tensor::zeros(ctx, {"out", "c", "kh", "kw"}, {0, 4, 1, 1}));
  const Tensor y = x.conv2d(ctx, w, Conv2dOptions{.pad_h = 1});
  CHECK(y.shape() == fucina::Extents{n, 0, 2, 3});
  up.sumAll(ctx).add(ctx, y.sumAll(ctx)).backward(ctx);
  CHECK(x.grad(ctx)->shape() == x.shape());
  CHECK(w.grad(ctx)->shape() == w.shape());
  // rope's tables over no positions: no loop over 2^39 pairs; a position offset near INT64_MAX.
  const Tensor r = Tensor::zeros(ctx, {"t", "d"}, {0, n}).rope(ctx, fucina::RopeOptions{.offset = kMax - 1});
  CHECK(r.shape() == fucina::Extents{0, n});
  CHECK(Tensor::ones(ctx, {"t", "d"}, {1, 2}).rope(ctx, fucina::RopeOptions{.offset = kMax - 1}).numel() == 2);
  // indexSelect of 2^40 empty rows: no loop over them, forward or backward.
  const Tensor table = Tensor::variable(ctx, Tensor::zeros(ctx, {"n", "v", "d"}, {n, 3, 0}));
  const Tensor rows = table.indexSelect(ctx, "v", Tensor::fromInts(ctx, {"i"}, {2}, {0, 2}));
  CHECK(rows.shape() == fucina::Extents{n, 2, 0});
  rows.sumAll(ctx).backward(ctx);
  CHECK(table.grad(ctx)->shape() == table.shape());
  // repeatAxis of an empty axis: its copies view (b, c, repeat, a) has 2^39 · 2^19 · 32 = 2^63
  // before the zero, which numelOf multiplied first (ops_fuzz, UBSan: signed overflow).
  const Tensor e = Tensor::zeros(ctx, {"b", "c", "a"}, {int64_t{1} << 39, int64_t{1} << 19, 0});
  CHECK(e.repeatAxis(ctx, "a", 32, false).shape() == fucina::Extents{int64_t{1} << 39, int64_t{1} << 19, 0});
  CHECK(e.repeatAxis(ctx, "a", 32, true).numel() == 0);
}

TEST_CASE("shape limits: a view at an offset into an empty tensor adds no offset to a null buffer",
          "[shape]") {
  // Regression (ops_fuzz, UBSan "applying non-zero offset to null pointer"): data() added the
  // view's offset to the null base of an empty tensor's buffer.
  ExecContext ctx;
  const Tensor x = Tensor::variable(ctx, Tensor::zeros(ctx, {"a", "b"}, {0, 4}));
  const Tensor d = x.narrow(ctx, "b", 2, 2).dropout(ctx, 0.5, 7);
  CHECK(d.numel() == 0);
  d.sumAll(ctx).backward(ctx);
  CHECK(x.grad(ctx)->numel() == 0);
}
