// Optimizers, gradient clipping and learning-rate schedules (src/fucina/optim) against values
// worked out by hand (SGD: the arithmetic is written out below) or with the torch.optim update
// rules evaluated in double (Adam/AdamW; the numbers are listed with the rule that gives them).
#include <cmath>
#include <numbers>

#include "test_helpers.h"

using fucina::ExecContext;
using fucina::ExecOptions;
using fucina::Tensor;
using fucina::internal::RawTensor;
using Floats = std::vector<float>;
namespace optim = fucina::optim;

namespace {

// Every case: p0 = [1, -2], gradients g1 = [0.5, -1], g2 = [0.25, 0.5], g3 = [-1, 2].
const Floats kP0 = {1.0f, -2.0f};
const std::vector<Floats> kGrads = {{0.5f, -1.0f}, {0.25f, 0.5f}, {-1.0f, 2.0f}};

Tensor param(ExecContext& ctx) { return Tensor::variableFromSlice(ctx, {"d"}, {2}, kP0); }

void setGrad(ExecContext& ctx, const Tensor& p, const Floats& g) {
  p.gradState()->setGrad(RawTensor::fromSlice(ctx, p.tags(), p.shape(), g));
}

// Runs three steps of opt on a fresh parameter and returns the parameter after each.
std::vector<Floats> threeSteps(ExecContext& ctx, optim::Optimizer& opt) {
  Tensor p = param(ctx);
  opt.add(p);
  std::vector<Floats> out;
  for (const Floats& g : kGrads) {
    setGrad(ctx, p, g);
    opt.step(ctx);
    out.push_back(p.toVector());
  }
  return out;
}

void checkSteps(const std::vector<Floats>& got, const std::vector<Floats>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t s = 0; s < want.size(); ++s) {
    INFO("step " << s + 1);
    REQUIRE(got[s].size() == want[s].size());
    for (size_t i = 0; i < want[s].size(); ++i) CHECK(got[s][i] == Approx(want[s][i]).epsilon(1e-5));
  }
}

}  // namespace

TEST_CASE("SGD: three plain steps", "[optim]") {
  ExecContext ctx(ExecOptions{.threads = 1});
  optim::Sgd sgd(optim::SgdOptions{.lr = 0.1});
  // p -= 0.1 * g
  checkSteps(threeSteps(ctx, sgd), {{1 - 0.05f, -2 + 0.1f},
                                    {0.95f - 0.025f, -1.9f - 0.05f},
                                    {0.925f + 0.1f, -1.95f - 0.2f}});
  CHECK(sgd.stepsOf(0) == 3);
  CHECK(sgd.params().size() == 1);
}

TEST_CASE("SGD: momentum and Nesterov", "[optim]") {
  ExecContext ctx(ExecOptions{.threads = 1});
  SECTION("momentum 0.9") {
    optim::Sgd sgd(optim::SgdOptions{.lr = 0.1, .momentum = 0.9});
    // buf1 = g1 = [0.5, -1]; buf2 = 0.9 buf1 + g2 = [0.7, -0.4]; buf3 = 0.9 buf2 + g3 = [-0.37, 1.64]
    checkSteps(threeSteps(ctx, sgd), {{1 - 0.05f, -2 + 0.1f},
                                      {0.95f - 0.07f, -1.9f + 0.04f},
                                      {0.88f + 0.037f, -1.86f - 0.164f}});
  }
  SECTION("Nesterov") {
    optim::Sgd sgd(optim::SgdOptions{.lr = 0.1, .momentum = 0.9, .nesterov = true});
    // d = g + 0.9 buf: d1 = 1.9 g1 = [0.95, -1.9]; d2 = [0.25 + 0.63, 0.5 - 0.36] = [0.88, 0.14];
    // d3 = [-1 - 0.333, 2 + 1.476] = [-1.333, 3.476]
    checkSteps(threeSteps(ctx, sgd), {{1 - 0.095f, -2 + 0.19f},
                                      {0.905f - 0.088f, -1.81f - 0.014f},
                                      {0.817f + 0.1333f, -1.824f - 0.3476f}});
  }
  SECTION("dampening 0.5") {
    optim::Sgd sgd(optim::SgdOptions{.lr = 0.1, .momentum = 0.9, .dampening = 0.5});
    // buf1 = g1 (undamped, as torch); buf2 = 0.9 buf1 + 0.5 g2 = [0.575, -0.65]
    auto got = threeSteps(ctx, sgd);
    CHECK(got[1][0] == Approx(0.95f - 0.0575f));
    CHECK(got[1][1] == Approx(-1.9f + 0.065f));
  }
}

TEST_CASE("SGD: weight decay is L2 added to the gradient", "[optim]") {
  ExecContext ctx(ExecOptions{.threads = 1});
  SECTION("no momentum") {
    optim::Sgd sgd(optim::SgdOptions{.lr = 0.1, .weight_decay = 0.1});
    // d1 = g1 + 0.1 p0 = [0.6, -1.2] -> p1 = [0.94, -1.88]
    // d2 = g2 + 0.1 p1 = [0.344, 0.312] -> p2 = [0.9056, -1.9112]
    // d3 = g3 + 0.1 p2 = [-0.90944, 1.80888] -> p3 = [0.996544, -2.092088]
    checkSteps(threeSteps(ctx, sgd), {{0.94f, -1.88f}, {0.9056f, -1.9112f}, {0.996544f, -2.092088f}});
  }
  SECTION("with momentum") {
    optim::Sgd sgd(optim::SgdOptions{.lr = 0.1, .momentum = 0.9, .weight_decay = 0.1});
    // buf1 = [0.6, -1.2]; buf2 = 0.9 buf1 + [0.344, 0.312] = [0.884, -0.768] -> p2 = [0.8516, -1.8032]
    // buf3 = 0.9 buf2 + (g3 + 0.1 p2 = [-0.91484, 1.81968]) = [-0.11924, 1.12848] -> p3
    checkSteps(threeSteps(ctx, sgd), {{0.94f, -1.88f}, {0.8516f, -1.8032f}, {0.863524f, -1.916048f}});
  }
}

TEST_CASE("Adam: three steps with bias correction", "[optim]") {
  ExecContext ctx(ExecOptions{.threads = 1});
  optim::Adam adam(optim::AdamOptions{.lr = 0.1});
  auto got = threeSteps(ctx, adam);
  // Step 1: m_hat = g, v_hat = g^2, so each element moves by lr * sign(g) (eps aside).
  CHECK(got[0][0] == Approx(1 - 0.1f).epsilon(1e-6));
  CHECK(got[0][1] == Approx(-2 + 0.1f).epsilon(1e-6));
  // m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2; p -= lr/(1-b1^t) * m / (sqrt(v)/sqrt(1-b2^t) + eps)
  // Step 2, element 0: m = 0.9*0.05 + 0.1*0.25 = 0.07, v = 0.999*0.00025 + 0.001*0.0625 = 0.00031225
  //   p = 0.9 - 0.1/0.19 * 0.07 / (sqrt(0.00031225)/sqrt(0.001999) + 1e-8) = 0.80678204
  checkSteps(got, {{0.900000002f, -1.9f},
                   {0.80678204f, -1.8733663f},
                   {0.827417743f, -1.91909948f}});
}

TEST_CASE("Adam L2 weight decay and AdamW decoupled decay differ", "[optim]") {
  ExecContext ctx(ExecOptions{.threads = 1});
  optim::Adam adam(optim::AdamOptions{.lr = 0.1, .weight_decay = 0.1});
  optim::AdamW adamw(optim::AdamOptions{.lr = 0.1, .weight_decay = 0.1});
  auto l2 = threeSteps(ctx, adam);
  auto decoupled = threeSteps(ctx, adamw);
  // Adam: g += 0.1 p before the moments. Step 1 is still lr * sign(g + 0.1 p).
  checkSteps(l2, {{0.900000002f, -1.9f}, {0.805009766f, -1.85374726f}, {0.812098261f, -1.88636312f}});
  // AdamW: p *= 1 - 0.1*0.1 first (1 -> 0.99, -2 -> -1.98), then the plain Adam step.
  checkSteps(decoupled, {{0.99f - 0.1f, -1.98f + 0.1f}, {0.78788204f, -1.8345663f}, {0.800638922f, -1.86195381f}});
  CHECK(l2[2][0] != Approx(decoupled[2][0]).epsilon(1e-4));
  // AdamW's default weight decay is 0.01, Adam's 0.
  CHECK(optim::AdamW().options().weight_decay == 0.01);
  CHECK(optim::Adam().options().weight_decay == 0);
}

TEST_CASE("parameters without a gradient are skipped", "[optim]") {
  ExecContext ctx(ExecOptions{.threads = 1});
  Tensor a = param(ctx), b = param(ctx);
  optim::Adam adam(std::vector<Tensor>{a, b}, optim::AdamOptions{.lr = 0.1});
  setGrad(ctx, a, kGrads[0]);
  adam.step(ctx);
  CHECK(b.toVector() == kP0);
  CHECK(adam.stepsOf(0) == 1);
  CHECK(adam.stepsOf(1) == 0);
  // b's first update is a first Adam step (its own bias correction): lr * sign(g).
  setGrad(ctx, b, kGrads[0]);
  adam.step(ctx);
  CHECK(adam.stepsOf(0) == 2);
  CHECK(adam.stepsOf(1) == 1);
  CHECK(b.toVector()[0] == Approx(0.9f).epsilon(1e-6));
  CHECK(b.toVector()[1] == Approx(-1.9f).epsilon(1e-6));
}

TEST_CASE("zeroGrad drops every registered gradient", "[optim]") {
  ExecContext ctx(ExecOptions{.threads = 1});
  Tensor a = param(ctx), b = param(ctx);
  optim::Sgd sgd(std::vector<Tensor>{a, b}, optim::SgdOptions{.lr = 0.1});
  a.mul(ctx, b).sumAll(ctx).backward(ctx);
  REQUIRE(a.gradState()->hasGrad());
  REQUIRE(b.gradState()->hasGrad());
  sgd.zeroGrad();
  CHECK_FALSE(a.gradState()->hasGrad());
  CHECK_FALSE(b.gradState()->hasGrad());
  sgd.step(ctx);  // nothing to do
  CHECK(a.toVector() == kP0);
}

TEST_CASE("OptimizerSet fans step and zeroGrad out", "[optim]") {
  ExecContext ctx(ExecOptions{.threads = 1});
  Tensor a = param(ctx), b = param(ctx);
  optim::OptimizerSet set;
  auto& sgd = set.emplace<optim::Sgd>(optim::SgdOptions{.lr = 0.1});
  optim::Adam adam(optim::AdamOptions{.lr = 0.1});
  set.add(adam);  // borrowed
  set.addParams(sgd, std::vector<Tensor>{a});
  set.addParams(adam, std::vector<Tensor>{b});
  CHECK(set.size() == 2);
  CHECK(set.params().size() == 2);
  setGrad(ctx, a, kGrads[0]);
  setGrad(ctx, b, kGrads[0]);
  set.step(ctx);
  CHECK(a.toVector()[0] == Approx(0.95f));   // SGD: 1 - 0.1 * 0.5
  CHECK(b.toVector()[0] == Approx(0.9f));    // Adam: 1 - 0.1 * sign(0.5)
  set.zeroGrad();
  CHECK_FALSE(a.gradState()->hasGrad());
  CHECK_FALSE(b.gradState()->hasGrad());
  set.setLr(0.5);
  CHECK(sgd.lr() == 0.5);
  CHECK(adam.lr() == 0.5);
  // A parameter may belong to one optimizer of the set only.
  CHECK_FUCINA_ERROR(set.addParams(adam, std::vector<Tensor>{a}), InvalidArgument);
  optim::Sgd other(std::vector<Tensor>{a});
  CHECK_FUCINA_ERROR(set.add(other), InvalidArgument);
  CHECK_FUCINA_ERROR(set.add(adam), InvalidArgument);  // already in the set
  optim::Sgd outside;
  CHECK_FUCINA_ERROR(set.addParams(outside, std::vector<Tensor>{param(ctx)}), InvalidArgument);
}

TEST_CASE("clipGradNorm: global 2-norm, clips only above max_norm", "[optim]") {
  ExecContext ctx(ExecOptions{.threads = 1});
  Tensor a = param(ctx);
  Tensor b = Tensor::variableFromSlice(ctx, {"e"}, {1}, {5});
  Tensor no_grad = param(ctx);
  Tensor constant = Tensor::fromSlice(ctx, {"d"}, {2}, {1, 1});
  std::vector<Tensor> ps = {a, b, no_grad, constant};
  auto reset = [&] {
    setGrad(ctx, a, {3, 4});
    setGrad(ctx, b, {12});
  };
  reset();
  // sqrt(9 + 16 + 144) = 13: at or below max_norm nothing changes.
  CHECK(optim::clipGradNorm(ctx, ps, 13) == Approx(13.0).epsilon(1e-12));
  CHECK(test::gradOf(ctx, a) == Floats{3, 4});
  CHECK(optim::clipGradNorm(ctx, ps, 100) == Approx(13.0));
  CHECK(test::gradOf(ctx, b) == Floats{12});
  // Above: every gradient times max_norm / (13 + 1e-6), through setGrad (earlier views go stale).
  std::optional<Tensor> view = a.gradView(ctx);
  CHECK(optim::clipGradNorm(ctx, ps, 6.5) == Approx(13.0));
  const double k = 6.5 / (13 + 1e-6);
  Floats ga = test::gradOf(ctx, a), gb = test::gradOf(ctx, b);
  CHECK(ga[0] == Approx(3 * k).epsilon(1e-6));
  CHECK(ga[1] == Approx(4 * k).epsilon(1e-6));
  CHECK(gb[0] == Approx(12 * k).epsilon(1e-6));
  CHECK(view->toVector() == Floats{3, 4});
  CHECK_FALSE(no_grad.gradState()->hasGrad());
  // The clipped norm is max_norm (to f32 precision).
  CHECK(optim::clipGradNorm(ctx, ps, 100) == Approx(6.5).epsilon(1e-6));
  // A gradient that is a broadcast view (the VJP of sumAll) is read correctly.
  Tensor c = param(ctx);
  c.sumAll(ctx).backward(ctx);
  CHECK(optim::clipGradNorm(ctx, std::vector<Tensor>{c}, 1.0) == Approx(std::sqrt(2.0)));
  CHECK(test::gradOf(ctx, c)[0] == Approx(1 / (std::sqrt(2.0) + 1e-6)));
  CHECK_FUCINA_ERROR(optim::clipGradNorm(ctx, ps, -1), InvalidArgument);
  CHECK(optim::clipGradNorm(ctx, std::vector<Tensor>{}, 1) == 0);
}

TEST_CASE("clipGradNormTensor: clipGradNorm's values, the norm as a tensor on the gradients' device", "[optim]") {
  for (fucina::Backend backend : {fucina::Backend::cpu, fucina::Backend::reference}) {
    ExecContext ctx(ExecOptions{.threads = 1, .backend = backend});
    Tensor a = param(ctx), b = Tensor::variableFromSlice(ctx, {"e"}, {1}, {5});
    std::vector<Tensor> ps = {a, b};
    setGrad(ctx, a, {3, 4});
    setGrad(ctx, b, {12});
    Tensor kept = optim::clipGradNormTensor(ctx, ps, 13);  // not above: the values stay
    CHECK(kept.rank() == 0);
    CHECK(kept.item() == 13);
    CHECK(test::gradOf(ctx, a) == Floats{3, 4});
    CHECK(optim::clipGradNormTensor(ctx, ps, 6.5).item() == 13);
    Floats clipped = test::gradOf(ctx, a);
    setGrad(ctx, a, {3, 4});
    setGrad(ctx, b, {12});
    optim::clipGradNorm(ctx, ps, 6.5);
    CHECK(test::gradOf(ctx, a) == clipped);  // bit for bit
    CHECK(optim::clipGradNormTensor(ctx, std::vector<Tensor>{}, 1).item() == 0);
    CHECK_FUCINA_ERROR(optim::clipGradNormTensor(ctx, ps, std::nan("")), InvalidArgument);
  }
}

TEST_CASE("schedules at their boundaries", "[optim]") {
  using optim::cosineDecay;
  using optim::linearWarmup;
  CHECK(linearWarmup(0, 10, 0.5) == 0);
  CHECK(linearWarmup(5, 10, 0.5) == Approx(0.25));
  CHECK(linearWarmup(10, 10, 0.5) == 0.5);  // warm-up end
  CHECK(linearWarmup(50, 10, 0.5) == 0.5);
  CHECK(linearWarmup(0, 0, 0.5) == 0.5);    // no warm-up
  CHECK(cosineDecay(0, 100, 1.0, 0.1) == Approx(1.0));
  CHECK(cosineDecay(50, 100, 1.0, 0.1) == Approx(0.55));  // 0.1 + 0.9 * (1 + cos(pi/2)) / 2
  CHECK(cosineDecay(25, 100, 1.0) == Approx((1 + std::cos(std::numbers::pi / 4)) / 2));
  CHECK(cosineDecay(100, 100, 1.0, 0.1) == Approx(0.1));  // total
  CHECK(cosineDecay(150, 100, 1.0, 0.1) == Approx(0.1));  // held after total
  optim::WarmupCosine sched(1.0, 10, 110, 0.0);
  CHECK(sched(0) == 0);
  CHECK(sched(5) == Approx(0.5));
  CHECK(sched(10) == Approx(1.0));   // warm-up end = cosine start
  CHECK(sched(60) == Approx(0.5));   // half-way through the decay
  CHECK(sched(110) == Approx(0.0).margin(1e-12));
  CHECK_FUCINA_ERROR(linearWarmup(-1, 10, 0.5), InvalidArgument);
  CHECK_FUCINA_ERROR(linearWarmup(0, -1, 0.5), InvalidArgument);
  CHECK_FUCINA_ERROR(cosineDecay(0, 0, 1.0), InvalidArgument);
  CHECK_FUCINA_ERROR(cosineDecay(0, 10, -1.0), InvalidArgument);
  CHECK_FUCINA_ERROR(optim::WarmupCosine(1.0, 10, 10), InvalidArgument);
}

TEST_CASE("bad options and parameters are InvalidArgument naming them", "[optim]") {
  using Catch::Matchers::Contains;
  ExecContext ctx(ExecOptions{.threads = 1});
  auto message = [](auto&& make) -> std::string {
    try {
      make();
    } catch (const fucina::Error& e) {
      CHECK(e.code() == fucina::ErrorCode::InvalidArgument);
      return e.what();
    }
    FAIL("no error");
    return "";
  };
  CHECK_THAT(message([] { optim::Sgd(optim::SgdOptions{.lr = -1}); }), Contains("lr"));
  CHECK_THAT(message([] { optim::Sgd(optim::SgdOptions{.momentum = -0.5}); }), Contains("momentum"));
  CHECK_THAT(message([] { optim::Sgd(optim::SgdOptions{.weight_decay = -1}); }), Contains("weight_decay"));
  CHECK_THAT(message([] { optim::Sgd(optim::SgdOptions{.nesterov = true}); }), Contains("nesterov"));
  CHECK_THAT(message([] { optim::Sgd(optim::SgdOptions{.momentum = 0.9, .dampening = 0.1, .nesterov = true}); }),
             Contains("nesterov"));
  CHECK_THAT(message([] { optim::Adam(optim::AdamOptions{.beta1 = 1.0}); }), Contains("beta1"));
  CHECK_THAT(message([] { optim::Adam(optim::AdamOptions{.beta2 = -0.1}); }), Contains("beta2"));
  CHECK_THAT(message([] { optim::AdamW(optim::AdamOptions{.eps = -1}); }), Contains("eps"));
  CHECK_THAT(message([] { optim::AdamW(optim::AdamOptions{.lr = NAN}); }), Contains("lr"));
  CHECK_THAT(message([] { optim::Adam(optim::AdamOptions{.weight_decay = -0.1}); }), Contains("weight_decay"));
  optim::Sgd sgd;
  CHECK_FUCINA_ERROR(sgd.setLr(-0.1), InvalidArgument);
  CHECK_FUCINA_ERROR(sgd.add(Tensor::fromSlice(ctx, {"d"}, {2}, {1, 2})), InvalidArgument);  // constant
  Tensor p = param(ctx);
  CHECK_FUCINA_ERROR(sgd.add(p.scale(ctx, 2)), InvalidArgument);                             // not a leaf
  CHECK_FUCINA_ERROR(sgd.add(Tensor()), InvalidArgument);
  sgd.add(p);
  CHECK_FUCINA_ERROR(sgd.add(p), InvalidArgument);                                           // twice
  // A gradient of the wrong shape (setGrad is unchecked) is caught at step.
  p.gradState()->setGrad(RawTensor::fromSlice(ctx, {"d"}, {3}, Floats{1, 2, 3}));
  CHECK_FUCINA_ERROR(sgd.step(ctx), ShapeMismatch);
  // A disposed parameter.
  p.zeroGrad();
  p.dispose();
  CHECK_FUCINA_ERROR(sgd.step(ctx), TensorReleased);
}

namespace {

// Least squares on a fixed batch: y = x . w + b with w* = [2, -3], b* = 0.5. Returns (first, last) loss.
std::pair<float, float> train(ExecContext& ctx, optim::Optimizer& opt, int steps) {
  Tensor x = Tensor::fromSlice(ctx, {"batch", "in"}, {4, 2}, {1, 0, 0, 1, 1, 1, -1, 2});
  Tensor y = Tensor::fromSlice(ctx, {"batch"}, {4}, {2.5f, -2.5f, -0.5f, -7.5f});
  Tensor w = Tensor::variableFromSlice(ctx, {"in"}, {2}, {0, 0});
  Tensor b = Tensor::variableFromSlice(ctx, {}, {}, {0});
  opt.add(w);
  opt.add(b);
  float first = 0, last = 0;
  for (int s = 0; s < steps; ++s) {
    fucina::ExecScope scope(ctx);
    Tensor err = x.dot(ctx, w, "in").add(ctx, b).sub(ctx, y);
    Tensor loss = err.mul(ctx, err).meanAll(ctx);
    opt.zeroGrad();
    loss.backward(ctx);
    opt.step(ctx);
    (s == 0 ? first : last) = loss.item();
  }
  return {first, last};
}

}  // namespace

TEST_CASE("a tiny model trains with each optimizer", "[optim]") {
  ExecContext ctx(ExecOptions{.threads = 1});
  SECTION("SGD") {
    optim::Sgd opt(optim::SgdOptions{.lr = 0.05});
    auto [first, last] = train(ctx, opt, 200);
    CHECK(last < 0.01f * first);
  }
  SECTION("SGD Nesterov") {
    optim::Sgd opt(optim::SgdOptions{.lr = 0.02, .momentum = 0.9, .nesterov = true, .weight_decay = 1e-4});
    auto [first, last] = train(ctx, opt, 200);
    CHECK(last < 0.01f * first);
  }
  SECTION("Adam") {
    optim::Adam opt(optim::AdamOptions{.lr = 0.1});
    auto [first, last] = train(ctx, opt, 200);
    CHECK(last < 0.01f * first);
  }
  SECTION("AdamW with a warm-up cosine schedule and clipping") {
    optim::AdamW opt(optim::AdamOptions{.lr = 0.1, .weight_decay = 1e-3});
    optim::WarmupCosine sched(0.1, 10, 200, 0.001);
    Tensor x = Tensor::fromSlice(ctx, {"batch", "in"}, {4, 2}, {1, 0, 0, 1, 1, 1, -1, 2});
    Tensor y = Tensor::fromSlice(ctx, {"batch"}, {4}, {2.5f, -2.5f, -0.5f, -7.5f});
    Tensor w = Tensor::variableFromSlice(ctx, {"in"}, {2}, {0, 0});
    opt.add(w);
    float first = 0, last = 0;
    for (int s = 0; s < 200; ++s) {
      Tensor err = x.dot(ctx, w, "in").subScalar(ctx, 0.0).sub(ctx, y);
      Tensor loss = err.mul(ctx, err).meanAll(ctx);
      opt.zeroGrad();
      loss.backward(ctx);
      optim::clipGradNorm(ctx, opt.params(), 5.0);
      opt.setLr(sched(s));
      opt.step(ctx);
      (s == 0 ? first : last) = loss.item();
    }
    CHECK(last < 0.2f * first);
  }
}

TEST_CASE("updates build no graph and allocate only their state once", "[optim]") {
  ExecContext ctx(ExecOptions{.threads = 1});
  Tensor x = Tensor::fromSlice(ctx, {"batch", "in"}, {2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor w = Tensor::variableFromSlice(ctx, {"in"}, {3}, {0.1f, -0.2f, 0.3f});
  optim::Adam adam(std::vector<Tensor>{w}, optim::AdamOptions{.lr = 0.01});
  const int64_t before = static_cast<int64_t>(ctx.memory().live_bytes);
  std::vector<fucina::MemoryStats> after;
  for (int s = 0; s < 5; ++s) {
    {
      Tensor loss = x.dot(ctx, w, "in").tanh(ctx).sumAll(ctx);
      loss.backward(ctx);
    }  // the graph is gone here; the gradient stays on w
    adam.step(ctx);
    adam.zeroGrad();
    after.push_back(ctx.memory());
    CHECK(w.requiresGrad());
    CHECK(w.gradState()->isLeaf());
    CHECK(w.gradState()->gradFn() == nullptr);
  }
  // The first step made m and v (2 x 3 floats); later steps allocate nothing that stays.
  CHECK(static_cast<int64_t>(after[0].live_bytes) - before == 2 * 3 * static_cast<int64_t>(sizeof(float)));
  for (size_t s = 1; s < after.size(); ++s) {
    CHECK(after[s].live_bytes == after[0].live_bytes);
    CHECK(after[s].live_tensors == after[0].live_tensors);
  }
  // The same handle sees the new values, and a graph built now reads them.
  const Floats now = w.toVector();
  CHECK(now != Floats{0.1f, -0.2f, 0.3f});
  CHECK(w.sumAll(ctx).item() == Approx(now[0] + now[1] + now[2]));
  // Plain SGD keeps no state; momentum one buffer.
  Tensor v = Tensor::variableFromSlice(ctx, {"in"}, {3}, {1, 2, 3});
  optim::Sgd plain(std::vector<Tensor>{v}, optim::SgdOptions{.lr = 0.1});
  setGrad(ctx, v, {1, 1, 1});
  const size_t m0 = ctx.memory().live_bytes;
  plain.step(ctx);
  CHECK(ctx.memory().live_bytes == m0);
  optim::Sgd heavy(optim::SgdOptions{.lr = 0.1, .momentum = 0.9});
  Tensor u = Tensor::variableFromSlice(ctx, {"in"}, {3}, {1, 2, 3});
  heavy.add(u);
  setGrad(ctx, u, {1, 1, 1});
  const size_t m1 = ctx.memory().live_bytes;
  heavy.step(ctx);
  CHECK(ctx.memory().live_bytes == m1 + 3 * sizeof(float));
}

TEST_CASE("every optimizer and clipGradNorm give the cpu backend's values on the reference backend", "[optim]") {
  // The updates are backend primitives (sgdUpdate, adamUpdate, sumSquares): a parameter of odd
  // size, so the cpu backend's SIMD Adam runs whole vectors and a tail and its pool splits the
  // elements, and a 16-bit parameter with master weights.
  constexpr int64_t kN = 70001;
  auto run = [&](fucina::Backend backend, auto make, fucina::DType dtype) {
    ExecContext ctx(ExecOptions{.threads = 2, .backend = backend});
    Tensor p = Tensor::variable(ctx, Tensor::normal(ctx, {"d"}, {kN}, 0, 1, 1).to(ctx, dtype));
    auto opt = make(std::vector<Tensor>{p});
    std::vector<Floats> out;
    for (uint64_t step = 0; step < 3; ++step) {
      p.gradState()->setGrad(Tensor::normal(ctx, {"d"}, {kN}, 0, 1, 10 + step).value());
      out.push_back({static_cast<float>(optim::clipGradNorm(ctx, std::vector<Tensor>{p}, 200.0))});  // clips: ‖g‖ ≈ 265
      opt->step(ctx);
      out.push_back(p.toVector());
    }
    return out;
  };
  using Make = std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor>)>;
  const std::vector<std::pair<const char*, Make>> cases = {
      {"sgd", [](std::vector<Tensor> ps) { return std::make_unique<optim::Sgd>(ps, optim::SgdOptions{.lr = 0.1}); }},
      {"sgd momentum dampening decay",
       [](std::vector<Tensor> ps) {
         return std::make_unique<optim::Sgd>(
             ps, optim::SgdOptions{.lr = 0.1, .momentum = 0.9, .dampening = 0.2, .weight_decay = 0.01});
       }},
      {"sgd nesterov",
       [](std::vector<Tensor> ps) {
         return std::make_unique<optim::Sgd>(ps, optim::SgdOptions{.lr = 0.05, .momentum = 0.8, .nesterov = true});
       }},
      {"adam decay",
       [](std::vector<Tensor> ps) { return std::make_unique<optim::Adam>(ps, optim::AdamOptions{.lr = 1e-2, .weight_decay = 0.1}); }},
      {"adamw master weights",
       [](std::vector<Tensor> ps) {
         return std::make_unique<optim::AdamW>(ps, optim::AdamOptions{.lr = 1e-3, .weight_decay = 0.01, .master_weights = true});
       }},
  };
  for (const auto& [name, make] : cases) {
    for (fucina::DType dtype : {fucina::DType::f32, fucina::DType::bf16}) {
      INFO(name << " " << fucina::name(dtype));
      const auto cpu = run(fucina::Backend::cpu, make, dtype), ref = run(fucina::Backend::reference, make, dtype);
      REQUIRE(cpu.size() == ref.size());
      for (size_t s = 0; s < cpu.size(); ++s)
        for (size_t i = 0; i < cpu[s].size(); ++i) {
          INFO("entry " << s << " element " << i);
          REQUIRE(ref[s][i] == Approx(cpu[s][i]).epsilon(1e-6).margin(1e-7));
        }
    }
  }
}
