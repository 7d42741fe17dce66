// The inference-only packed products (ops/packed.cpp, ag/packed.h): packRhs, dotPacked
// (dense and quantized), rmsNormMulDotPacked, splitSwiGluDotPacked, gegluQuantDotPacked. Each is
// checked against the training path's op on awkward layouts and sizes, on 1 and 2 threads, with
// its three gradient refusals and bad inputs.
#include "test_helpers.h"

#include <cmath>
#include <cstdint>
#include <vector>

#include "fucina/backend/cpu/gemm_simd.h"
#include "fucina/backend/cpu/q8_gemv.h"

using fucina::DType;
using fucina::ExecContext;
using fucina::ExecOptions;
using fucina::Extents;
using fucina::PackedRhs;
using fucina::Tags;
using fucina::Tensor;

namespace {

Tensor waveTensor(ExecContext& c, Tags tags, Extents shape, float phase) {
  int64_t n = 1;
  for (int64_t e : shape) n *= e;
  return Tensor::fromSlice(c, std::move(tags), std::move(shape), test::wave(static_cast<size_t>(n), 0.8f, phase, 0.37f));
}

// |a - b| <= tol·(1 + |b|) elementwise, same tags and shape.
void checkClose(const Tensor& got, const Tensor& want, double tol) {
  REQUIRE(got.tags() == want.tags());
  REQUIRE(got.shape() == want.shape());
  CHECK(got.dtype() == DType::f32);
  CHECK_FALSE(got.requiresGrad());
  const std::vector<float> g = got.toVector(), w = want.toVector();
  for (size_t i = 0; i < g.size(); ++i) {
    INFO("element " << i << ": " << g[i] << " vs " << w[i]);
    CHECK(std::abs(g[i] - w[i]) <= tol * (1.0 + std::abs(w[i])));
  }
}

}  // namespace

TEST_CASE("dotPacked equals dot on awkward layouts and sizes") {
  ExecContext ctx;
  struct Case {
    int64_t m, k, n;
  };
  // Size 1 everywhere, odd sizes, several depth slices (k > 512), several column blocks (n > NC
  // on every target), an empty depth (zeros), and rows that do not fill a tile.
  for (const Case& s : {Case{1, 1, 1}, Case{3, 37, 29}, Case{7, 1100, 5}, Case{2, 19, 2100}, Case{5, 0, 4},
                        Case{33, 64, 31}}) {
    INFO("m " << s.m << " k " << s.k << " n " << s.n);
    const Tensor x = waveTensor(ctx, {"row", "in"}, {s.m, s.k}, 0.1f);
    const Tensor w = waveTensor(ctx, {"out", "in"}, {s.n, s.k}, 0.5f);  // depth contiguous: read in place
    checkClose(x.dotPacked(ctx, fucina::packRhs(ctx, w, "in")), x.dot(ctx, w, "in"), 1e-5);
    const Tensor wt = w.permuteTo(ctx, {"in", "out"}).contiguous(ctx);  // {in, out}: packed from a copy
    checkClose(x.dotPacked(ctx, fucina::packRhs(ctx, wt, "in")), x.dot(ctx, w, "in"), 1e-5);
  }
  // x non-contiguous (its depth outermost), w with two free axes and a strided view.
  const Tensor x = waveTensor(ctx, {"in", "b", "t"}, {23, 2, 3}, 0.3f);
  const Tensor w = waveTensor(ctx, {"h", "in", "o"}, {3, 23, 5}, 0.9f).narrow(ctx, "o", 1, 4);
  const PackedRhs p = fucina::packRhs(ctx, w, "in");
  CHECK(p.tags() == Tags{"h", "o"});
  CHECK(p.shape() == Extents{3, 4});
  CHECK(p.depth() == 23);
  CHECK(p.dtype() == DType::f32);
  const Tensor y = x.dotPacked(ctx, p);
  CHECK(y.tags() == Tags{"b", "t", "h", "o"});
  checkClose(y, x.dot(ctx, w, "in"), 1e-5);
  // A contiguous product reads the same panels as dot's GEMM: the same bits.
  const Tensor a = waveTensor(ctx, {"row", "in"}, {9, 70}, 0.2f), b = waveTensor(ctx, {"out", "in"}, {13, 70}, 0.4f);
  CHECK(a.dotPacked(ctx, fucina::packRhs(ctx, b, "in")).toVector() == a.dot(ctx, b, "in").toVector());
}

TEST_CASE("dotPacked with an empty batch, an empty weight and a bias") {
  ExecContext ctx;
  const Tensor w = waveTensor(ctx, {"out", "in"}, {6, 10}, 0.5f);
  const Tensor bias = waveTensor(ctx, {"out"}, {6}, 0.7f);
  const Tensor none = Tensor::zeros(ctx, {"row", "in"}, {0, 10});
  const Tensor y0 = none.dotPacked(ctx, fucina::packRhs(ctx, w, "in"), bias);
  CHECK(y0.shape() == Extents{0, 6});
  const Tensor x = waveTensor(ctx, {"row", "in"}, {4, 10}, 0.1f);
  checkClose(x.dotPacked(ctx, fucina::packRhs(ctx, w, "in"), bias), x.addDot(ctx, w, "in", bias), 1e-5);
  const Tensor no_out = Tensor::zeros(ctx, {"out", "in"}, {0, 10});
  CHECK(x.dotPacked(ctx, fucina::packRhs(ctx, no_out, "in")).shape() == Extents{4, 0});
  // A zero depth: the product is the bias.
  const Tensor x0 = Tensor::zeros(ctx, {"row", "in"}, {4, 0});
  const Tensor w0 = Tensor::zeros(ctx, {"out", "in"}, {6, 0});
  checkClose(x0.dotPacked(ctx, fucina::packRhs(ctx, w0, "in"), bias), x0.addDot(ctx, w0, "in", bias), 0);
}

TEST_CASE("dotPacked of 16-bit weights, and of q8_0 whose blocks run along a free axis") {
  ExecContext ctx;
  const Tensor x = waveTensor(ctx, {"row", "in"}, {5, 40}, 0.1f);
  const Tensor w = waveTensor(ctx, {"out", "in"}, {64, 40}, 0.5f);
  for (DType dt : {DType::f16, DType::bf16}) {
    const Tensor w16 = w.to(ctx, dt);
    const PackedRhs p = fucina::packRhs(ctx, w16, "in");
    CHECK(p.dtype() == DType::f32);
    CHECK(p.sourceDtype() == dt);
    checkClose(x.dotPacked(ctx, p), x.dot(ctx, w16, "in"), 1e-5);
  }
  const Tensor q = w.quantize(ctx, DType::q8_0, "out");  // blocks along the free axis: dense panels
  const PackedRhs p = fucina::packRhs(ctx, q, "in");
  CHECK(p.dtype() == DType::f32);
  checkClose(x.dotPacked(ctx, p), x.dot(ctx, q, "in"), 1e-5);
  // 16-bit activations are read as f32.
  checkClose(x.to(ctx, DType::f16).dotPacked(ctx, fucina::packRhs(ctx, w, "in")), x.to(ctx, DType::f16).to(ctx, DType::f32).dot(ctx, w, "in"), 1e-5);
}

TEST_CASE("quantized dotPacked equals the q8_0 dot for few rows and many") {
  ExecContext ctx;
  for (int64_t m : {1, 3, 16, 17, 40}) {
    for (int64_t n : {1, 7, 33}) {
      INFO("m " << m << " n " << n);
      const Tensor x = waveTensor(ctx, {"row", "in"}, {m, 96}, 0.2f);
      const Tensor q = waveTensor(ctx, {"out", "in"}, {n, 96}, 0.6f).quantize(ctx, DType::q8_0, "in");
      const Tensor bias = waveTensor(ctx, {"out"}, {n}, 0.3f);
      const PackedRhs p = fucina::packRhs(ctx, q, "in");
      CHECK(p.dtype() == DType::q8_0);
      CHECK(p.bytes() == static_cast<size_t>(n * 96 / 32 * 34));
      checkClose(x.dotPacked(ctx, p), x.dot(ctx, q, "in"), 1e-5);
      checkClose(x.dotPacked(ctx, p, bias), x.addDot(ctx, q, "in", bias), 1e-5);
    }
  }
  // A view of a q8_0 weight (a narrowed free axis, the block axis not last in its tags).
  const Tensor q = waveTensor(ctx, {"in", "out"}, {64, 9}, 0.6f).quantize(ctx, DType::q8_0, "in").narrow(ctx, "out", 2, 5);
  const Tensor x = waveTensor(ctx, {"in"}, {64}, 0.4f);
  checkClose(x.dotPacked(ctx, fucina::packRhs(ctx, q, "in")), x.dot(ctx, q, "in"), 1e-5);
}

TEST_CASE("q8RowsDot: the SIMD kernel against its scalar reference") {
  ExecContext ctx;
  for (int64_t m : {1, 2, 4, 5, 9}) {
    const int64_t k = 160, n = 11;
    const Tensor q = waveTensor(ctx, {"out", "in"}, {n, k}, 0.6f).quantize(ctx, DType::q8_0, "in");
    const std::vector<float> a = test::wave(static_cast<size_t>(m * (k + 3)), 1.1f, 0.2f, 0.41f);
    const std::vector<float> bias = test::wave(static_cast<size_t>(n), 0.5f, 0.1f, 0.3f);
    const std::byte* w = q.value().storage()->data();
    std::vector<float> fast(static_cast<size_t>(m * n), -1.f), ref(fast);
    // Columns 2..9 only, rows k + 3 apart: the rest of C must stay untouched.
    fucina::kernels::q8RowsDot(m, k, a.data(), k + 3, w, 2, 9, fast.data(), n, bias.data());
    fucina::kernels::q8RowsDotRef(m, k, a.data(), k + 3, w, 2, 9, ref.data(), n, bias.data());
    for (size_t i = 0; i < fast.size(); ++i) {
      INFO("m " << m << " element " << i);
      CHECK(std::abs(fast[i] - ref[i]) <= 1e-5f * (1.f + std::abs(ref[i])));
      if (i % static_cast<size_t>(n) < 2 || i % static_cast<size_t>(n) >= 9) CHECK(fast[i] == -1.f);
    }
  }
}

TEST_CASE("dotPacked gives the same bits on 1 and 2 threads") {
  ExecContext one(ExecOptions{.threads = 1}), two(ExecOptions{.threads = 2});
  for (auto [m, k, n] : {std::array<int64_t, 3>{64, 320, 512}, {1, 2048, 640}, {300, 64, 9}}) {
    INFO("m " << m << " k " << k << " n " << n);
    auto run = [&, m = m, k = k, n = n](ExecContext& c, bool q8) {
      const Tensor x = waveTensor(c, {"row", "in"}, {m, k}, 0.1f);
      Tensor w = waveTensor(c, {"out", "in"}, {n, k}, 0.5f);
      if (q8) w = w.quantize(c, DType::q8_0, "in");
      return x.dotPacked(c, fucina::packRhs(c, w, "in")).toVector();
    };
    CHECK(run(one, false) == run(two, false));
    CHECK(run(one, true) == run(two, true));
  }
}

TEST_CASE("the fused packed products equal their parts") {
  ExecContext ctx;
  const Tensor x = waveTensor(ctx, {"t", "e"}, {5, 64}, 0.2f);
  const Tensor gamma = waveTensor(ctx, {"e"}, {64}, 0.9f);
  const Tensor w = waveTensor(ctx, {"out", "e"}, {24, 64}, 0.5f);
  const PackedRhs dense = fucina::packRhs(ctx, w, "e");
  const Tensor q = w.quantize(ctx, DType::q8_0, "e");
  const PackedRhs quant = fucina::packRhs(ctx, q, "e");
  checkClose(x.rmsNormMulDotPacked(ctx, gamma, dense, 1e-5), x.rmsNormMul(ctx, "e", gamma, 1e-5).dot(ctx, w, "e"), 1e-5);
  checkClose(x.rmsNormMulDotPacked(ctx, gamma, quant), x.rmsNormMul(ctx, "e", gamma).dot(ctx, q, "e"), 1e-5);
  const Tensor gate_up = waveTensor(ctx, {"t", "e"}, {5, 128}, 0.4f);
  checkClose(gate_up.splitSwiGluDotPacked(ctx, dense), gate_up.swiglu(ctx, "e").dot(ctx, w, "e"), 1e-5);
  checkClose(gate_up.splitSwiGluDotPacked(ctx, quant), gate_up.swiglu(ctx, "e").dot(ctx, q, "e"), 1e-5);
  checkClose(gate_up.gegluQuantDotPacked(ctx, quant), gate_up.geglu(ctx, "e").dot(ctx, q, "e"), 1e-5);
  CHECK_FUCINA_ERROR(gate_up.gegluQuantDotPacked(ctx, dense), DTypeMismatch);
  CHECK_FUCINA_ERROR(x.splitSwiGluDotPacked(ctx, dense), ShapeMismatch);  // 64 halves to 32, not 64
}

TEST_CASE("packed products refuse gradients with the reference's errors") {
  ExecContext ctx;
  const Tensor wv = Tensor::variable(ctx, waveTensor(ctx, {"out", "e"}, {4, 32}, 0.5f));
  CHECK_FUCINA_ERROR(fucina::packRhs(ctx, wv, "e"), GradientPackedMatmulUnsupported);
  const PackedRhs dense = fucina::packRhs(ctx, wv.detach(ctx), "e");
  const PackedRhs quant = fucina::packRhs(ctx, wv.detach(ctx).quantize(ctx, DType::q8_0, "e"), "e");
  const Tensor xv = Tensor::variable(ctx, waveTensor(ctx, {"t", "e"}, {2, 32}, 0.1f));
  const Tensor gv = Tensor::variable(ctx, waveTensor(ctx, {"e"}, {32}, 0.3f));
  const Tensor uv = Tensor::variable(ctx, waveTensor(ctx, {"t", "e"}, {2, 64}, 0.1f));
  CHECK_FUCINA_ERROR(xv.dotPacked(ctx, dense), GradientPackedMatmulUnsupported);
  CHECK_FUCINA_ERROR(xv.dotPacked(ctx, quant), GradientQuantizedMatmulUnsupported);
  const Tensor x = xv.detach(ctx);
  const Tensor bias_v = Tensor::variable(ctx, waveTensor(ctx, {"out"}, {4}, 0.3f));
  CHECK_FUCINA_ERROR(x.dotPacked(ctx, dense, bias_v), GradientPackedMatmulUnsupported);
  CHECK_FUCINA_ERROR(xv.rmsNormMulDotPacked(ctx, gv.detach(ctx), dense), GradientQuantizedMatmulUnsupported);
  CHECK_FUCINA_ERROR(x.rmsNormMulDotPacked(ctx, gv, quant), GradientQuantizedMatmulUnsupported);
  CHECK_FUCINA_ERROR(uv.splitSwiGluDotPacked(ctx, quant), GradientQuantizedMatmulUnsupported);
  CHECK_FUCINA_ERROR(uv.gegluQuantDotPacked(ctx, quant), GradientQuantizedMatmulUnsupported);
  // Detached, or under noGrad, every one runs and gives a constant.
  CHECK_FALSE(x.dotPacked(ctx, dense).requiresGrad());
  CHECK_FALSE(uv.detach(ctx).gegluQuantDotPacked(ctx, quant).requiresGrad());
  {
    const fucina::NoGradScope no_grad;
    const PackedRhs from_leaf = fucina::packRhs(ctx, wv, "e");
    CHECK_FALSE(xv.dotPacked(ctx, from_leaf).requiresGrad());
    CHECK_FALSE(xv.rmsNormMulDotPacked(ctx, gv, quant).requiresGrad());
    CHECK_FALSE(uv.splitSwiGluDotPacked(ctx, quant).requiresGrad());
  }
}

TEST_CASE("packed products reject bad inputs with their codes") {
  ExecContext ctx;
  const Tensor w = waveTensor(ctx, {"out", "in"}, {4, 32}, 0.5f);
  const PackedRhs p = fucina::packRhs(ctx, w, "in");
  const Tensor x = waveTensor(ctx, {"t", "in"}, {2, 32}, 0.1f);
  CHECK_FUCINA_ERROR(x.dotPacked(ctx, PackedRhs{}), InvalidArgument);
  CHECK_FUCINA_ERROR(fucina::packRhs(ctx, w, "nope"), ShapeMismatch);
  CHECK_FUCINA_ERROR(fucina::packRhs(ctx, w.to(ctx, DType::f64), "in"), DTypeMismatch);
  CHECK_FUCINA_ERROR(fucina::packRhs(ctx, Tensor::fromInts(ctx, {"out", "in"}, {1, 2}, {1, 2}), "in"), DTypeMismatch);
  CHECK_FUCINA_ERROR(fucina::packRhs(ctx, Tensor(), "in"), InvalidArgument);
  CHECK_FUCINA_ERROR(waveTensor(ctx, {"t", "in"}, {2, 31}, 0.1f).dotPacked(ctx, p), ShapeMismatch);
  CHECK_FUCINA_ERROR(waveTensor(ctx, {"t", "e"}, {2, 32}, 0.1f).dotPacked(ctx, p), ShapeMismatch);
  CHECK_FUCINA_ERROR(waveTensor(ctx, {"out", "in"}, {4, 32}, 0.1f).dotPacked(ctx, p), ShapeMismatch);  // a batch axis
  CHECK_FUCINA_ERROR(x.to(ctx, DType::f64).dotPacked(ctx, p), DTypeMismatch);
  CHECK_FUCINA_ERROR(x.dotPacked(ctx, p, waveTensor(ctx, {"o"}, {4}, 0.1f)), ShapeMismatch);
  CHECK_FUCINA_ERROR(x.dotPacked(ctx, p, waveTensor(ctx, {"out"}, {5}, 0.1f)), ShapeMismatch);
  CHECK_FUCINA_ERROR(x.dotPacked(ctx, p, waveTensor(ctx, {"t", "out"}, {2, 4}, 0.1f)), ShapeMismatch);
}

TEST_CASE("a packed weight's bytes count in the context's memory until its last copy goes") {
  ExecContext ctx;
  const Tensor w = waveTensor(ctx, {"out", "in"}, {100, 64}, 0.5f);
  const size_t before = ctx.memory().live_bytes;
  {
    const PackedRhs p = fucina::packRhs(ctx, w, "in");
    CHECK(p.bytes() >= 100u * 64u * sizeof(float));
    CHECK(ctx.memory().live_bytes >= before + p.bytes());
    const PackedRhs copy = p;  // shares the buffer
    CHECK(ctx.memory().live_bytes >= before + p.bytes());
    CHECK(p.describe().find("f32 panels") != std::string::npos);
  }
  CHECK(ctx.memory().live_bytes == before);
}
