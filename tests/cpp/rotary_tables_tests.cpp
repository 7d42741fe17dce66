// nn::RotaryTables (Note [Rotary tables kept]): the rows a forward reads hold cos and sin of
// position·inv_freq rounded once to f32; the pair is made where the model runs, reused, grown
// and replaced where it runs next.
#include <cmath>
#include <vector>

#include "fucina/exec/scope.h"
#include "fucina/nn/rotary_tables.h"
#include "test_helpers.h"

using fucina::ExecContext;
using fucina::ExecScope;
using fucina::Tensor;
using fucina::nn::RotaryTables;

namespace {

const std::vector<double> kInvFreq{1.0, 0.1, 0.01};

// The values rows(start, t) must hold: the angle in double, rounded once.
void requireRows(const Tensor& cos, const Tensor& sin, int64_t start, int64_t t) {
  REQUIRE(cos.shape() == fucina::Extents{t, 3});
  REQUIRE(sin.shape() == fucina::Extents{t, 3});
  const std::vector<float> c = cos.toVector(), s = sin.toVector();
  for (int64_t p = 0; p < t; ++p)
    for (size_t i = 0; i < kInvFreq.size(); ++i) {
      const double angle = static_cast<double>(start + p) * kInvFreq[i];
      REQUIRE(c[static_cast<size_t>(p) * 3 + i] == static_cast<float>(std::cos(angle)));
      REQUIRE(s[static_cast<size_t>(p) * 3 + i] == static_cast<float>(std::sin(angle)));
    }
}

}  // namespace

TEST_CASE("RotaryTables: rows are cos and sin of position times inv_freq, kept where the model ran and grown past their end",
          "[llama][rope]") {
  ExecContext ctx({.threads = 1});
  const RotaryTables tables(kInvFreq, 300, "t", "hd");
  const auto first = tables.rows(ctx, 0, 5);
  requireRows(first.first, first.second, 0, 5);
  const size_t made = ctx.memory().allocations;
  // Rows from 0 are views of the kept tables (64 rows at least): no buffer made, whatever scope
  // the first ones were made in.
  {
    ExecScope scope(ctx);
    const auto again = tables.rows(ctx, 0, 64);
    requireRows(again.first, again.second, 0, 64);
    REQUIRE(again.first.value().storage() == first.first.value().storage());
  }
  const auto held = tables.rows(ctx, 0, 2);
  REQUIRE(held.second.value().storage() == first.second.value().storage());
  REQUIRE(ctx.memory().allocations == made);
  // Rows from a later start are a copy of their own, starting at their buffer's start.
  const auto later = tables.rows(ctx, 7, 4);
  requireRows(later.first, later.second, 7, 4);
  REQUIRE(later.first.value().offset() == 0);
  REQUIRE(later.first.value().storage() != first.first.value().storage());
  // Past the end: the next power of two, and the model's positions at most.
  const auto grown = tables.rows(ctx, 0, 65);
  requireRows(grown.first, grown.second, 0, 65);
  REQUIRE(grown.first.value().storage()->bytes() == 128 * 3 * sizeof(float));
  const auto all = tables.rows(ctx, 290, 10);
  requireRows(all.first, all.second, 290, 10);
  REQUIRE(tables.rows(ctx, 0, 1).first.value().storage()->bytes() == 300 * 3 * sizeof(float));
  // A copy starts without tables; the original keeps its own.
  const RotaryTables copy(tables);
  const size_t before_copy = ctx.memory().allocations;
  const auto copied = copy.rows(ctx, 0, 2);
  requireRows(copied.first, copied.second, 0, 2);
  REQUIRE(ctx.memory().allocations == before_copy + 2);
  REQUIRE(tables.rows(ctx, 0, 2).first.value().storage()->bytes() == 300 * 3 * sizeof(float));
  REQUIRE(ctx.memory().allocations == before_copy + 2);
  // Another context (a device the model moved to) replaces them: nothing stays behind.
  ExecContext other({.threads = 1});
  const size_t live = ctx.memory().live_bytes;
  const auto there = tables.rows(other, 0, 3);
  requireRows(there.first, there.second, 0, 3);
  REQUIRE(other.memory().live_bytes == 2 * 64 * 3 * sizeof(float));
  REQUIRE(ctx.memory().live_bytes == live - 2 * 300 * 3 * sizeof(float));  // held by the tables alone
  REQUIRE_FUCINA_ERROR(tables.rows(ctx, 299, 2), InvalidArgument);
  REQUIRE_FUCINA_ERROR(tables.rows(ctx, -1, 1), InvalidArgument);
}
