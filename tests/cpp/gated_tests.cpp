// Gated units: swiglu and geglu split an axis into [gate | up]. Values against a scalar
// reference, agreement with the composed silu / geluErf ops, gradcheck through awkward layouts.
#include "test_helpers.h"

#include <cmath>
#include <vector>

using fucina::ExecContext;
using fucina::Extents;
using fucina::Tags;
using fucina::Tensor;

namespace {

double siluRef(double v) { return v / (1 + std::exp(-v)); }
double geluRef(double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); }

Tensor probe(ExecContext& c, const Tensor& y) {
  Tensor w = Tensor::fromSlice(c, y.tags(), y.shape(), test::wave(static_cast<size_t>(y.numel()), 1.0f, 0.3f, 0.7f));
  return y.mul(c, w).sumAll(c);
}

}  // namespace

TEST_CASE("swiglu and geglu: values against a scalar reference and the composed ops") {
  ExecContext ctx;
  // {t=2, f=4}: gate = f[0..2), up = f[2..4).
  const std::vector<float> v{-1.5f, 0.5f, 2.0f, -3.0f, 0.25f, 1.75f, -0.5f, 4.0f};
  Tensor x = Tensor::fromSlice(ctx, {"t", "f"}, {2, 4}, v);
  Tensor s = x.swiglu(ctx, "f");
  Tensor g = x.geglu(ctx, "f");
  CHECK(s.tags() == Tags{"t", "f"});
  CHECK(s.shape() == Extents{2, 2});
  const std::vector<float> sv = s.toVector(), gv = g.toVector();
  for (int r = 0; r < 2; ++r)
    for (int k = 0; k < 2; ++k) {
      const double gate = v[r * 4 + k], up = v[r * 4 + 2 + k];
      CHECK(sv[r * 2 + k] == Approx(siluRef(gate) * up).epsilon(1e-6));
      CHECK(gv[r * 2 + k] == Approx(geluRef(gate) * up).epsilon(1e-6));
    }
  // Along the leading axis of a permuted view: same as silu(gate) * up composed by hand.
  Tensor y = Tensor::fromSlice(ctx, {"a", "b", "c"}, {3, 6, 5}, test::wave(90, 2.0f, 0.1f, 0.37f));
  Tensor yp = y.permuteTo(ctx, {"c", "b", "a"});
  Tensor composed = y.narrow(ctx, "b", 0, 3).silu(ctx).mul(ctx, y.narrow(ctx, "b", 3, 3));
  Tensor fused = yp.swiglu(ctx, "b").permuteTo(ctx, {"a", "b", "c"});
  const std::vector<float> cv = composed.toVector(), fv = fused.toVector();
  REQUIRE(cv.size() == fv.size());
  for (size_t i = 0; i < cv.size(); ++i) CHECK(fv[i] == Approx(cv[i]).epsilon(1e-6).margin(1e-7));
  Tensor composed_g = y.narrow(ctx, "b", 0, 3).geluErf(ctx).mul(ctx, y.narrow(ctx, "b", 3, 3));
  const std::vector<float> cg = composed_g.toVector(), fg = yp.geglu(ctx, "b").permuteTo(ctx, {"a", "b", "c"}).toVector();
  for (size_t i = 0; i < cg.size(); ++i) CHECK(fg[i] == Approx(cg[i]).epsilon(1e-6).margin(1e-7));
}

TEST_CASE("swiglu and geglu pass gradcheck on several shapes and layouts") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"a", "f", "c"}, {4, 10, 1}, test::wave(40, 1.5f, 0.2f, 0.61f));
  Tensor two = Tensor::variableFromSlice(ctx, {"f"}, {2}, {0.7f, -1.3f});
  for (auto op : {&Tensor::swiglu, &Tensor::geglu}) {
    fucina::gradcheck(ctx, [&](ExecContext& c) { return probe(c, (x.*op)(c, "f")); }, {&x});
    fucina::gradcheck(ctx, [&](ExecContext& c) { return probe(c, (x.*op)(c, "a").narrow(c, "f", 0, 2)); }, {&x});
    fucina::gradcheck(ctx, [&](ExecContext& c) {
      return probe(c, (x.permuteTo(c, {"f", "c", "a"}).narrow(c, "f", 1, 6).*op)(c, "f"));
    }, {&x});
    fucina::gradcheck(ctx, [&](ExecContext& c) { return probe(c, (two.*op)(c, "f")); }, {&two});
  }
  // The VJP of the fused op equals that of the composition.
  Tensor y = Tensor::variableFromSlice(ctx, {"t", "f"}, {2, 4}, {-1.5f, 0.5f, 2.0f, -3.0f, 0.25f, 1.75f, -0.5f, 4.0f});
  probe(ctx, y.swiglu(ctx, "f")).backward(ctx);
  const std::vector<float> fused = test::gradOf(ctx, y);
  y.zeroGrad();
  probe(ctx, y.narrow(ctx, "f", 0, 2).silu(ctx).mul(ctx, y.narrow(ctx, "f", 2, 2))).backward(ctx);
  const std::vector<float> composed = test::gradOf(ctx, y);
  for (size_t i = 0; i < fused.size(); ++i) CHECK(fused[i] == Approx(composed[i]).epsilon(1e-6).margin(1e-7));
}

TEST_CASE("swiglu and geglu: bad inputs and empty tensors") {
  ExecContext ctx;
  Tensor x = Tensor::ones(ctx, {"t", "f"}, {2, 3});
  CHECK_FUCINA_ERROR(x.swiglu(ctx, "f"), InvalidArgument);
  CHECK_THROWS_WITH(x.geglu(ctx, "f"), Catch::Contains("'f'"));
  CHECK_FUCINA_ERROR(x.swiglu(ctx, "zz"), ShapeMismatch);
  CHECK_FUCINA_ERROR(x.to(ctx, fucina::DType::i32).geglu(ctx, "t"), DTypeMismatch);
  CHECK(x.swiglu(ctx, "t").shape() == Extents{1, 3});
  Tensor e = Tensor::variableFromSlice(ctx, {"t", "f"}, {0, 4}, std::vector<float>{});
  Tensor y = e.swiglu(ctx, "f");
  CHECK(y.shape() == Extents{0, 2});
  y.sumAll(ctx).backward(ctx);
  CHECK(test::gradOf(ctx, e).empty());
}

// ---------------------------------------------------------------- gated, glu, splitGated, situ

TEST_CASE("gated, glu, splitGated and situ: values against their compositions") {
  ExecContext ctx;
  Tensor up = Tensor::fromSlice(ctx, {"t", "f"}, {3, 5}, test::wave(15, 2.0f, 0.3f, 0.41f));
  Tensor gate = Tensor::fromSlice(ctx, {"f", "t"}, {5, 3}, test::wave(15, 2.5f, -0.2f, 0.73f));  // other order
  auto close = [&](const Tensor& a, const Tensor& b) {
    const std::vector<float> av = a.toVector(), bv = b.permuteTo(ctx, a.tags()).toVector();
    REQUIRE(av.size() == bv.size());
    for (size_t i = 0; i < av.size(); ++i) CHECK(av[i] == Approx(bv[i]).epsilon(1e-6).margin(1e-6));
  };
  for (const char* act : {"silu", "gelu", "geluErf", "sigmoid", "relu", "quickGelu"}) {
    INFO(act);
    close(up.gated(ctx, gate, act), gate.unary(ctx, act).mul(ctx, up));
    Tensor both = Tensor::concat(ctx, std::vector<Tensor>{gate.permuteTo(ctx, {"t", "f"}), up}, "f");
    close(both.splitGated(ctx, "f", act), up.gated(ctx, gate, act));
  }
  Tensor ab = Tensor::concat(ctx, std::vector<Tensor>{up, gate.permuteTo(ctx, {"t", "f"})}, "f");
  close(ab.glu(ctx, "f"), up.mul(ctx, gate.sigmoid(ctx)));
  for (double c : {30.0, 1.5}) {
    auto capped = [&](const Tensor& v) { return v.scale(ctx, 1 / c).tanh(ctx).scale(ctx, c); };
    close(up.situ(ctx, gate, c), capped(up).mul(ctx, capped(gate.silu(ctx))));
  }
  CHECK(up.gated(ctx, gate, "silu").tags() == Tags{"t", "f"});
}

TEST_CASE("gated, glu, splitGated and situ: gradcheck through views, both operands") {
  ExecContext ctx;
  Tensor up = Tensor::variableFromSlice(ctx, {"a", "b"}, {3, 4}, test::wave(12, 1.5f, 0.2f, 0.61f));
  Tensor gate = Tensor::variableFromSlice(ctx, {"b", "a"}, {4, 3}, test::wave(12, 2.0f, -0.1f, 0.37f));
  Tensor x = Tensor::variableFromSlice(ctx, {"a", "f", "c"}, {3, 8, 1}, test::wave(24, 1.5f, 0.2f, 0.53f));
  for (const char* act : {"silu", "gelu", "geluErf", "sigmoid", "quickGelu"}) {
    INFO(act);
    fucina::gradcheck(ctx, [&](ExecContext& c) { return probe(c, up.gated(c, gate, act)); }, {&up, &gate});
    fucina::gradcheck(ctx, [&](ExecContext& c) {
      return probe(c, up.narrow(c, "b", 1, 2).gated(c, gate.permuteTo(c, {"a", "b"}).narrow(c, "b", 0, 2), act));
    }, {&up, &gate});
    fucina::gradcheck(ctx, [&](ExecContext& c) { return probe(c, x.permuteTo(c, {"f", "c", "a"}).splitGated(c, "f", act)); }, {&x});
  }
  fucina::gradcheck(ctx, [&](ExecContext& c) { return probe(c, x.glu(c, "f")); }, {&x});
  fucina::gradcheck(ctx, [&](ExecContext& c) { return probe(c, x.narrow(c, "f", 2, 6).glu(c, "f")); }, {&x});
  for (double c : {30.0, 1.5})
    fucina::gradcheck(ctx, [&](ExecContext& e) { return probe(e, up.scale(e, 3).situ(e, gate.scale(e, 3), c)); }, {&up, &gate});
}

TEST_CASE("gated, glu, splitGated and situ: bad inputs and empty tensors") {
  ExecContext ctx;
  Tensor x = Tensor::ones(ctx, {"t", "f"}, {2, 4});
  CHECK_FUCINA_ERROR(x.glu(ctx, "t").glu(ctx, "t"), InvalidArgument);  // extent 1 is odd
  CHECK_FUCINA_ERROR(x.splitGated(ctx, "f", "swish"), InvalidArgument);
  CHECK_THROWS_WITH(x.gated(ctx, x, "tanh"), Catch::Contains("silu") && Catch::Contains("quickGelu"));
  CHECK_FUCINA_ERROR(x.gated(ctx, Tensor::ones(ctx, {"t", "g"}, {2, 4}), "silu"), ShapeMismatch);
  CHECK_FUCINA_ERROR(x.gated(ctx, Tensor::ones(ctx, {"t", "f"}, {2, 3}), "silu"), ShapeMismatch);
  CHECK_FUCINA_ERROR(x.gated(ctx, Tensor::ones(ctx, {"f"}, {4}), "silu"), ShapeMismatch);  // no broadcasting
  CHECK_FUCINA_ERROR(x.situ(ctx, x, 0), InvalidArgument);
  CHECK_FUCINA_ERROR(x.situ(ctx, x, std::nan("")), InvalidArgument);
  CHECK_FUCINA_ERROR(x.glu(ctx, "zz"), ShapeMismatch);
  CHECK_FUCINA_ERROR(x.to(ctx, fucina::DType::i32).gated(ctx, x, "silu"), DTypeMismatch);
  Tensor e = Tensor::variableFromSlice(ctx, {"t", "f"}, {0, 4}, std::vector<float>{});
  Tensor y = e.gated(ctx, e, "silu").add(ctx, e.glu(ctx, "f").sumAll(ctx)).add(ctx, e.situ(ctx, e));
  CHECK(y.shape() == Extents{0, 4});
  y.sumAll(ctx).backward(ctx);
  CHECK(test::gradOf(ctx, e).empty());
}
