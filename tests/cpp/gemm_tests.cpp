// The packed SIMD GEMM (kernels::gemm) against the scalar reference (kernels::gemmRef): awkward
// sizes around every tile and block edge, all four transpose combinations, accumulate on and
// off, leading dimensions wider than the rows, and 1 and 2 threads.
#include "test_helpers.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <fucina/fucina.h>
#include "fucina/backend/cpu/gemm.h"
#include "fucina/backend/cpu/gemm_simd.h"

using fucina::ExecContext;

namespace {

std::vector<float> wave(size_t n, float phase) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = std::sin(0.37f * static_cast<float>(i) + phase);
  return v;
}

struct Case {
  int64_t m, n, k;
  bool trans_a, trans_b, accumulate;
  int64_t pad;  // extra elements per row of A, B and C (ld > width)
};

std::string describe(const Case& c) {
  return "m=" + std::to_string(c.m) + " n=" + std::to_string(c.n) + " k=" + std::to_string(c.k) +
         " ta=" + std::to_string(c.trans_a) + " tb=" + std::to_string(c.trans_b) +
         " acc=" + std::to_string(c.accumulate) + " pad=" + std::to_string(c.pad);
}

// The inputs of a case: A, B and C's initial values (waves, |values| ≤ 1) and a bias row.
struct Operands {
  int64_t lda, ldb, ldc;
  std::vector<float> a, b, c0, bias_row;
};
Operands operandsOf(const Case& c) {
  Operands o;
  o.lda = (c.trans_a ? c.m : c.k) + c.pad;
  o.ldb = (c.trans_b ? c.k : c.n) + c.pad;
  o.ldc = c.n + c.pad;
  const int64_t rows_a = c.trans_a ? c.k : c.m, rows_b = c.trans_b ? c.n : c.k;
  o.a = wave(static_cast<size_t>(std::max<int64_t>(1, rows_a * o.lda)), 0.1f);
  o.b = wave(static_cast<size_t>(std::max<int64_t>(1, rows_b * o.ldb)), 0.7f);
  o.c0 = wave(static_cast<size_t>(std::max<int64_t>(1, c.m * o.ldc)), 1.3f);
  o.bias_row = wave(static_cast<size_t>(c.n), 2.3f);
  return o;
}
// The fast path's C (ctx null: gemmSerial).
std::vector<float> fastProduct(ExecContext* ctx, const Case& c, const Operands& o, bool bias) {
  std::vector<float> fast = o.c0;
  if (ctx)
    fucina::kernels::gemm(*ctx, c.trans_a, c.trans_b, c.m, c.n, c.k, o.a.data(), o.lda, o.b.data(), o.ldb,
                          fast.data(), o.ldc, c.accumulate, bias ? o.bias_row.data() : nullptr);
  else
    fucina::kernels::gemmSerial(c.trans_a, c.trans_b, c.m, c.n, c.k, o.a.data(), o.lda, o.b.data(), o.ldb,
                                fast.data(), o.ldc, c.accumulate);
  return fast;
}

// Runs both paths on the same inputs (ctx null: gemmSerial); C's padding must come back untouched.
// With `bias` (ctx given, c.accumulate false), the fast path adds a per-column bias and the
// reference accumulates onto rows that hold it.
void checkAgainstRef(ExecContext* ctx, const Case& c, bool bias = false) {
  const Operands o = operandsOf(c);
  const int64_t ldc = o.ldc;
  const std::vector<float>& c0 = o.c0;
  std::vector<float> ref = c0;
  if (bias)
    for (int64_t i = 0; i < c.m; ++i) std::copy(o.bias_row.begin(), o.bias_row.end(), ref.begin() + i * ldc);
  fucina::kernels::gemmRef(c.trans_a, c.trans_b, c.m, c.n, c.k, o.a.data(), o.lda, o.b.data(), o.ldb,
                           ref.data(), ldc, c.accumulate || bias);
  const std::vector<float> fast = fastProduct(ctx, c, o, bias);
  // |values| ≤ 1, so each result sums ≤ k products of size ≤ 1 (and a bias): f32 reordering
  // error ≤ ~k·eps.
  const float tol = 2e-6f * static_cast<float>(c.k + (bias ? 2 : 1));
  int64_t bad = 0;
  for (int64_t i = 0; i < c.m; ++i)
    for (int64_t j = 0; j < ldc; ++j) {
      const size_t at = static_cast<size_t>(i * ldc + j);
      const bool ok = j < c.n ? std::abs(fast[at] - ref[at]) <= tol : fast[at] == c0[at];
      if (!ok && bad++ < 3)
        FAIL_CHECK(describe(c) << " at (" << i << "," << j << "): " << fast[at] << " vs "
                               << (j < c.n ? ref[at] : c0[at]));
    }
  CHECK(bad == 0);
}

// A sampled grid over the awkward sizes: every size appears in every position, with the other
// two rotating through the list, under all four transpose combinations.
std::vector<Case> sampledCases() {
  const std::vector<int64_t> sizes{0, 1, 2, 3, 5, 7, 8, 9, 15, 16, 17, 31, 33, 64, 65, 127, 130};
  const size_t ns = sizes.size();
  std::vector<Case> cases;
  for (size_t s = 0; s < ns; ++s)
    for (int t = 0; t < 4; ++t)
      for (int pos = 0; pos < 3; ++pos) {
        const size_t step = static_cast<size_t>(5 + 2 * t + pos);
        int64_t dims[3] = {sizes[(s + step) % ns], sizes[(s + 2 * step + 3) % ns], 0};
        dims[2] = sizes[(s * 7 + step) % ns];
        std::rotate(dims, dims + pos, dims + 3);
        dims[pos] = sizes[s];
        const size_t variant = s + static_cast<size_t>(t + pos);
        cases.push_back({dims[0], dims[1], dims[2], (t & 1) != 0, (t & 2) != 0, variant % 2 == 1,
                         variant % 3 == 0 ? 0 : static_cast<int64_t>(variant % 5)});
      }
  return cases;
}

// Depths around the slice edges (sliceDepth): one whole slice, one more than a slice, equal
// slices and a short last one, under every transpose combination, with accumulate and ld > width.
std::vector<Case> deepCases() {
  std::vector<Case> cases;
  const int64_t depths[] = {511, 512, 513, 784, 1537};
  for (size_t i = 0; i < std::size(depths); ++i)
    for (int t = 0; t < 4; ++t)
      cases.push_back({static_cast<int64_t>(1 + 8 * i), static_cast<int64_t>(33 - 4 * t), depths[i],
                       (t & 1) != 0, (t & 2) != 0, (i + static_cast<size_t>(t)) % 2 == 1, t % 3 == 0 ? 0 : 3});
  return cases;
}

}  // namespace

TEST_CASE("gemm: the depth is cut into equal slices of at most kKC", "[gemm]") {
  using fucina::kernels::detail::kKC;
  using fucina::kernels::detail::sliceDepth;
  CHECK(sliceDepth(1) == 1);
  CHECK(sliceDepth(kKC) == kKC);
  CHECK(sliceDepth(513) == 264);   // 2 slices: 264 + 249
  CHECK(sliceDepth(784) == 392);   // 2 equal slices (W1's first layer)
  CHECK(sliceDepth(1537) == 392);  // 4 slices: 3 × 392 + 361
  for (int64_t k = 1; k <= 5000; ++k) {
    const int64_t s = sliceDepth(k), slices = (k + s - 1) / s;
    if (s > kKC || slices != (k + kKC - 1) / kKC) FAIL_CHECK("k=" << k << " slice " << s);
  }
}

TEST_CASE("gemm: packed SIMD kernel matches gemmRef on awkward sizes, transposes and ld", "[gemm]") {
  std::vector<Case> cases = sampledCases(), deep = deepCases();
  cases.insert(cases.end(), deep.begin(), deep.end());
  for (int threads : {1, 2}) {
    ExecContext ctx(fucina::ExecOptions{.threads = threads});
    for (const Case& c : cases) checkAgainstRef(&ctx, c);
  }
  for (const Case& c : cases) checkAgainstRef(nullptr, c);  // gemmSerial
}

#ifndef __EMSCRIPTEN__
TEST_CASE("gemm: every SIMD target this processor runs matches gemmRef", "[gemm]") {
  // e.g. AVX2's 6-row tiles on an AVX-512 machine.
  test::forEachSimdTarget([] {
    for (const Case& c : sampledCases()) checkAgainstRef(nullptr, c);
    for (const Case& c : deepCases()) checkAgainstRef(nullptr, c);
  });
}
#endif

TEST_CASE("gemm: a left operand packed once (packLhs) gives gemmSerial's bits, on 1 and 2 threads", "[gemm]") {
  // Note [Packed A]: the panels GemmBlock packs (or reads in place) per product, packed whole;
  // the products are then never split along the depth, as gemmSerial's are not.
  std::vector<Case> cases = sampledCases(), deep = deepCases();
  cases.insert(cases.end(), deep.begin(), deep.end());
  cases.push_back({130, 70, 600, false, false, true, 2});  // several row blocks (MC) and two slices
  ExecContext one(fucina::ExecOptions{.threads = 1}), two(fucina::ExecOptions{.threads = 2});
  for (const Case& c : cases) {
    INFO(describe(c));
    const Operands o = operandsOf(c);
    std::vector<float> packed(static_cast<size_t>(std::max<int64_t>(1, fucina::kernels::packedLhsFloats(c.m, c.k))));
    fucina::kernels::packLhs(c.trans_a, c.m, c.k, o.a.data(), o.lda, packed.data());
    const std::vector<float> want = fastProduct(nullptr, c, o, false);
    std::vector<float> serial = o.c0, threaded_one = o.c0, threaded_two = o.c0;
    fucina::kernels::gemmSerialPackedLhs(c.trans_b, c.m, c.n, c.k, packed.data(), o.b.data(), o.ldb, serial.data(),
                                         o.ldc, c.accumulate);
    fucina::kernels::gemmPackedLhs(one, c.trans_b, c.m, c.n, c.k, packed.data(), o.b.data(), o.ldb,
                                   threaded_one.data(), o.ldc, c.accumulate);
    fucina::kernels::gemmPackedLhs(two, c.trans_b, c.m, c.n, c.k, packed.data(), o.b.data(), o.ldb,
                                   threaded_two.data(), o.ldc, c.accumulate);
    CHECK(serial == want);
    CHECK(threaded_one == want);
    CHECK(threaded_two == want);
  }
}

TEST_CASE("gemm: problems large enough to split over 2 threads, rows and columns", "[gemm]") {
  // m·n·k above the split threshold; the longer side of C is split, or its rows when A is
  // transposed (Note [Weight gradients by rows]: the last three), odd remainders included. The cut
  // never changes a sum, so 1 and 2 threads agree to the bit.
  const std::vector<Case> cases{
      {300, 130, 131, false, false, false, 0}, {257, 65, 301, true, false, true, 3},
      {130, 257, 130, false, true, false, 1},  {517, 97, 127, false, true, true, 0},
      {33, 1001, 257, true, true, true, 2},    {64, 700, 300, true, false, false, 5},
      {130, 517, 129, true, false, false, 1}};
  ExecContext one(fucina::ExecOptions{.threads = 1}), two(fucina::ExecOptions{.threads = 2});
  for (const Case& c : cases) {
    INFO(describe(c));
    checkAgainstRef(&one, c);
    checkAgainstRef(&two, c);
    const Operands o = operandsOf(c);
    CHECK(fastProduct(&one, c, o, false) == fastProduct(&two, c, o, false));
  }
}

TEST_CASE("gemm: deep products into a small C are split in depth, the same to the bit on 1 and 2 threads", "[gemm]") {
  // Note [Split the depth]: depth >= 1024, >= twice C's longer side, C small. Odd depths make the
  // halves unequal and slice them differently; accumulate, bias, transposes and ld > width.
  const std::vector<Case> cases{
      {128, 384, 2048, true, false, false, 0}, {33, 97, 1030, false, false, true, 3},
      {257, 5, 1500, true, true, true, 1},     {5, 300, 1031, false, true, false, 2},
      {1, 1, 4096, false, false, true, 0},     {300, 500, 1024, true, false, false, 0}};  // last: not split
  ExecContext one(fucina::ExecOptions{.threads = 1}), two(fucina::ExecOptions{.threads = 2});
  for (const Case& c : cases) {
    for (bool bias : {false, true}) {
      if (bias && c.accumulate) continue;
      INFO(describe(c) << " bias=" << bias);
      checkAgainstRef(&one, c, bias);
      checkAgainstRef(&two, c, bias);
      const Operands o = operandsOf(c);
      CHECK(fastProduct(&one, c, o, bias) == fastProduct(&two, c, o, bias));
    }
  }
}

TEST_CASE("gemm: a block of fewer rows than a tile gives the bits of the same rows in a taller product", "[gemm]") {
  // Note [Short tiles]: 1 to 7 rows, and the rows left below a block's full tiles (m = 9 .. 23,
  // every remainder of every tile height), run narrower tiles over several panels; each element
  // is the same sum in the same order as in the full tile. Columns cover whole groups of panels and a
  // ragged rest; A read in place and packed (transposed); bias, accumulate and ld > width; depths
  // of one and of several slices; and, past Note [Threads for a few rows]'s threshold, 2 threads.
  ExecContext one(fucina::ExecOptions{.threads = 1}), two(fucina::ExecOptions{.threads = 2});
  const int64_t nr = fucina::kernels::detail::gemmPanelCols();
  for (int64_t n : {int64_t{1}, nr - 1, 4 * nr, 9 * nr + 5, int64_t{1500}})
    for (int64_t k : {int64_t{1}, int64_t{37}, int64_t{600}})
      for (int t = 0; t < 4; ++t) {
        const bool trans_a = (t & 1) != 0, trans_b = (t & 2) != 0, accumulate = t == 1, bias = t == 2;
        const int64_t tall = 24, pad = t;
        const Case full{tall, n, k, trans_a, trans_b, accumulate, pad};
        const Operands o = operandsOf(full);
        const std::vector<float> want = fastProduct(&one, full, o, bias);
        for (int64_t m = 1; m < tall; ++m) {
          INFO(describe({m, n, k, trans_a, trans_b, accumulate, pad}) << " bias=" << bias);
          // The first m rows of A: in place, they are the first m rows (or, transposed, columns)
          // of the tall A with the same ld.
          for (ExecContext* ctx : {&one, &two}) {
            std::vector<float> c = o.c0;
            fucina::kernels::gemm(*ctx, trans_a, trans_b, m, n, k, o.a.data(), o.lda, o.b.data(), o.ldb, c.data(), o.ldc,
                                  accumulate, bias ? o.bias_row.data() : nullptr);
            const auto rows = static_cast<std::ptrdiff_t>(m * o.ldc);
            CHECK(std::equal(c.begin(), c.begin() + rows, want.begin()));
            CHECK(std::equal(c.begin() + rows, c.end(), o.c0.begin() + rows));  // rows past m untouched
          }
        }
      }
}

TEST_CASE("gemm: a last panel of one or two columns gives the bits of the same columns in a wider product", "[gemm]") {
  // Note [Edge columns]: one or two columns alone in B's last panel run with A's rows in the
  // vector, several panels of rows at once and then one at a time; each element is the same sum in
  // the same order as in a full tile. Rows in whole groups, a ragged rest and fewer than a tile;
  // A packed per block (transposed, or wide enough in wasm), packed whole (packLhs) and read in
  // place; bias, accumulate and ld > width; depths of one and of several slices; 1 and 2 threads;
  // natively, every SIMD target (AVX2 and SSE4 split a 6-row panel into vectors of 4 and 2 rows).
  const auto check = [] {
    ExecContext one(fucina::ExecOptions{.threads = 1}), two(fucina::ExecOptions{.threads = 2});
    const int64_t nr = fucina::kernels::detail::gemmPanelCols();
    for (int64_t n : {int64_t{1}, int64_t{2}, 2 * nr + 1, 2 * nr + 2, 4 * nr + 1})
      for (int64_t m : {1, 3, 4, 5, 9, 31, 32, 33, 64, 65, 70, 130})
        for (int64_t k : {1, 37, 600})
          for (int t = 0; t < 4; ++t) {
            const bool trans_a = (t & 1) != 0, trans_b = (t & 2) != 0, accumulate = t == 1, bias = t == 2;
            const Case wide{m, (n / nr + 1) * nr, k, trans_a, trans_b, accumulate, t};
            INFO(describe({m, n, k, trans_a, trans_b, accumulate, t}) << " bias=" << bias);
            // The first n columns of B (transposed: rows) with the same ld; C keeps the wide ld.
            const Operands o = operandsOf(wide);
            const std::vector<float> want = fastProduct(&one, wide, o, bias);
            std::vector<float> packed(static_cast<size_t>(std::max<int64_t>(1, fucina::kernels::packedLhsFloats(m, k))));
            fucina::kernels::packLhs(trans_a, m, k, o.a.data(), o.lda, packed.data());
            for (int run = 0; run < 3; ++run) {
              std::vector<float> c = o.c0;
              if (run < 2)
                fucina::kernels::gemm(run == 0 ? one : two, trans_a, trans_b, m, n, k, o.a.data(), o.lda, o.b.data(),
                                      o.ldb, c.data(), o.ldc, accumulate, bias ? o.bias_row.data() : nullptr);
              else if (!bias)
                fucina::kernels::gemmPackedLhs(two, trans_b, m, n, k, packed.data(), o.b.data(), o.ldb, c.data(), o.ldc,
                                               accumulate);
              else
                continue;
              int64_t bad = 0;
              for (int64_t i = 0; i < m; ++i)
                for (int64_t j = 0; j < o.ldc; ++j) {
                  const auto at = static_cast<size_t>(i * o.ldc + j);
                  if (c[at] != (j < n ? want[at] : o.c0[at])) ++bad;
                }
              CHECK(bad == 0);
            }
          }
  };
#ifndef __EMSCRIPTEN__
  test::forEachSimdTarget(check);
#else
  check();
#endif
}

TEST_CASE("gemm: a fused bias equals gemmRef accumulating onto bias rows", "[gemm]") {
  for (int threads : {1, 2}) {
    ExecContext ctx(fucina::ExecOptions{.threads = threads});
    std::vector<Case> cases = sampledCases();
    cases.push_back({300, 130, 131, false, false, false, 2});  // split over threads
    cases.push_back({33, 1001, 257, true, true, false, 0});
    for (Case c : cases) {
      c.accumulate = false;  // a bias replaces accumulation
      checkAgainstRef(&ctx, c, true);
    }
  }
  ExecContext ctx;
  float c[1] = {0}, bias[1] = {1}, x[1] = {1};
  REQUIRE_THROWS_AS(fucina::kernels::gemm(ctx, false, false, 1, 1, 1, x, 1, x, 1, c, 1, true, bias), fucina::Error);
}

TEST_CASE("gemmRef: transposes and ld against a hand-computed product", "[gemm]") {
  // op(A) = [[1,2],[3,4],[5,6]] stored transposed with ld 4; op(B) = [[1,0,2],[0,1,3]] stored
  // transposed with ld 3; C has ld 4 and its padding is kept.
  const float at[] = {1, 3, 5, -9, 2, 4, 6, -9};
  const float bt[] = {1, 0, -9, 0, 1, -9, 2, 3, -9};
  float c[12];
  std::fill(c, c + 12, 7.f);
  fucina::kernels::gemmRef(true, true, 3, 3, 2, at, 4, bt, 3, c, 4, false);
  const float want[] = {1, 2, 8, 7, 3, 4, 18, 7, 5, 6, 28, 7};
  for (int i = 0; i < 12; ++i) CHECK(c[i] == want[i]);
}

TEST_CASE("gemmSerial: causal bands skip only products that cannot matter", "[gemm]") {
  using fucina::kernels::Band;
  // Sizes around the register tiles (MR 4..8, NR 8..32) and the depth slices (KC 128).
  const std::vector<int64_t> sizes{1, 7, 16, 33, 130};
  int64_t checked = 0;
  for (Band kind : {Band::kOutputLower, Band::kALower, Band::kAUpper})
    for (int64_t m : sizes)
      for (int64_t shift : {int64_t{0}, int64_t{5}})
        for (int t = 0; t < 4; ++t) {
          const bool ta = (t & 1) != 0, tb = (t & 2) != 0, acc = t == 1;
          // A square-ish product, as attention's: depth = columns = m + shift (the keys).
          const int64_t n = kind == Band::kOutputLower ? m + shift : 9, k = kind == Band::kOutputLower ? 11 : m + shift;
          const int64_t lda = (ta ? m : k) + 2, ldb = (tb ? k : n) + 1, ldc = n + 3;
          std::vector<float> a = wave(static_cast<size_t>((ta ? k : m) * lda), 0.2f);
          const std::vector<float> b = wave(static_cast<size_t>((tb ? n : k) * ldb), 0.9f);
          const std::vector<float> c0 = wave(static_cast<size_t>(m * ldc), 1.7f);
          // The zeros a kALower / kAUpper operand promises.
          for (int64_t i = 0; i < m; ++i)
            for (int64_t p = 0; p < k; ++p) {
              const bool zero = (kind == Band::kALower && p > i + shift) || (kind == Band::kAUpper && p < i - shift);
              if (zero) a[static_cast<size_t>(ta ? p * lda + i : i * lda + p)] = 0.f;
            }
          std::vector<float> ref = c0, fast = c0;
          fucina::kernels::gemmRef(ta, tb, m, n, k, a.data(), lda, b.data(), ldb, ref.data(), ldc, acc);
          fucina::kernels::gemmSerial(ta, tb, m, n, k, a.data(), lda, b.data(), ldb, fast.data(), ldc, acc,
                                      {kind, shift});
          const float tol = 2e-6f * static_cast<float>(k + 1);
          for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < ldc; ++j) {
              const size_t at = static_cast<size_t>(i * ldc + j);
              const bool wanted = j < n && (kind != Band::kOutputLower || j <= i + shift);
              // Unwanted entries of C keep their old value or get the true product (tiles that
              // straddle the line are computed whole); padding is never written.
              const bool ok = wanted ? std::abs(fast[at] - ref[at]) <= tol
                                     : fast[at] == c0[at] || (j < n && std::abs(fast[at] - ref[at]) <= tol);
              if (!ok)
                FAIL_CHECK("band " << static_cast<int>(kind) << " m=" << m << " shift=" << shift << " ta=" << ta
                                   << " tb=" << tb << " at (" << i << "," << j << "): " << fast[at] << " vs "
                                   << ref[at]);
              ++checked;
            }
        }
  CHECK(checked > 0);
}
