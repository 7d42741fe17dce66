// The native side of the native/wasm parity check: a fixed 2-layer MLP trained for 10 SGD steps
// must reproduce the losses committed in tests/fixtures/mlp_losses.json, which the JS suite
// (tests/js/training.test.mjs) checks against the built npm package too.
#include "test_helpers.h"

#include <cmath>
#include <fstream>
#include <regex>
#include <sstream>

using fucina::ExecContext;
using fucina::Tensor;

namespace {

// Inputs and initial weights are closed-form, so both languages build them identically.
std::vector<float> table(int64_t rows, int64_t cols, double (*f)(int64_t, int64_t)) {
  std::vector<float> v;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) v.push_back(static_cast<float>(f(r, c)));
  return v;
}

std::vector<float> trainReferenceMlp(int threads) {
  ExecContext ctx(fucina::ExecOptions{.threads = threads});
  const int64_t batch = 8, in = 4, hidden = 6, out = 2;
  const Tensor x = Tensor::fromSlice(ctx, {"batch", "in"}, {batch, in},
                                     table(batch, in, [](int64_t b, int64_t i) { return std::sin(0.37 * b + 1.3 * i); }));
  const Tensor y = Tensor::fromSlice(ctx, {"batch", "out"}, {batch, out},
                                     table(batch, out, [](int64_t b, int64_t o) { return std::cos(0.5 * b - 0.8 * o); }));
  Tensor w1 = Tensor::variableFromSlice(ctx, {"hidden", "in"}, {hidden, in},
                                        table(hidden, in, [](int64_t h, int64_t i) { return 0.3 * std::sin(1.1 * h + 0.7 * i + 0.2); }));
  Tensor b1 = Tensor::variableFromSlice(ctx, {"hidden"}, {hidden},
                                        table(1, hidden, [](int64_t, int64_t h) { return 0.05 * h - 0.1; }));
  Tensor w2 = Tensor::variableFromSlice(ctx, {"out", "hidden"}, {out, hidden},
                                        table(out, hidden, [](int64_t o, int64_t h) { return 0.4 * std::cos(0.9 * o + 0.5 * h); }));
  std::vector<float> losses;
  for (int step = 0; step < 10; ++step) {
    fucina::ExecScope scope(ctx);
    Tensor h = x.dot(ctx, w1, "in").add(ctx, b1).tanh(ctx);
    Tensor d = h.dot(ctx, w2, "hidden").sub(ctx, y);
    Tensor loss = d.mul(ctx, d).meanAll(ctx);
    loss.backward(ctx);
    losses.push_back(loss.item());
    auto ng = fucina::noGrad();
    for (Tensor* p : {&w1, &b1, &w2})
      *p = scope.keep(Tensor::variable(ctx, p->detach(ctx).sub(ctx, p->grad(ctx)->scale(ctx, 0.2))));
  }
  return losses;
}

std::vector<double> committedLosses() {
  std::ifstream file(FUCINA_SOURCE_DIR "/tests/fixtures/mlp_losses.json");
  REQUIRE(file.good());
  std::stringstream text;
  text << file.rdbuf();
  const std::string s = text.str();
  const std::regex number(R"([-+]?\d+\.\d+(?:[eE][-+]?\d+)?)");
  std::vector<double> out;
  for (auto it = std::sregex_iterator(s.begin(), s.end(), number); it != std::sregex_iterator(); ++it)
    out.push_back(std::stod(it->str()));
  return out;
}

}  // namespace

TEST_CASE("reference MLP reproduces the committed losses (native/wasm parity)") {
  const auto want = committedLosses();
  REQUIRE(want.size() == 10);
  for (int threads : {1, 2}) {
    const auto got = trainReferenceMlp(threads);
    INFO(threads << " threads");
    for (size_t i = 0; i < want.size(); ++i) {
      INFO("step " << i << ": got " << got[i] << ", committed " << want[i]);
      CHECK(std::fabs(got[i] - want[i]) <= 1e-5 * std::fabs(want[i]));
    }
    CHECK(got.back() < got.front());
  }
}

TEST_CASE("print the reference MLP losses", "[.print]") {
  // Hidden: `fucina_tests "[.print]"` prints the fixture's content after a deliberate change.
  std::printf("{ \"losses\": [");
  const auto losses = trainReferenceMlp(1);
  for (size_t i = 0; i < losses.size(); ++i) std::printf("%s%.9g", i ? ", " : "", losses[i]);
  std::printf("] }\n");
}
