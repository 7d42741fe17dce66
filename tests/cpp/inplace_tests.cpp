// The in-place and storage-consuming helpers (ops/inplace.cpp): the values of the
// out-of-place ops they stand for, bit for bit, on any layout; writes land in the tensor's own
// buffer; operands that require grad are UnsupportedGradient; shared storage is refused.
#include "test_helpers.h"

#include <cmath>
#include <span>
#include <vector>

#include "fucina/exec/context.h"

using fucina::DType;
using fucina::ExecContext;
using fucina::Extents;
using fucina::Tags;
using fucina::Tensor;

namespace {
// A fresh constant holding `values` in a permuted layout: {r, c} values stored as {c, r}.
Tensor permutedConstant(ExecContext& ctx, int64_t rows, int64_t cols, const std::vector<float>& values) {
  return Tensor::fromSlice(ctx, {"r", "c"}, {rows, cols}, values).permuteTo(ctx, {"c", "r"}).to(ctx, DType::f32)
      .permuteTo(ctx, {"r", "c"});
}
}  // namespace

TEST_CASE("addAxisVectorInPlace and addScaledInPlace: add's values, written into the tensor's buffer") {
  ExecContext ctx(fucina::ExecOptions{.threads = GENERATE(1, 2)});
  const std::vector<float> xs = test::wave(5 * 7, 2.0f, 0.3f, 0.7f);
  const Tensor v = Tensor::fromSlice(ctx, {"c"}, {7}, test::wave(7, 1.0f, 0.1f, 1.3f));
  for (const bool permuted : {false, true}) {
    Tensor x = permuted ? permutedConstant(ctx, 5, 7, xs) : Tensor::fromSlice(ctx, {"r", "c"}, {5, 7}, xs);
    const std::vector<float> want = Tensor::fromSlice(ctx, {"r", "c"}, {5, 7}, xs).add(ctx, v).toVector();
    const void* buffer = x.value().storage().get();
    Tensor same = x.addAxisVectorInPlace(ctx, "c", v);
    CHECK(same.value().storage().get() == buffer);
    CHECK(x.toVector() == want);
    CHECK(same.toVector() == want);
  }
  // Along the leading axis, and a 16-bit vector (widened, as add does).
  Tensor x = Tensor::fromSlice(ctx, {"r", "c"}, {5, 7}, xs);
  const Tensor vr = Tensor::fromSlice(ctx, {"r"}, {5}, {1, -2, 3, 0.5f, 8}).to(ctx, DType::bf16);
  const std::vector<float> want_r = Tensor::fromSlice(ctx, {"r", "c"}, {5, 7}, xs).add(ctx, vr).toVector();
  x.addAxisVectorInPlace(ctx, "r", vr);
  CHECK(x.toVector() == want_r);

  const Tensor y = Tensor::fromSlice(ctx, {"c", "r"}, {7, 5}, test::wave(35, 1.5f, 0.2f, 0.4f));
  for (const double alpha : {1.0, -0.375, 3.1}) {
    Tensor z = permutedConstant(ctx, 5, 7, xs);
    const std::vector<float> want = Tensor::fromSlice(ctx, {"r", "c"}, {5, 7}, xs).add(ctx, y.scale(ctx, alpha)).toVector();
    z.addScaledInPlace(ctx, y, alpha);
    CHECK(z.toVector() == want);
  }
  Tensor z = Tensor::fromSlice(ctx, {"r", "c"}, {5, 7}, xs);
  z.addScaledInPlace(ctx, z, 2.0);  // reads each element before writing it
  CHECK(z.toVector() == Tensor::fromSlice(ctx, {"r", "c"}, {5, 7}, xs).scale(ctx, 3.0).toVector());
  Tensor b = Tensor::fromSlice(ctx, {"r", "c"}, {5, 7}, xs);
  b.addScaledInPlace(ctx, v, 0.5);  // v broadcasts over r
  CHECK(b.toVector() == Tensor::fromSlice(ctx, {"r", "c"}, {5, 7}, xs).add(ctx, v.scale(ctx, 0.5)).toVector());
  Tensor e = Tensor::zeros(ctx, {"r", "c"}, {0, 7});
  CHECK(e.addAxisVectorInPlace(ctx, "c", v).shape() == Extents{0, 7});
}

TEST_CASE("addAxisVectorUnaryInPlace: add(v).unary(act) bit for bit, for every activation name") {
  ExecContext ctx(fucina::ExecOptions{.threads = GENERATE(1, 2)});
  const std::vector<float> xs = test::wave(3 * 67, 3.0f, 0.1f, 0.9f);
  const Tensor v = Tensor::fromSlice(ctx, {"c"}, {67}, test::wave(67, 0.5f, 0.2f, 1.1f));
  for (const std::string_view act : Tensor::unaryNames()) {
    INFO(act);
    Tensor x = permutedConstant(ctx, 3, 67, xs);
    const Tensor ref = Tensor::fromSlice(ctx, {"r", "c"}, {3, 67}, xs).add(ctx, v).unary(ctx, act);
    x.addAxisVectorUnaryInPlace(ctx, "c", v, act);
    const std::vector<float> got = x.toVector(), want = ref.toVector();
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < got.size(); ++i)
      CHECK((got[i] == want[i] || (std::isnan(got[i]) && std::isnan(want[i]))));
  }
  Tensor x = Tensor::fromSlice(ctx, {"r", "c"}, {3, 67}, xs);
  REQUIRE_FUCINA_ERROR(x.addAxisVectorUnaryInPlace(ctx, "c", v, "swish"), InvalidArgument);
  CHECK(x.toVector() == xs);  // nothing written before the name was checked
}

TEST_CASE("takeAddNoGrad and takeScaleNoGrad: add's and scale's values, the buffer reused, the operand consumed") {
  ExecContext ctx(fucina::ExecOptions{.threads = GENERATE(1, 2)});
  const std::vector<float> xs = test::wave(4 * 9, 2.0f, 0.5f, 0.6f);
  const Tensor y = Tensor::fromSlice(ctx, {"c"}, {9}, test::wave(9, 1.0f, 0.0f, 1.7f));
  const std::vector<float> sum = Tensor::fromSlice(ctx, {"r", "c"}, {4, 9}, xs).add(ctx, y).toVector();
  Tensor x = Tensor::fromSlice(ctx, {"r", "c"}, {4, 9}, xs);
  Tensor copy = x;  // every handle of the operand is disposed
  const void* buffer = x.value().storage().get();
  Tensor s = x.takeAddNoGrad(ctx, y);
  CHECK(s.value().storage().get() == buffer);
  CHECK(s.value().isExclusive());
  CHECK(s.toVector() == sum);
  REQUIRE_FUCINA_ERROR(x.toVector(), TensorReleased);
  REQUIRE_FUCINA_ERROR(copy.toVector(), TensorReleased);

  // A shared buffer, a result larger than the operand, or a 16-bit operand: a fresh result, the
  // operand consumed all the same.
  Tensor base = Tensor::fromSlice(ctx, {"r", "c"}, {4, 9}, xs);
  Tensor view = base.narrow(ctx, "c", 0, 9);
  Tensor f = view.takeAddNoGrad(ctx, y);
  CHECK(f.value().storage() != base.value().storage());
  CHECK(f.toVector() == sum);
  CHECK(base.toVector() == xs);
  REQUIRE_FUCINA_ERROR(view.toVector(), TensorReleased);
  Tensor small = Tensor::fromSlice(ctx, {"c"}, {9}, test::wave(9, 1.0f, 0.3f, 0.2f));
  const Tensor col = Tensor::fromSlice(ctx, {"r"}, {4}, {1, 2, 3, 4});
  const std::vector<float> outer = small.add(ctx, col).toVector();
  Tensor grown = small.takeAddNoGrad(ctx, col);
  CHECK(grown.tags() == Tags{"c", "r"});
  CHECK(grown.toVector() == outer);
  Tensor h = Tensor::fromSlice(ctx, {"c"}, {9}, std::span<const float>(xs.data(), 9)).to(ctx, DType::f16);
  const std::vector<float> hsum = h.add(ctx, y).toVector();
  CHECK(h.takeAddNoGrad(ctx, y).toVector() == hsum);

  Tensor t = permutedConstant(ctx, 4, 9, xs);
  const void* tb = t.value().storage().get();
  Tensor sc = t.takeScaleNoGrad(ctx, -1.25);
  CHECK(sc.value().storage().get() == tb);
  CHECK(sc.toVector() == Tensor::fromSlice(ctx, {"r", "c"}, {4, 9}, xs).scale(ctx, -1.25).toVector());
  REQUIRE_FUCINA_ERROR(t.toVector(), TensorReleased);
}

TEST_CASE("routerTopK: softmax, topK and renormalized weights, as Mixtral's router") {
  ExecContext ctx;
  const Tensor logits = Tensor::fromSlice(ctx, {"t", "e"}, {2, 4}, {0.5f, 2.0f, -1.0f, 2.0f, 3.0f, 0.0f, 1.0f, -2.0f});
  const fucina::SortResult r = logits.routerTopK(ctx, "e", 2);
  CHECK(r.indices.dtype() == DType::i64);
  CHECK(r.indices.toVector() == std::vector<float>{1, 3, 0, 2});  // a tie keeps the lower index first
  const std::vector<float> w = r.values.toVector();
  CHECK(w[0] == Approx(0.5f));
  CHECK(w[1] == Approx(0.5f));
  CHECK(w[2] == Approx(std::exp(3.0f) / (std::exp(3.0f) + std::exp(1.0f))));
  CHECK(w[2] + w[3] == Approx(1.0f));
  CHECK(!r.values.requiresGrad());
  CHECK(logits.routerTopK(ctx, "e", 4).values.sum(ctx, "e").toVector()[1] == Approx(1.0f));
  REQUIRE_FUCINA_ERROR(logits.routerTopK(ctx, "e", 0), InvalidArgument);
  REQUIRE_FUCINA_ERROR(logits.routerTopK(ctx, "e", 5), InvalidArgument);
  REQUIRE_FUCINA_ERROR(logits.routerTopK(ctx, "x", 1), ShapeMismatch);
}

TEST_CASE("in-place helpers: grad-requiring operands, shared storage, wrong dtypes and shapes are refused") {
  ExecContext ctx;
  const Tensor w = Tensor::variableFromSlice(ctx, {"r", "c"}, {2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor v = Tensor::fromSlice(ctx, {"c"}, {3}, {1, 2, 3});
  const Tensor vg = Tensor::variableFromSlice(ctx, {"c"}, {3}, {1, 2, 3});
  Tensor x = Tensor::fromSlice(ctx, {"r", "c"}, {2, 3}, {1, 2, 3, 4, 5, 6});
  REQUIRE_FUCINA_ERROR(w.addAxisVectorInPlace(ctx, "c", v), UnsupportedGradient);
  REQUIRE_FUCINA_ERROR(x.addAxisVectorInPlace(ctx, "c", vg), UnsupportedGradient);
  REQUIRE_FUCINA_ERROR(x.addAxisVectorUnaryInPlace(ctx, "c", vg, "relu"), UnsupportedGradient);
  REQUIRE_FUCINA_ERROR(w.addScaledInPlace(ctx, v, 2), UnsupportedGradient);
  REQUIRE_FUCINA_ERROR(x.addScaledInPlace(ctx, w, 2), UnsupportedGradient);
  REQUIRE_FUCINA_ERROR(w.takeAddNoGrad(ctx, v), UnsupportedGradient);
  REQUIRE_FUCINA_ERROR(x.takeAddNoGrad(ctx, vg), UnsupportedGradient);
  REQUIRE_FUCINA_ERROR(w.takeScaleNoGrad(ctx, 2), UnsupportedGradient);
  REQUIRE_FUCINA_ERROR(w.routerTopK(ctx, "c", 1), UnsupportedGradient);
  CHECK(w.toVector() == std::vector<float>{1, 2, 3, 4, 5, 6});  // refused operands are not consumed
  CHECK(x.toVector() == std::vector<float>{1, 2, 3, 4, 5, 6});

  // A view of x, or a value saved for backward, shares its buffer: a write would change them.
  {
    Tensor view = x.narrow(ctx, "c", 1, 2);
    REQUIRE_FUCINA_ERROR(x.addAxisVectorInPlace(ctx, "c", v), InvalidArgument);
    REQUIRE_FUCINA_ERROR(view.addScaledInPlace(ctx, view, 1), InvalidArgument);
  }
  Tensor saved = Tensor::fromSlice(ctx, {"r", "c"}, {2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor loss = w.mul(ctx, saved).sumAll(ctx);  // mul saves `saved` for w's gradient
  REQUIRE_FUCINA_ERROR(saved.addScaledInPlace(ctx, v, 1), InvalidArgument);
  loss.backward(ctx);
  CHECK(test::gradOf(ctx, w) == std::vector<float>{1, 2, 3, 4, 5, 6});

  REQUIRE_FUCINA_ERROR(x.addAxisVectorInPlace(ctx, "r", v), ShapeMismatch);
  REQUIRE_FUCINA_ERROR(x.addAxisVectorInPlace(ctx, "c", Tensor::fromSlice(ctx, {"c"}, {2}, {1, 2})), ShapeMismatch);
  REQUIRE_FUCINA_ERROR(x.addAxisVectorInPlace(ctx, "c", x), ShapeMismatch);
  REQUIRE_FUCINA_ERROR(x.addScaledInPlace(ctx, Tensor::fromSlice(ctx, {"z"}, {3}, {1, 2, 3}), 1), ShapeMismatch);
  REQUIRE_FUCINA_ERROR(x.addScaledInPlace(ctx, Tensor::fromInts(ctx, {"c"}, {3}, {1, 2, 3}), 1), DTypeMismatch);
  Tensor h = Tensor::fromSlice(ctx, {"c"}, {3}, {1, 2, 3}).to(ctx, DType::f16);
  REQUIRE_FUCINA_ERROR(h.addScaledInPlace(ctx, v, 1), DTypeMismatch);
  CHECK(x.toVector() == std::vector<float>{1, 2, 3, 4, 5, 6});
}
