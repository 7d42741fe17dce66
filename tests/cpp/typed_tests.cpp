// Typed branches (Note [Dtype rules]): 16-bit leaves with f32 gradients, the casts between
// float dtypes, the contractions with a 16-bit or q8_0 right operand (converted while the GEMM
// packs it), and optimizers updating 16-bit parameters.
#include <cstring>

#include "fucina/core/q8.h"
#include "fucina/backend/cpu/gemm.h"
#include "fucina/backend/cpu/gemm_simd.h"
#include "test_helpers.h"

using fucina::DType;
using fucina::ExecContext;
using fucina::ExecOptions;
using fucina::Tensor;
using fucina::Tags;
using fucina::Extents;
using fucina::internal::RawTensor;
using Floats = std::vector<float>;
namespace optim = fucina::optim;
namespace kernels = fucina::kernels;

namespace {

Floats roundedTo(DType d, const Floats& v) {
  Floats out;
  for (float x : v) out.push_back(d == DType::f16 ? fucina::f16ToF32(fucina::f32ToF16(x))
                                                  : fucina::bf16ToF32(fucina::f32ToBf16(x)));
  return out;
}

// q8_0 blocks made by hand (the quantizer is tested in q8_tests.cpp): block b has scale
// 2^-(b % 5) and values (b·7 + i) % 255 - 127.
std::vector<std::byte> q8Blocks(int64_t blocks) {
  std::vector<std::byte> bytes(static_cast<size_t>(blocks) * fucina::q8::kBlockBytes);
  for (int64_t b = 0; b < blocks; ++b) {
    std::byte* block = bytes.data() + b * fucina::q8::kBlockBytes;
    const uint16_t scale = fucina::f32ToF16(std::ldexp(1.0f, -static_cast<int>(b % 5)));
    std::memcpy(block, &scale, 2);
    for (int i = 0; i < 32; ++i)
      reinterpret_cast<int8_t*>(block + 2)[i] = static_cast<int8_t>((b * 7 + i) % 255 - 127);
  }
  return bytes;
}

}  // namespace

// ---------------------------------------------------------------- 16-bit leaves

TEST_CASE("16-bit leaves: values rounded to the dtype, gradient always f32", "[typed]") {
  ExecContext ctx;
  for (DType d : {DType::f16, DType::bf16}) {
    const Floats v = {1.0f, 2.5f, 3.14159f, -1e-3f};
    Tensor x = Tensor::variableFromSlice(ctx, {"d"}, {4}, v, d);
    CHECK(x.dtype() == d);
    CHECK(x.requiresGrad());
    CHECK(test::vec(x.dataConst()) == roundedTo(d, v));
    Tensor c = Tensor::fromSlice(ctx, {"d"}, {4}, {10, 20, 30, 40});
    x.to(ctx, DType::f32).mul(ctx, c).sumAll(ctx).backward(ctx);
    auto g = x.grad(ctx);
    REQUIRE(g);
    CHECK(g->dtype() == DType::f32);
    CHECK(test::vec(g->dataConst()) == Floats{10, 20, 30, 40});
    // variable() of a 16-bit value keeps its dtype.
    Tensor y = Tensor::variable(ctx, Tensor::fromSlice(ctx, {"d"}, {4}, v).to(ctx, d));
    CHECK(y.dtype() == d);
    CHECK(y.requiresGrad());
  }
}

TEST_CASE("casts between f32, f16 and bf16 carry the gradient as f32 both ways", "[typed]") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"d"}, {3}, {1.0f, 2.0f, 3.0f});
  Tensor h = x.to(ctx, DType::f16);  // f32 -> f16 -> bf16 -> f32
  CHECK(h.requiresGrad());
  Tensor back = h.to(ctx, DType::bf16).to(ctx, DType::f32);
  back.mul(ctx, Tensor::fromSlice(ctx, {"d"}, {3}, {2, 4, 8})).sumAll(ctx).backward(ctx);
  CHECK(test::vec(x.grad(ctx)->dataConst()) == Floats{2, 4, 8});
  // Off the float seam the cast refuses a grad-carrying input.
  Tensor z = Tensor::variableFromSlice(ctx, {"d"}, {1}, {1.0f}, DType::bf16);
  CHECK_FUCINA_ERROR(z.to(ctx, DType::f64), GradientCastUnsupported);
  CHECK_FUCINA_ERROR(z.to(ctx, DType::i32), GradientCastUnsupported);
  CHECK(z.detach(ctx).to(ctx, DType::f64).dtype() == DType::f64);
}

TEST_CASE("f64, integer and q8_0 tensors never take gradients", "[typed]") {
  ExecContext ctx;
  CHECK_FUCINA_ERROR(Tensor::variableFromSlice(ctx, {"d"}, {1}, {1.0f}, DType::f64), UnsupportedGradient);
  CHECK_FUCINA_ERROR(Tensor::variableFromSlice(ctx, {"d"}, {1}, {1.0f}, DType::i32), UnsupportedGradient);
  CHECK_FUCINA_ERROR(Tensor::variableFromSlice(ctx, {"d"}, {32}, Floats(32, 1.0f), DType::q8_0),
                     UnsupportedGradient);
  Tensor d64 = Tensor::full(ctx, {"d"}, {2}, 1.5, DType::f64);
  CHECK_FUCINA_ERROR(Tensor::variable(ctx, d64), UnsupportedGradient);
  CHECK_FUCINA_ERROR(Tensor::variable(ctx, Tensor::fromInts(ctx, {"d"}, {2}, {1, 2})), UnsupportedGradient);
  CHECK_FUCINA_ERROR(d64.grad(ctx), UnsupportedGradient);
  CHECK_FUCINA_ERROR(d64.gradView(ctx), UnsupportedGradient);
  d64.zeroGrad();  // a no-op
  Tensor det = d64.detach(ctx);
  CHECK_FALSE(det.requiresGrad());
  CHECK(det.dtype() == DType::f64);
}

// ---------------------------------------------------------------- the typed GEMM

TEST_CASE("convertRun matches the scalar conversions at any offset and length", "[typed][gemm]") {
  const Floats src = test::wave(301, 40.0f, 0.3f, 0.7f);
  for (DType d : {DType::f16, DType::bf16}) {
    std::vector<uint16_t> bits;
    for (float x : src) bits.push_back(d == DType::f16 ? fucina::f32ToF16(x) : fucina::f32ToBf16(x));
    const Floats want = roundedTo(d, src);
    for (int64_t e : {0, 1, 7, 33})
      for (int64_t n : {0, 1, 5, 16, 17, 64, 250}) {
        Floats got(static_cast<size_t>(n), -1.0f);
        kernels::detail::convertRun(reinterpret_cast<const std::byte*>(bits.data()), d, e, n, got.data());
        CHECK(got == Floats(want.begin() + e, want.begin() + e + n));
      }
  }
  const auto blocks = q8Blocks(9);
  for (int64_t e : {0, 1, 31, 32, 45})
    for (int64_t n : {0, 1, 3, 19, 32, 64, 200}) {
      Floats got(static_cast<size_t>(n));
      kernels::detail::convertRun(blocks.data(), DType::q8_0, e, n, got.data());
      for (int64_t i = 0; i < n; ++i) CHECK(got[i] == fucina::q8::load(blocks.data(), e + i));
    }
}

TEST_CASE("GEMM with a typed B equals the f32 GEMM on the converted values, bit for bit", "[typed][gemm]") {
  // Odd sizes, a depth past one packed slice (kKC) and one that splits in halves (Note [Split
  // the depth]: m, n small, k >= 1024), both B layouts, with and without a bias, 1 and 2 threads.
  struct Shape { int64_t m, n, k; };
  for (Shape s : {Shape{1, 1, 1}, Shape{7, 45, 37}, Shape{13, 70, 600}, Shape{3, 5, 1100}, Shape{64, 96, 64}}) {
    const Floats a = test::wave(static_cast<size_t>(s.m * s.k), 1.0f, 0.1f, 0.37f);
    const Floats bias = test::wave(static_cast<size_t>(s.n), 1.0f, 0.5f, 0.9f);
    for (DType d : {DType::f16, DType::bf16, DType::q8_0})
      for (bool trans_b : {false, true})
        for (int threads : {1, 2}) {
          if (d == DType::q8_0 && !trans_b && s.n % 32 != 0) continue;  // blocks run along B's rows
          if (d == DType::q8_0 && trans_b && s.k % 32 != 0) continue;
          ExecContext ctx(ExecOptions{.threads = threads});
          const int64_t count = s.k * s.n, ldb = trans_b ? s.k : s.n;
          std::vector<std::byte> bytes;
          Floats bf(static_cast<size_t>(count));
          if (d == DType::q8_0) {
            bytes = q8Blocks(count / 32);
            for (int64_t e = 0; e < count; ++e) bf[e] = fucina::q8::load(bytes.data(), e);
          } else {
            const Floats raw = test::wave(static_cast<size_t>(count), 2.0f, 0.2f, 0.61f);
            bf = roundedTo(d, raw);
            bytes.resize(static_cast<size_t>(count) * 2);
            for (int64_t e = 0; e < count; ++e) {
              const uint16_t v = d == DType::f16 ? fucina::f32ToF16(raw[e]) : fucina::f32ToBf16(raw[e]);
              std::memcpy(bytes.data() + 2 * e, &v, 2);
            }
          }
          for (bool with_bias : {false, true}) {
            Floats want(static_cast<size_t>(s.m * s.n)), got(want.size());
            const float* pbias = with_bias ? bias.data() : nullptr;
            kernels::gemm(ctx, false, trans_b, s.m, s.n, s.k, a.data(), s.k, bf.data(), ldb, want.data(), s.n,
                          false, pbias);
            kernels::gemm(ctx, false, trans_b, s.m, s.n, s.k, a.data(), s.k, kernels::TypedB{bytes.data(), d, 0},
                          ldb, got.data(), s.n, false, pbias);
            INFO("m " << s.m << " n " << s.n << " k " << s.k << " " << fucina::name(d) << " trans_b " << trans_b
                      << " threads " << threads << " bias " << with_bias);
            CHECK(got == want);
          }
        }
  }
}

// ---------------------------------------------------------------- mixed-RHS contractions

namespace {

// x {b, in} f32 variable (read through a permuted view when `strided`), w a 16-bit variable in
// the given axis order; checks y, dx and dW against the f32 computation on w's rounded values.
void checkMixedDot(DType d, Tags w_tags, bool strided) {
  ExecContext ctx;
  const int64_t B = 5, IN = 37, OUT = 45;
  const Floats xv = test::wave(B * IN, 1.0f, 0.1f, 0.37f);
  Extents w_shape;
  for (fucina::Tag t : w_tags) w_shape.push_back(t == fucina::Tag("in") ? IN : OUT);
  const Floats wv = test::wave(IN * OUT, 0.5f, 0.4f, 0.23f);
  Tensor x = strided ? Tensor::variableFromSlice(ctx, {"in", "b"}, {IN, B}, xv)
                     : Tensor::variableFromSlice(ctx, {"b", "in"}, {B, IN}, xv);
  Tensor w16 = Tensor::variableFromSlice(ctx, w_tags, w_shape, wv, d);
  Tensor w32 = Tensor::variableFromSlice(ctx, w_tags, w_shape, roundedTo(d, wv));
  auto xin = [&] { return strided ? x.permuteTo(ctx, {"b", "in"}) : x; };  // a fresh view per graph
  const Tensor gy = Tensor::fromSlice(ctx, {"b", "out"}, {B, OUT}, test::wave(B * OUT, 1.0f, 0.7f, 0.11f));
  Tensor y16 = xin().dot(ctx, w16, "in");
  CHECK(y16.dtype() == DType::f32);
  y16.mul(ctx, gy).sumAll(ctx).backward(ctx);
  const Floats dx16 = test::vec(x.grad(ctx)->dataConst());
  x.zeroGrad();
  Tensor y32 = xin().dot(ctx, w32, "in");
  y32.mul(ctx, gy).sumAll(ctx).backward(ctx);
  CHECK(test::vec(y16.dataConst()) == test::vec(y32.dataConst()));
  CHECK(dx16 == test::vec(x.grad(ctx)->dataConst()));
  auto dw = w16.grad(ctx);
  REQUIRE(dw);
  CHECK(dw->dtype() == DType::f32);
  CHECK(dw->tags() == w_tags);
  CHECK(test::vec(dw->dataConst()) == test::vec(w32.grad(ctx)->dataConst()));
}

}  // namespace

TEST_CASE("dot with a 16-bit variable right operand: dx, and an f32 dW", "[typed]") {
  for (DType d : {DType::f16, DType::bf16}) {
    checkMixedDot(d, {"in", "out"}, false);
    checkMixedDot(d, {"out", "in"}, false);
    checkMixedDot(d, {"out", "in"}, true);
  }
}

TEST_CASE("einsum, addDot and matmul with a 16-bit right operand", "[typed]") {
  ExecContext ctx;
  const Floats av = test::wave(2 * 3 * 4, 1.0f, 0.1f, 0.5f), bv = test::wave(2 * 4 * 5, 1.0f, 0.3f, 0.7f);
  for (DType d : {DType::f16, DType::bf16}) {
    Tensor a = Tensor::variableFromSlice(ctx, {"h", "i", "k"}, {2, 3, 4}, av);
    Tensor b16 = Tensor::variableFromSlice(ctx, {"h", "k", "j"}, {2, 4, 5}, bv, d);
    Tensor b32 = Tensor::variableFromSlice(ctx, {"h", "k", "j"}, {2, 4, 5}, roundedTo(d, bv));
    auto grads = [&](const Tensor& b, auto op) {
      a.zeroGrad();
      Tensor y = op(b);
      y.sumAll(ctx).backward(ctx);
      return std::tuple{test::vec(y.dataConst()), test::vec(a.grad(ctx)->dataConst()), test::vec(b.grad(ctx)->dataConst())};
    };
    auto einsum = [&](const Tensor& b) { return Tensor::einsum(ctx, a, b, {"h", "j", "i"}); };
    CHECK(grads(b16, einsum) == grads(b32, einsum));
    auto summed = [&](const Tensor& b) { return Tensor::einsum(ctx, a, b, {"h", "i"}); };  // j summed away
    CHECK(grads(b16, summed) == grads(b32, summed));
    auto matmul = [&](const Tensor& b) { return a.matmul(ctx, b); };
    CHECK(grads(b16, matmul) == grads(b32, matmul));
    Tensor bias = Tensor::variableFromSlice(ctx, {"j"}, {5}, {1, 2, 3, 4, 5});
    auto addDot = [&](const Tensor& b) { return a.addDot(ctx, b, "k", bias); };
    CHECK(grads(b16, addDot) == grads(b32, addDot));
    CHECK(einsum(b16).dtype() == DType::f32);
  }
}

TEST_CASE("dot: 16-bit constants on both sides give a 16-bit result, a 16-bit variable on the left is refused", "[typed]") {
  ExecContext ctx;
  Tensor a = Tensor::fromSlice(ctx, {"i", "k"}, {2, 3}, {1, 2, 3, 4, 5, 6}).to(ctx, DType::f16);
  Tensor b = Tensor::fromSlice(ctx, {"k", "j"}, {3, 1}, {0.5f, 0.25f, 1.0f}).to(ctx, DType::f16);
  Tensor y = a.dot(ctx, b, "k");
  CHECK(y.dtype() == DType::f16);
  CHECK(test::vec(y.dataConst()) == Floats{4.0f, 9.25f});
  CHECK(a.dot(ctx, b.to(ctx, DType::bf16), "k").dtype() == DType::f32);
  CHECK(a.dot(ctx, b.to(ctx, DType::f32), "k").dtype() == DType::f32);
  Tensor av = Tensor::variable(ctx, a);
  CHECK_FUCINA_ERROR(av.dot(ctx, b, "k"), UnsupportedGradient);
  {
    fucina::NoGradScope no_grad;
    CHECK(av.dot(ctx, b, "k").dtype() == DType::f16);
  }
  CHECK_FUCINA_ERROR(a.dot(ctx, Tensor::fromInts(ctx, {"k"}, {3}, {1, 2, 3}), "k"), DTypeMismatch);
}

// ---------------------------------------------------------------- optimizers

TEST_CASE("optimizers update 16-bit parameters in f32 and round the result into them", "[typed][optim]") {
  ExecContext ctx;
  for (DType d : {DType::f16, DType::bf16}) {
    const Floats p0 = {1.0f, -2.0f, 0.3f};
    Tensor p = Tensor::variableFromSlice(ctx, {"d"}, {3}, p0, d);
    optim::Sgd sgd({.lr = 0.1});
    sgd.add(p);
    p.gradState()->setGrad(RawTensor::fromSlice(ctx, {"d"}, {3}, Floats{0.5f, -1.0f, 0.25f}));
    const Floats before = test::vec(p.dataConst());  // also fills dataConst's f32 copy
    sgd.step(ctx);
    CHECK(p.dtype() == d);
    const Floats want = roundedTo(d, {before[0] - 0.05f, before[1] + 0.1f, before[2] - 0.025f});
    CHECK(test::vec(p.dataConst()) == want);  // the copy was refreshed
    Tensor q = Tensor::variableFromSlice(ctx, {"d"}, {3}, p0, d);
    optim::Adam adam({.lr = 0.01});
    adam.add(q);
    q.gradState()->setGrad(RawTensor::fromSlice(ctx, {"d"}, {3}, Floats{0.5f, -1.0f, 0.25f}));
    adam.step(ctx);  // Adam's first step moves each element by lr·sign(g)
    const Floats qb = roundedTo(d, p0);
    CHECK(test::vec(q.dataConst()) == roundedTo(d, {qb[0] - 0.01f, qb[1] + 0.01f, qb[2] - 0.01f}));
  }
}

TEST_CASE("master weights: bf16 updates below half a bf16 step still add up", "[typed][optim]") {
  ExecContext ctx;
  auto run = [&](bool master) {
    Tensor p = Tensor::variableFromSlice(ctx, {"d"}, {1}, {1.0f}, DType::bf16);
    optim::Sgd sgd({.lr = 1e-4, .master_weights = master});
    sgd.add(p);
    for (int i = 0; i < 100; ++i) {
      p.gradState()->setGrad(RawTensor::fromSlice(ctx, {"d"}, {1}, Floats{1.0f}));
      sgd.step(ctx);
    }
    return p.item();
  };
  CHECK(run(false) == 1.0f);  // each step (1e-4) is below half a bf16 step at 1 (2^-8)
  CHECK(run(true) == fucina::bf16ToF32(fucina::f32ToBf16(1.0f - 100 * 1e-4f)));
  // clipGradNorm reads 16-bit parameters' f32 gradients like any other.
  Tensor p = Tensor::variableFromSlice(ctx, {"d"}, {2}, {1.0f, 1.0f}, DType::f16);
  p.gradState()->setGrad(RawTensor::fromSlice(ctx, {"d"}, {2}, Floats{3.0f, 4.0f}));
  CHECK(optim::clipGradNorm(ctx, std::span<const Tensor>(&p, 1), 1.0) == Approx(5.0));
  CHECK(p.grad(ctx)->dtype() == DType::f32);
}

// ---------------------------------------------------------------- q8_0 right operands

TEST_CASE("dot and einsum with a q8_0 right operand: the gradient goes to the left operand only", "[typed][q8]") {
  ExecContext ctx(ExecOptions{.threads = 2});
  const int64_t B = 3, IN = 96, OUT = 40;
  const Floats xv = test::wave(B * IN, 1.0f, 0.1f, 0.37f), wv = test::wave(OUT * IN, 0.5f, 0.4f, 0.23f);
  // Blocks along the contracted axis (a Linear weight {out, in}), and along the kept one.
  for (bool along_in : {true, false}) {
    Tensor w32 = along_in ? Tensor::fromSlice(ctx, {"out", "in"}, {OUT, IN}, wv)
                          : Tensor::fromSlice(ctx, {"in", "out"}, {IN, 32}, Floats(wv.begin(), wv.begin() + IN * 32));
    Tensor q = w32.quantize(ctx, DType::q8_0, along_in ? "in" : "out");
    CHECK_FALSE(q.requiresGrad());
    Tensor deq = q.to(ctx, DType::f32);
    auto run = [&](const Tensor& w) {
      Tensor x = Tensor::variableFromSlice(ctx, {"b", "in"}, {B, IN}, xv);
      Tensor y = x.dot(ctx, w, "in");
      y.mul(ctx, y).sumAll(ctx).backward(ctx);
      return std::pair{test::vec(y.dataConst()), test::vec(x.grad(ctx)->dataConst())};
    };
    INFO("blocks along " << (along_in ? "in" : "out"));
    CHECK(run(q) == run(deq));
    Tensor x = Tensor::fromSlice(ctx, {"b", "in"}, {B, IN}, xv);
    CHECK(test::vec(Tensor::einsum(ctx, x, q, {"b"}).dataConst()) ==
          test::vec(Tensor::einsum(ctx, x, deq, {"b"}).dataConst()));
    CHECK(x.dot(ctx, q, "in").dtype() == DType::f32);
  }
  // q8_0 on the left is refused (it is a weight format): dequantize first.
  Tensor q = Tensor::fromSlice(ctx, {"out", "in"}, {1, 32}, Floats(32, 1.0f)).quantize(ctx, DType::q8_0, "in");
  CHECK_FUCINA_ERROR(q.dot(ctx, Tensor::ones(ctx, {"in"}, {32}), "in"), DTypeMismatch);
}

TEST_CASE("Gpt::freezeProjections: frozen 16-bit or q8_0 projections, trainable LayerNorms and embeddings", "[typed][nn]") {
  ExecContext ctx;
  fucina::nn::GptConfig config;
  config.vocab = 32, config.context = 8, config.d_model = 32, config.heads = 2, config.layers = 1, config.mlp = 64;
  const Tensor tokens = Tensor::fromInts(ctx, {"batch", "t"}, {2, 9}, {1, 5, 9, 3, 7, 2, 8, 4, 6, 0, 31, 12, 17, 23, 3, 3, 9, 1});
  const float base = fucina::nn::Gpt(ctx, config, 1).loss(ctx, tokens).item();
  for (DType d : {DType::f32, DType::f16, DType::bf16, DType::q8_0})
    for (bool ckpt : {false, true}) {
      config.checkpoint_blocks = ckpt;
      fucina::nn::Gpt model(ctx, config, 1);
      const size_t all = model.parameters().size();
      model.freezeProjections(ctx, d);
      const std::vector<Tensor> params = model.parameters();
      CHECK(params.size() == all - 8);  // 4 weights and 4 biases per block
      Tensor loss = model.loss(ctx, tokens);
      INFO(fucina::name(d) << " checkpointed " << ckpt);
      if (d == DType::f32) CHECK(loss.item() == base);
      else CHECK(std::abs(loss.item() - base) < (d == DType::f16 ? 1e-3f : 2e-2f));
      loss.backward(ctx);
      for (const Tensor& p : params) CHECK(p.grad(ctx).has_value());
    }
  fucina::nn::Gpt model(ctx, config, 1);
  CHECK_FUCINA_ERROR(model.freezeProjections(ctx, DType::i32), InvalidArgument);
}

TEST_CASE("contractions with an f64 operand compute in double and return a constant", "[typed]") {
  ExecContext ctx;
  // 1 + 1e-10 is 1 in f32: only a double product keeps the difference.
  Tensor a = Tensor::full(ctx, {"i", "k"}, {2, 3}, 1.0 + 1e-10, DType::f64);
  Tensor b = Tensor::full(ctx, {"k", "j"}, {3, 2}, 1.0, DType::f64);
  auto f64At = [](const Tensor& t, int64_t i) { return t.value().data<double>()[i]; };
  Tensor y = a.dot(ctx, b, "k");
  CHECK(y.dtype() == DType::f64);
  CHECK(f64At(y, 0) == 3.0 * (1.0 + 1e-10));
  CHECK(f64At(a.matmul(ctx, b), 3) == 3.0 * (1.0 + 1e-10));
  Tensor e = Tensor::einsum(ctx, a, b, {"j", "i"});
  CHECK(e.tags() == Tags{"j", "i"});
  CHECK(f64At(e, 1) == 3.0 * (1.0 + 1e-10));
  Tensor bias = Tensor::fromSlice(ctx, {"j"}, {2}, {1.0f, 2.0f});  // f32 promotes
  Tensor z = a.addDot(ctx, b, "k", bias);
  CHECK(z.dtype() == DType::f64);
  CHECK(f64At(z, 1) == 3.0 * (1.0 + 1e-10) + 2.0);
  CHECK(a.dot(ctx, b.to(ctx, DType::f16), "k").dtype() == DType::f64);
  CHECK_FALSE(y.requiresGrad());
  Tensor v = Tensor::variableFromSlice(ctx, {"k", "j"}, {3, 2}, Floats(6, 1.0f));
  CHECK_FUCINA_ERROR(a.dot(ctx, v, "k"), UnsupportedGradient);
  CHECK_FUCINA_ERROR(a.dot(ctx, Tensor::fromInts(ctx, {"k"}, {3}, {1, 2, 3}), "k"), DTypeMismatch);
}
