// crossEntropyExt and the chunked linear heads (ops/cross_entropy_ext.cpp): values against a naive
// double reference and against the unfused composition, gradcheck of every differentiable operand
// on awkward layouts, bad inputs with their codes, 1- vs 2-thread bit-identity, and the peak
// memory of the fused head against the composition.
#include "test_helpers.h"

#include <cmath>
#include <cstdio>
#include <limits>

using fucina::CrossEntropyExtOptions;
using fucina::DistillOptions;
using fucina::DType;
using fucina::ExecContext;
using fucina::ExecOptions;
using fucina::Reduction;
using fucina::Tensor;
using test::wave;

namespace {

constexpr int64_t kIgnore = -100;

// The reference of CrossEntropyExtOptions' comment, in double, over row-major [rows, C] logits.
// labels (or soft targets, rows x C) per row; returns the per-row losses and the denominator.
struct RefCe {
  std::vector<double> rows;
  double denom = 0;
  double reduce(Reduction r) const {
    double s = 0;
    for (double v : rows) s += v;
    return r == Reduction::mean ? s / denom : s;
  }
};

RefCe refCe(const std::vector<float>& x, size_t C, const std::vector<int64_t>* labels, const std::vector<float>* soft,
            const std::vector<float>& w, double s, double z) {
  RefCe out;
  const size_t R = x.size() / C;
  auto wt = [&](size_t c) { return w.empty() ? 1.0 : double(w[c]); };
  for (size_t r = 0; r < R; ++r) {
    double m = -1e300, sum = 0;
    for (size_t c = 0; c < C; ++c) m = std::max(m, double(x[r * C + c]));
    for (size_t c = 0; c < C; ++c) sum += std::exp(double(x[r * C + c]) - m);
    const double lse = m + std::log(sum);
    auto lp = [&](size_t c) { return double(x[r * C + c]) - lse; };
    double loss = 0;
    if (soft) {
      for (size_t c = 0; c < C; ++c) loss -= wt(c) * ((1 - s) * (*soft)[r * C + c] + s / double(C)) * lp(c);
      out.denom += 1;
    } else {
      const int64_t y = (*labels)[r];
      if (y == kIgnore) {
        out.rows.push_back(0);
        continue;
      }
      loss = -(1 - s) * wt(size_t(y)) * lp(size_t(y));
      for (size_t c = 0; c < C; ++c) loss -= s / double(C) * wt(c) * lp(c);
      out.denom += wt(size_t(y));
    }
    out.rows.push_back(loss + z * lse * lse);
  }
  return out;
}

void requireNear(const std::vector<float>& got, const std::vector<float>& want, double tol = 1e-5) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i);
    REQUIRE(std::fabs(double(got[i]) - want[i]) <= tol + 1e-4 * std::fabs(want[i]));
  }
}

}  // namespace

TEST_CASE("crossEntropyExt matches a naive reference: ignore_index, class weights, smoothing, z-loss, reductions") {
  ExecContext ctx(ExecOptions{.threads = 1});
  const size_t R = 5, C = 7;
  const auto xv = wave(R * C, 3, 0.2f, 0.9f);
  // The class axis first: the op lays it last itself.
  const Tensor x = Tensor::fromSlice(ctx, {"r", "c"}, {5, 7}, xv).permuteTo(ctx, {"c", "r"});
  const std::vector<int64_t> labels{3, kIgnore, 0, 6, 3};
  const Tensor y = Tensor::fromInts(ctx, {"r"}, {5}, labels, DType::i64);
  const std::vector<float> wv{0.5f, 1, 2, 0.25f, 1, 3, 1.5f};
  const Tensor w = Tensor::fromSlice(ctx, {"c"}, {7}, wv);
  for (const bool weighted : {false, true})
    for (const double s : {0.0, 0.1})
      for (const double z : {0.0, 1e-2}) {
        INFO("weighted " << weighted << " smoothing " << s << " z " << z);
        const RefCe ref = refCe(xv, C, &labels, nullptr, weighted ? wv : std::vector<float>{}, s, z);
        for (const Reduction red : {Reduction::mean, Reduction::sum, Reduction::none}) {
          const CrossEntropyExtOptions o{.reduction = red, .label_smoothing = s, .weight = weighted ? &w : nullptr, .z_loss = z};
          const Tensor l = x.crossEntropyExt(ctx, y, "c", o);
          if (red == Reduction::none) {
            CHECK(l.tags() == fucina::Tags{"r"});
            requireNear(l.toVector(), std::vector<float>(ref.rows.begin(), ref.rows.end()));
          } else {
            CHECK(l.item() == Approx(ref.reduce(red)).epsilon(1e-5));
          }
        }
      }
  // Default options are crossEntropy's (with no label at ignore_index).
  const Tensor y2 = Tensor::fromInts(ctx, {"r"}, {5}, {3, 1, 0, 6, 3});
  CHECK(x.crossEntropyExt(ctx, y2, "c").item() == Approx(x.crossEntropy(ctx, y2, "c").item()).epsilon(1e-6));
  // Every row ignored: the mean is 0/0 = NaN (torch), the sum 0.
  const Tensor none = Tensor::fromInts(ctx, {"r"}, {5}, {-100, -100, -100, -100, -100});
  CHECK(std::isnan(x.crossEntropyExt(ctx, none, "c").item()));
  CHECK(x.crossEntropyExt(ctx, none, "c", {.reduction = Reduction::sum}).item() == 0);
}

TEST_CASE("crossEntropyExt soft targets match a naive reference, size-1 axes and a custom ignore_index") {
  ExecContext ctx(ExecOptions{.threads = 1});
  const size_t R = 3, C = 5;
  const auto xv = wave(R * C, 2, 0.4f, 1.3f);
  std::vector<float> tv(R * C);
  for (size_t r = 0; r < R; ++r) {  // rows of probabilities
    double sum = 0;
    for (size_t c = 0; c < C; ++c) sum += tv[r * C + c] = 1.0f + std::sin(float(r * C + c));
    for (size_t c = 0; c < C; ++c) tv[r * C + c] = static_cast<float>(tv[r * C + c] / sum);
  }
  const Tensor x = Tensor::fromSlice(ctx, {"one", "r", "c"}, {1, 3, 5}, xv);
  const Tensor target = Tensor::fromSlice(ctx, {"one", "r", "c"}, {1, 3, 5}, tv).permuteTo(ctx, {"c", "one", "r"});
  const std::vector<float> wv{1, 2, 0.5f, 1, 3};
  const Tensor w = Tensor::fromSlice(ctx, {"c"}, {5}, wv);
  for (const double s : {0.0, 0.2}) {
    const RefCe ref = refCe(xv, C, nullptr, &tv, wv, s, 0.05);
    const CrossEntropyExtOptions o{.label_smoothing = s, .weight = &w, .z_loss = 0.05};
    CHECK(x.crossEntropyExt(ctx, target, "c", o).item() == Approx(ref.reduce(Reduction::mean)).epsilon(1e-5));
    const Tensor rows = x.crossEntropyExt(ctx, target, "c", {.reduction = Reduction::none, .label_smoothing = s, .weight = &w, .z_loss = 0.05});
    CHECK(rows.tags() == fucina::Tags{"one", "r"});
    requireNear(rows.toVector(), std::vector<float>(ref.rows.begin(), ref.rows.end()));
  }
  // A custom ignore_index.
  const Tensor y = Tensor::fromInts(ctx, {"one", "r"}, {1, 3}, {4, 7, 0});
  const std::vector<int64_t> labels{4, kIgnore, 0};
  const RefCe ref = refCe(xv, C, &labels, nullptr, {}, 0, 0);
  CHECK(x.crossEntropyExt(ctx, y, "c", {.ignore_index = 7}).item() == Approx(ref.reduce(Reduction::mean)).epsilon(1e-5));
}

TEST_CASE("crossEntropyExt passes gradcheck for logits and soft targets on views") {
  ExecContext ctx(ExecOptions{.threads = 1});
  Tensor x = Tensor::variableFromSlice(ctx, {"a", "c", "b"}, {2, 5, 3}, wave(30, 1.5f, 0.3f, 0.7f));
  Tensor t = Tensor::variableFromSlice(ctx, {"b", "a", "c"}, {3, 2, 5}, wave(30, 0.4f, 1.0f, 0.5f));
  const Tensor y = Tensor::fromInts(ctx, {"b", "a"}, {3, 2}, {0, 4, kIgnore, 2, 1, 4});
  const Tensor w = Tensor::fromSlice(ctx, {"c"}, {5}, {0.5f, 1, 2, 1.5f, 1});
  const Tensor gw = Tensor::fromSlice(ctx, {"a", "b"}, {2, 3}, wave(6, 1, 0.2f, 1.1f));
  for (const Reduction red : {Reduction::mean, Reduction::sum, Reduction::none}) {
    INFO("reduction " << int(red));
    const CrossEntropyExtOptions o{.reduction = red, .label_smoothing = 0.1, .weight = &w, .z_loss = 0.02};
    auto reduce = [&](ExecContext& c, const Tensor& l) { return red == Reduction::none ? l.mul(c, gw).sumAll(c) : l; };
    fucina::gradcheck(ctx, [&](ExecContext& c) { return reduce(c, x.permuteTo(c, {"b", "c", "a"}).crossEntropyExt(c, y, "c", o)); }, {&x});
    fucina::gradcheck(ctx, [&](ExecContext& c) { return reduce(c, x.crossEntropyExt(c, t.permuteTo(c, {"c", "a", "b"}), "c", o)); },
                      {&x, &t});
  }
  // A narrowed class axis of size 1 (loss 0 up to z-loss).
  fucina::gradcheck(ctx, [&](ExecContext& c) {
    return x.narrow(c, "c", 2, 1).crossEntropyExt(c, Tensor::fromInts(c, {"a", "b"}, {2, 3}, {0, 0, 0, 0, 0, 0}), "c", {.z_loss = 0.3});
  }, {&x});
}

TEST_CASE("crossEntropyExt is the same on 1 and 2 threads") {
  // Big enough to split over the pool: rows 300, classes 257.
  const int64_t R = 300, C = 257;
  std::vector<int64_t> labels(R);
  for (int64_t r = 0; r < R; ++r) labels[size_t(r)] = r % 7 == 0 ? kIgnore : (r * 31) % C;
  auto run = [&](int threads) {
    ExecContext ctx(ExecOptions{.threads = threads});
    Tensor x = Tensor::variable(ctx, Tensor::uniform(ctx, {"r", "c"}, {R, C}, -3, 3, 5));
    const Tensor w = Tensor::uniform(ctx, {"c"}, {C}, 0.5, 2, 6);
    const Tensor y = Tensor::fromInts(ctx, {"r"}, {R}, labels);
    Tensor l = x.crossEntropyExt(ctx, y, "c", {.label_smoothing = 0.1, .weight = &w, .z_loss = 1e-3});
    l.backward(ctx);
    std::vector<float> out = test::gradOf(ctx, x);
    out.push_back(l.item());
    return out;
  };
  CHECK(run(1) == run(2));
}

TEST_CASE("crossEntropyExt: bad inputs") {
  ExecContext ctx;
  const Tensor x = Tensor::ones(ctx, {"r", "c"}, {2, 3});
  const Tensor y = Tensor::fromInts(ctx, {"r"}, {2}, {0, 2});
  CHECK_FUCINA_ERROR(x.crossEntropyExt(ctx, Tensor::fromInts(ctx, {"r"}, {2}, {0, 3}), "c"), IndexOutOfRange);
  CHECK_FUCINA_ERROR(x.crossEntropyExt(ctx, Tensor::fromInts(ctx, {"r"}, {2}, {0, -1}), "c"), IndexOutOfRange);
  CHECK_FUCINA_ERROR(x.crossEntropyExt(ctx, Tensor::fromInts(ctx, {"r"}, {2}, {0, -100}), "c", {.ignore_index = -1}),
                     IndexOutOfRange);
  CHECK_FUCINA_ERROR(x.crossEntropyExt(ctx, Tensor::fromInts(ctx, {"q"}, {2}, {0, 1}), "c"), ShapeMismatch);
  CHECK_FUCINA_ERROR(x.crossEntropyExt(ctx, y, "class"), ShapeMismatch);
  CHECK_FUCINA_ERROR(x.crossEntropyExt(ctx, Tensor::ones(ctx, {"r", "c"}, {2, 4}), "c"), ShapeMismatch);  // soft targets
  CHECK_FUCINA_ERROR(x.crossEntropyExt(ctx, Tensor::fromInts(ctx, {"r"}, {2}, {0, 1}, DType::u8), "c"), DTypeMismatch);
  CHECK_FUCINA_ERROR(x.crossEntropyExt(ctx, Tensor::ones(ctx, {"r", "c"}, {2, 3}, DType::f64), "c"), DTypeMismatch);
  CHECK_FUCINA_ERROR(x.to(ctx, DType::f64).crossEntropyExt(ctx, y, "c"), DTypeMismatch);
  CHECK_FUCINA_ERROR(x.crossEntropyExt(ctx, y, "c", {.label_smoothing = 1.0}), InvalidArgument);
  CHECK_FUCINA_ERROR(x.crossEntropyExt(ctx, y, "c", {.z_loss = -1}), InvalidArgument);
  CHECK_FUCINA_ERROR(x.narrow(ctx, "c", 0, 0).crossEntropyExt(ctx, Tensor::fromInts(ctx, {"r"}, {2}, {-100, -100}), "c"),
                     InvalidArgument);
  const Tensor bad_w = Tensor::ones(ctx, {"c"}, {4});
  CHECK_FUCINA_ERROR(x.crossEntropyExt(ctx, y, "c", {.weight = &bad_w}), ShapeMismatch);
  const Tensor w_var = Tensor::variable(ctx, Tensor::ones(ctx, {"c"}, {3}));
  CHECK_FUCINA_ERROR(x.crossEntropyExt(ctx, y, "c", {.weight = &w_var}), UnsupportedGradient);
  // 16-bit logits compute in f32 and return their dtype.
  CHECK(x.to(ctx, DType::bf16).crossEntropyExt(ctx, y, "c").dtype() == DType::bf16);
  // Empty rows: sum is 0, mean NaN.
  const Tensor e = Tensor::ones(ctx, {"r", "c"}, {0, 3});
  CHECK(e.crossEntropyExt(ctx, Tensor::fromInts(ctx, {"r"}, {0}, std::vector<int64_t>{}), "c", {.reduction = Reduction::sum}).item() == 0);
}

// --- linearCrossEntropyExt ---------------------------------------------------------------------

TEST_CASE("linearCrossEntropyExt equals the unfused composition for any chunk size and option") {
  ExecContext ctx(ExecOptions{.threads = 1});
  // x {t, b, d} with d in the middle (a view), weight {d, v} (transposed storage), odd sizes.
  Tensor xs = Tensor::variableFromSlice(ctx, {"b", "d", "t"}, {3, 5, 7}, wave(105, 1, 0.1f, 0.37f));
  Tensor ws = Tensor::variableFromSlice(ctx, {"d", "v"}, {5, 11}, wave(55, 0.8f, 0.5f, 0.61f));
  std::vector<int64_t> lv(21);
  for (size_t i = 0; i < lv.size(); ++i) lv[i] = i % 5 == 2 ? kIgnore : int64_t(i * 4 % 11);
  const Tensor y = Tensor::fromInts(ctx, {"t", "b"}, {7, 3}, lv);
  const Tensor cw = Tensor::uniform(ctx, {"v"}, {11}, 0.5, 2, 3);
  const Tensor gy = Tensor::fromSlice(ctx, {"b", "t"}, {3, 7}, wave(21, 1, 0.7f, 0.9f));
  for (const int64_t chunk : {int64_t{1}, int64_t{4}, int64_t{21}, int64_t{1000}})
    for (const Reduction red : {Reduction::mean, Reduction::sum, Reduction::none}) {
      INFO("chunk " << chunk << " reduction " << int(red));
      const CrossEntropyExtOptions o{.reduction = red, .label_smoothing = 0.1, .weight = &cw, .z_loss = 0.01, .chunk_rows = chunk};
      auto lossOf = [&](const Tensor& l) { return red == Reduction::none ? l.mul(ctx, gy).sumAll(ctx) : l; };
      auto x = [&] { return xs.permuteTo(ctx, {"t", "d", "b"}); };  // a fresh view per graph
      const Tensor fused = x().linearCrossEntropyExt(ctx, ws, y, "d", "v", o);
      lossOf(fused).backward(ctx);
      const auto gx = test::gradOf(ctx, xs), gw = test::gradOf(ctx, ws);
      xs.zeroGrad(), ws.zeroGrad();
      const Tensor unfused = x().dot(ctx, ws, "d").crossEntropyExt(ctx, y, "v", o);
      lossOf(unfused).backward(ctx);
      CHECK(fused.tags() == unfused.tags());
      requireNear(fused.permuteTo(ctx, unfused.tags()).toVector(), unfused.toVector());
      requireNear(gx, test::gradOf(ctx, xs));
      requireNear(gw, test::gradOf(ctx, ws));
      xs.zeroGrad(), ws.zeroGrad();
    }
}

TEST_CASE("linearCrossEntropyExt passes gradcheck for the input and the weight") {
  ExecContext ctx(ExecOptions{.threads = 1});
  Tensor x = Tensor::variableFromSlice(ctx, {"r", "d"}, {5, 4}, wave(20, 1, 0.1f, 0.77f));
  Tensor w = Tensor::variableFromSlice(ctx, {"v", "d"}, {6, 4}, wave(24, 1, 0.9f, 0.53f));
  const Tensor y = Tensor::fromInts(ctx, {"r"}, {5}, {5, kIgnore, 0, 3, 3});
  const Tensor gy = Tensor::fromSlice(ctx, {"r"}, {5}, wave(5, 1, 0.2f, 1.3f));
  for (const Reduction red : {Reduction::mean, Reduction::none}) {
    const CrossEntropyExtOptions o{.reduction = red, .label_smoothing = 0.05, .z_loss = 0.1, .chunk_rows = 2};
    fucina::gradcheck(ctx, [&](ExecContext& c) {
      const Tensor l = x.linearCrossEntropyExt(c, w.permuteTo(c, {"d", "v"}), y, "d", "v", o);
      return red == Reduction::none ? l.mul(c, gy).sumAll(c) : l;
    }, {&x, &w});
  }
  // One class, one row.
  Tensor x1 = Tensor::variableFromSlice(ctx, {"r", "d"}, {1, 3}, {0.5f, -1, 2});
  Tensor w1 = Tensor::variableFromSlice(ctx, {"v", "d"}, {1, 3}, {1, 0.5f, -0.5f});
  fucina::gradcheck(ctx, [&](ExecContext& c) {
    return x1.linearCrossEntropyExt(c, w1, Tensor::fromInts(c, {"r"}, {1}, {0}), "d", "v", {.z_loss = 0.5});
  }, {&x1, &w1});
}

TEST_CASE("linearCrossEntropyExt is the same on 1 and 2 threads") {
  const int64_t R = 97, D = 33, V = 301;
  std::vector<int64_t> labels(R);
  for (int64_t r = 0; r < R; ++r) labels[size_t(r)] = r % 9 == 0 ? kIgnore : (r * 17) % V;
  auto run = [&](int threads) {
    ExecContext ctx(ExecOptions{.threads = threads});
    Tensor x = Tensor::variable(ctx, Tensor::uniform(ctx, {"r", "d"}, {R, D}, -1, 1, 7));
    Tensor w = Tensor::variable(ctx, Tensor::uniform(ctx, {"v", "d"}, {V, D}, -1, 1, 8));
    Tensor l = x.linearCrossEntropyExt(ctx, w, Tensor::fromInts(ctx, {"r"}, {R}, labels), "d", "v",
                                       {.label_smoothing = 0.1, .z_loss = 1e-3, .chunk_rows = 40});
    l.backward(ctx);
    std::vector<float> out = test::gradOf(ctx, x);
    for (float v : test::gradOf(ctx, w)) out.push_back(v);
    out.push_back(l.item());
    return out;
  };
  CHECK(run(1) == run(2));
}

TEST_CASE("linearCrossEntropyExt: bad inputs") {
  ExecContext ctx;
  const Tensor x = Tensor::ones(ctx, {"r", "d"}, {2, 3});
  const Tensor w = Tensor::ones(ctx, {"v", "d"}, {4, 3});
  const Tensor y = Tensor::fromInts(ctx, {"r"}, {2}, {0, 3});
  CHECK_FUCINA_ERROR(x.linearCrossEntropyExt(ctx, w, Tensor::fromInts(ctx, {"r"}, {2}, {0, 4}), "d", "v"), IndexOutOfRange);
  CHECK_FUCINA_ERROR(x.linearCrossEntropyExt(ctx, Tensor::ones(ctx, {"v", "d"}, {4, 2}), y, "d", "v"), ShapeMismatch);
  CHECK_FUCINA_ERROR(x.linearCrossEntropyExt(ctx, Tensor::ones(ctx, {"v", "d", "e"}, {4, 3, 1}), y, "d", "v"), ShapeMismatch);
  CHECK_FUCINA_ERROR(x.linearCrossEntropyExt(ctx, w, y, "e", "v"), ShapeMismatch);
  CHECK_FUCINA_ERROR(x.linearCrossEntropyExt(ctx, w, Tensor::fromInts(ctx, {"q"}, {2}, {0, 1}), "d", "v"), ShapeMismatch);
  CHECK_FUCINA_ERROR(x.linearCrossEntropyExt(ctx, w, Tensor::ones(ctx, {"r", "v"}, {2, 4}), "d", "v"), DTypeMismatch);
  CHECK_FUCINA_ERROR(x.to(ctx, DType::f64).linearCrossEntropyExt(ctx, w, y, "d", "v"), DTypeMismatch);
  CHECK_FUCINA_ERROR(x.linearCrossEntropyExt(ctx, w, y, "d", "v", {.chunk_rows = 0}), InvalidArgument);
  CHECK_FUCINA_ERROR(x.linearCrossEntropyExt(ctx, w.narrow(ctx, "v", 0, 0), Tensor::fromInts(ctx, {"r"}, {2}, {-100, -100}), "d", "v"),
                     InvalidArgument);
}

TEST_CASE("linearCrossEntropyExt's peak memory is well below the unfused composition's") {
  // A language model's head: 2048 rows, d 256, vocab 8192 (f32 logits: 64 MiB).
  const int64_t R = 2048, D = 256, V = 8192;
  ExecContext ctx(ExecOptions{.threads = 2});
  Tensor x = Tensor::variable(ctx, Tensor::uniform(ctx, {"r", "d"}, {R, D}, -1, 1, 11));
  Tensor w = Tensor::variable(ctx, Tensor::uniform(ctx, {"v", "d"}, {V, D}, -0.1, 0.1, 12));
  std::vector<int64_t> lv(R);
  for (int64_t r = 0; r < R; ++r) lv[size_t(r)] = r % 10 == 9 ? kIgnore : (r * 7919) % V;
  const Tensor y = Tensor::fromInts(ctx, {"r"}, {R}, lv);
  const CrossEntropyExtOptions o{.label_smoothing = 0.1, .z_loss = 1e-4, .chunk_rows = 256};
  // Peak live bytes above what lives before (the inputs), over forward and backward (the
  // gradients of x and w included).
  auto measure = [&](auto&& loss, float* value) {
    ctx.trimCache();
    const size_t base = ctx.memory().live_bytes;
    ctx.resetPeak();
    {
      const Tensor l = loss();
      *value = l.item();
      l.backward(ctx);
    }
    return ctx.memory().peak_bytes - base;
  };
  float unfused_loss = 0, fused_loss = 0;
  const size_t unfused = measure([&] { return x.dot(ctx, w, "d").crossEntropyExt(ctx, y, "v", o); }, &unfused_loss);
  const auto gx = test::gradOf(ctx, x), gw = test::gradOf(ctx, w);
  x.zeroGrad(), w.zeroGrad();
  const size_t fused = measure([&] { return x.linearCrossEntropyExt(ctx, w, y, "d", "v", o); }, &fused_loss);
  std::printf("linearCrossEntropyExt %lldx%lld·%lld: peak %.1f MiB fused vs %.1f MiB unfused (ratio %.3f)\n",
              static_cast<long long>(R), static_cast<long long>(D), static_cast<long long>(V), double(fused) / 1048576.0,
              double(unfused) / 1048576.0, double(fused) / double(unfused));
  CHECK(fused_loss == Approx(unfused_loss).epsilon(1e-5));
  requireNear(test::gradOf(ctx, x), gx, 1e-6);
  requireNear(test::gradOf(ctx, w), gw, 1e-6);
  // The logits alone are R·V·4 bytes; the fused head holds one chunk of them at a time.
  CHECK(unfused > size_t(2 * R * V * 4));
  CHECK(fused * 5 < unfused);
}

// --- linearDistillExt --------------------------------------------------------------------------

namespace {

// The composition of DistillOptions' comment, in double, from row-major student [R, V] logits.
double refDistill(const std::vector<float>& s, const std::vector<float>& t, size_t V, const DistillOptions& o,
                  const std::vector<int64_t>& labels, std::vector<double>* rows) {
  const size_t R = s.size() / V;
  const double T = o.temperature;
  auto lse = [&](const std::vector<float>& v, size_t r, double k) {
    double m = -1e300, sum = 0;
    for (size_t c = 0; c < V; ++c) m = std::max(m, k * v[r * V + c]);
    for (size_t c = 0; c < V; ++c) sum += std::exp(k * v[r * V + c] - m);
    return m + std::log(sum);
  };
  double kd_sum = 0, ce_sum = 0, count = 0;
  for (size_t r = 0; r < R; ++r) {
    const double ls = lse(s, r, 1 / T), lt = o.teacher_probs ? 0 : lse(t, r, 1 / T);
    double kd = 0;
    for (size_t c = 0; c < V; ++c) {
      const double lp = o.teacher_probs ? std::log(double(t[r * V + c])) : t[r * V + c] / T - lt;
      const double p = std::exp(lp);
      if (p > 0) kd += p * (lp - (s[r * V + c] / T - ls));
    }
    kd *= T * T;
    double ce = 0;
    if (o.alpha > 0 && labels[r] != o.ignore_index) ce = lse(s, r, 1) - s[r * V + size_t(labels[r])], count += 1;
    kd_sum += kd, ce_sum += ce;
    rows->push_back((1 - o.alpha) * kd + o.alpha * ce);
  }
  if (o.reduction == Reduction::mean) return (1 - o.alpha) * kd_sum / double(R) + (o.alpha > 0 ? o.alpha * ce_sum / count : 0);
  return (1 - o.alpha) * kd_sum + o.alpha * ce_sum;
}

}  // namespace

TEST_CASE("linearDistillExt matches a naive reference: logits or probabilities, temperature, alpha, reductions") {
  ExecContext ctx(ExecOptions{.threads = 1});
  const int64_t R = 5, D = 3, V = 7;
  const Tensor x = Tensor::fromSlice(ctx, {"r", "d"}, {R, D}, wave(15, 1, 0.3f, 0.8f));
  const Tensor w = Tensor::fromSlice(ctx, {"d", "v"}, {D, V}, wave(21, 1.2f, 0.1f, 0.45f));
  const std::vector<float> s = x.dot(ctx, w, "d").permuteTo(ctx, {"r", "v"}).toVector();
  const std::vector<float> tl = wave(35, 2, 0.9f, 0.33f);
  const Tensor teacher_logits = Tensor::fromSlice(ctx, {"r", "v"}, {R, V}, tl);
  const Tensor teacher_probs = teacher_logits.softmax(ctx, "v").permuteTo(ctx, {"v", "r"});
  const std::vector<float> tp = teacher_probs.permuteTo(ctx, {"r", "v"}).toVector();
  const std::vector<int64_t> lv{1, kIgnore, 6, 0, 6};
  const Tensor y = Tensor::fromInts(ctx, {"r"}, {R}, lv);
  for (const bool probs : {false, true})
    for (const double T : {1.0, 2.5})
      for (const double alpha : {0.0, 0.3})
        for (const Reduction red : {Reduction::mean, Reduction::sum, Reduction::none}) {
          INFO("probs " << probs << " T " << T << " alpha " << alpha << " reduction " << int(red));
          const DistillOptions o{.temperature = T, .alpha = alpha, .labels = &y, .teacher_probs = probs, .reduction = red, .chunk_rows = 2};
          std::vector<double> rows;
          const double want = refDistill(s, probs ? tp : tl, V, o, lv, &rows);
          const Tensor l = x.linearDistillExt(ctx, w, probs ? teacher_probs : teacher_logits, "d", "v", o);
          if (red == Reduction::none) requireNear(l.toVector(), std::vector<float>(rows.begin(), rows.end()));
          else CHECK(l.item() == Approx(want).epsilon(1e-5));
        }
}

TEST_CASE("linearDistillExt passes gradcheck for the input and the weight") {
  ExecContext ctx(ExecOptions{.threads = 1});
  Tensor x = Tensor::variableFromSlice(ctx, {"b", "t", "d"}, {2, 3, 4}, wave(24, 1, 0.1f, 0.77f));
  Tensor w = Tensor::variableFromSlice(ctx, {"v", "d"}, {5, 4}, wave(20, 1, 0.9f, 0.53f));
  const Tensor teacher = Tensor::fromSlice(ctx, {"v", "t", "b"}, {5, 3, 2}, wave(30, 2, 0.4f, 0.61f));
  const Tensor y = Tensor::fromInts(ctx, {"t", "b"}, {3, 2}, {4, 0, kIgnore, 2, 2, 1});
  const Tensor gy = Tensor::fromSlice(ctx, {"b", "t"}, {2, 3}, wave(6, 1, 0.2f, 1.3f));
  for (const Reduction red : {Reduction::mean, Reduction::sum, Reduction::none}) {
    const DistillOptions o{.temperature = 2, .alpha = 0.4, .labels = &y, .reduction = red, .chunk_rows = 4};
    fucina::gradcheck(ctx, [&](ExecContext& c) {
      const Tensor l = x.permuteTo(c, {"d", "b", "t"}).linearDistillExt(c, w, teacher, "d", "v", o);
      return red == Reduction::none ? l.mul(c, gy).sumAll(c) : l;
    }, {&x, &w});
  }
  fucina::gradcheck(ctx, [&](ExecContext& c) {
    return x.linearDistillExt(c, w, teacher.softmax(c, "v"), "d", "v", {.temperature = 0.5, .teacher_probs = true, .chunk_rows = 1});
  }, {&x, &w});
}

TEST_CASE("linearDistillExt is the same on 1 and 2 threads") {
  const int64_t R = 97, D = 33, V = 301;
  std::vector<int64_t> labels(R);
  for (int64_t r = 0; r < R; ++r) labels[size_t(r)] = r % 9 == 0 ? kIgnore : (r * 17) % V;
  auto run = [&](int threads) {
    ExecContext ctx(ExecOptions{.threads = threads});
    Tensor x = Tensor::variable(ctx, Tensor::uniform(ctx, {"r", "d"}, {R, D}, -1, 1, 7));
    Tensor w = Tensor::variable(ctx, Tensor::uniform(ctx, {"v", "d"}, {V, D}, -1, 1, 8));
    const Tensor teacher = Tensor::uniform(ctx, {"r", "v"}, {R, V}, -3, 3, 9);
    const Tensor y = Tensor::fromInts(ctx, {"r"}, {R}, labels);
    Tensor l = x.linearDistillExt(ctx, w, teacher, "d", "v", {.temperature = 2, .alpha = 0.25, .labels = &y, .chunk_rows = 40});
    l.backward(ctx);
    std::vector<float> out = test::gradOf(ctx, x);
    for (float v : test::gradOf(ctx, w)) out.push_back(v);
    out.push_back(l.item());
    return out;
  };
  CHECK(run(1) == run(2));
}

TEST_CASE("linearDistillExt: bad inputs") {
  ExecContext ctx;
  const Tensor x = Tensor::ones(ctx, {"r", "d"}, {2, 3});
  const Tensor w = Tensor::ones(ctx, {"v", "d"}, {4, 3});
  const Tensor t = Tensor::ones(ctx, {"r", "v"}, {2, 4});
  const Tensor y = Tensor::fromInts(ctx, {"r"}, {2}, {0, 4});
  CHECK_FUCINA_ERROR(x.linearDistillExt(ctx, w, t, "d", "v", {.alpha = 0.5}), InvalidArgument);
  CHECK_FUCINA_ERROR(x.linearDistillExt(ctx, w, t, "d", "v", {.alpha = 0.5, .labels = &y}), IndexOutOfRange);
  CHECK_FUCINA_ERROR(x.linearDistillExt(ctx, w, t, "d", "v", {.alpha = 1.5}), InvalidArgument);
  CHECK_FUCINA_ERROR(x.linearDistillExt(ctx, w, t, "d", "v", {.temperature = 0}), InvalidArgument);
  CHECK_FUCINA_ERROR(x.linearDistillExt(ctx, w, Tensor::ones(ctx, {"r", "v"}, {2, 5}), "d", "v"), ShapeMismatch);
  CHECK_FUCINA_ERROR(x.linearDistillExt(ctx, w, Tensor::variable(ctx, t), "d", "v"), UnsupportedGradient);
  CHECK_FUCINA_ERROR(x.linearDistillExt(ctx, w, t.to(ctx, DType::f64), "d", "v"), DTypeMismatch);
}
