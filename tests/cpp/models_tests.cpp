// The benchmark models (W1 mlp, W2 cnn, W3 gpt from ../shared/BENCHMARKS.md, at test sizes) train
// for a few hundred steps on data with a learnable signal, and their loss falls well below where
// it started. tests/js/models.test.mjs runs the same checks against the npm package.
#include "test_helpers.h"

#include <algorithm>
#include <numeric>
#include <string>

using fucina::ExecContext;
using fucina::ExecScope;
using fucina::Tensor;
namespace nn = fucina::nn;
namespace optim = fucina::optim;

namespace {

// Runs `steps` training steps (fresh scope, zeroGrad, loss, backward, update) and returns the losses.
template <class LossOfStep>
std::vector<float> train(ExecContext& ctx, optim::Optimizer& opt, int steps, LossOfStep lossOf) {
  std::vector<float> losses;
  for (int step = 0; step < steps; ++step) {
    ExecScope scope(ctx);
    opt.zeroGrad();
    const Tensor loss = lossOf(step);
    loss.backward(ctx);
    opt.step(ctx);
    losses.push_back(loss.item());
  }
  return losses;
}

float meanOf(const std::vector<float>& v, size_t begin, size_t end) {
  return std::accumulate(v.begin() + static_cast<std::ptrdiff_t>(begin), v.begin() + static_cast<std::ptrdiff_t>(end), 0.0f) /
         static_cast<float>(end - begin);
}

// The loss fell well below its start: the last 20 steps average under `ratio` of the first 5.
void requireLearned(const std::vector<float>& losses, float ratio) {
  const float first = meanOf(losses, 0, 5), last = meanOf(losses, losses.size() - 20, losses.size());
  INFO("first 5 steps " << first << ", last 20 steps " << last);
  for (float l : losses) REQUIRE(std::isfinite(l));
  REQUIRE(last < ratio * first);
}

int64_t argmax(std::span<const float> row) {
  return std::max_element(row.begin(), row.end()) - row.begin();
}

}  // namespace

TEST_CASE("uniform and normal are seeded, in range and have the right moments", "[models]") {
  ExecContext ctx;
  const auto u = Tensor::uniform(ctx, {"i"}, {100000}, -2, 3, 7).toVector();
  CHECK(*std::min_element(u.begin(), u.end()) >= -2.0f);
  CHECK(*std::max_element(u.begin(), u.end()) < 3.0f);
  CHECK(meanOf(u, 0, u.size()) == Approx(0.5).margin(0.03));
  const auto n = Tensor::normal(ctx, {"i"}, {100000}, 1.0, 2.0, 7).toVector();
  const float mean = meanOf(n, 0, n.size());
  double var = 0;
  for (float x : n) var += (x - mean) * (x - mean);
  CHECK(mean == Approx(1.0).margin(0.03));
  CHECK(std::sqrt(var / n.size()) == Approx(2.0).margin(0.03));
  // Same seed, same values on any thread count; another seed, other values.
  ExecContext one(fucina::ExecOptions{.threads = 1});
  CHECK(Tensor::normal(one, {"i"}, {100000}, 1.0, 2.0, 7).toVector() == n);
  CHECK(Tensor::normal(ctx, {"i"}, {8}, 0, 1, 8).toVector() != Tensor::normal(ctx, {"i"}, {8}, 0, 1, 7).toVector());
  REQUIRE_FUCINA_ERROR(Tensor::uniform(ctx, {"i"}, {2}, 1, 0, 0), InvalidArgument);
  REQUIRE_FUCINA_ERROR(Tensor::normal(ctx, {"i"}, {2}, 0, -1, 0), InvalidArgument);
}

TEST_CASE("W1 mlp learns a teacher's classes", "[models]") {
  ExecContext ctx;
  const int64_t samples = 512, in = 32, classes = 10, batch = 64;
  const Tensor x = Tensor::normal(ctx, {"sample", "in"}, {samples, in}, 0, 1, 1);
  const auto teacher = x.dot(ctx, Tensor::normal(ctx, {"in", "class"}, {in, classes}, 0, 1, 2), "in").toVector();
  std::vector<int64_t> labels;
  for (int64_t s = 0; s < samples; ++s) labels.push_back(argmax(std::span(teacher).subspan(s * classes, classes)));
  const Tensor y = Tensor::fromInts(ctx, {"sample"}, {samples}, labels);

  nn::Mlp model(ctx, nn::MlpConfig{.sizes = {in, 64, 32, classes}}, 3);
  optim::Sgd opt(model.parameters(), {.lr = 0.1});
  const auto losses = train(ctx, opt, 300, [&](int step) {
    const int64_t start = (step * batch) % samples;
    return model(ctx, x.narrow(ctx, "sample", start, batch)).crossEntropy(ctx, y.narrow(ctx, "sample", start, batch), "class");
  });
  requireLearned(losses, 0.35f);
}

TEST_CASE("W2 cnn learns bar orientations, channels first and last", "[models]") {
  const bool channels_last = GENERATE(false, true);
  INFO("channels last " << channels_last);
  ExecContext ctx;
  const int64_t samples = 256, image = 14, batch = 16;
  // Class 0: a horizontal bar, 1: a vertical bar, 2: the diagonal, 3: the anti-diagonal; plus
  // noise. Closed-form, so tests/js/models.test.mjs builds the same images.
  std::vector<float> bars;
  std::vector<int64_t> labels;
  for (int64_t s = 0; s < samples; ++s) {
    const int64_t c = s % 4, at = (s * 7 + 3) % image;
    labels.push_back(c);
    for (int64_t r = 0; r < image; ++r)
      for (int64_t q = 0; q < image; ++q)
        bars.push_back((c == 0 && r == at) || (c == 1 && q == at) || (c == 2 && r == q) || (c == 3 && r + q == image - 1));
  }
  const Tensor x = Tensor::fromSlice(ctx, {"sample", "h", "w"}, {samples, image, image}, bars)
                       .add(ctx, Tensor::normal(ctx, {"sample", "h", "w"}, {samples, image, image}, 0, 0.3, 5));
  const Tensor y = Tensor::fromInts(ctx, {"sample"}, {samples}, labels);

  nn::Cnn model(ctx, {.image = image, .conv1 = 4, .conv2 = 8, .hidden = 16, .classes = 4, .channels_last = channels_last}, 4);
  CHECK(model.flatFeatures() == 8 * 2 * 2);
  optim::Sgd opt(model.parameters(), {.lr = 0.05, .momentum = 0.9});
  const auto losses = train(ctx, opt, 200, [&](int step) {
    const int64_t start = (step * batch) % samples;
    return model(ctx, x.narrow(ctx, "sample", start, batch)).crossEntropy(ctx, y.narrow(ctx, "sample", start, batch), "class");
  });
  requireLearned(losses, 0.35f);
}

namespace {

// Byte windows of a repeating sentence: each sequence starts at a different offset.
Tensor textBatch(ExecContext& ctx, int64_t batch, int64_t length, int64_t step) {
  static const std::string text = "the quick brown fox jumps over the lazy dog. ";
  std::vector<int64_t> bytes;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < length; ++i)
      bytes.push_back(static_cast<unsigned char>(text[static_cast<size_t>((step * 5 + b * 11 + i) % static_cast<int64_t>(text.size()))]));
  return Tensor::fromInts(ctx, {"batch", "t"}, {batch, length}, bytes);
}

const nn::GptConfig kSmallGpt{.vocab = 256, .context = 16, .d_model = 32, .heads = 4, .layers = 2, .mlp = 64};

}  // namespace

TEST_CASE("W3 gpt has the benchmark's parameter count", "[models]") {
  ExecContext ctx;
  const nn::Gpt model(ctx, nn::GptConfig{}, 0);
  int64_t count = 0;
  for (const Tensor& p : model.parameters()) count += p.numel();
  CHECK(count == 445952);
}

TEST_CASE("W3 gpt learns a repeating text", "[models]") {
  ExecContext ctx;
  const nn::Gpt model(ctx, kSmallGpt, 9);
  optim::AdamW opt(model.parameters(), {.lr = 3e-3, .weight_decay = 0.01});
  const auto losses = train(ctx, opt, 200, [&](int step) { return model.loss(ctx, textBatch(ctx, 8, 17, step)); });
  CHECK(losses.front() == Approx(std::log(256.0)).margin(0.3));  // near-uniform at the start
  requireLearned(losses, 0.4f);
}

TEST_CASE("W3 gpt with checkpointed blocks matches the plain model", "[models]") {
  ExecContext ctx;
  nn::GptConfig checkpointed = kSmallGpt;
  checkpointed.checkpoint_blocks = true;
  const nn::Gpt plain(ctx, kSmallGpt, 9), recomputed(ctx, checkpointed, 9);
  const Tensor tokens = textBatch(ctx, 4, 17, 0);
  ExecScope scope(ctx);
  const Tensor a = plain.loss(ctx, tokens), b = recomputed.loss(ctx, tokens);
  a.backward(ctx);
  b.backward(ctx);
  CHECK(a.item() == b.item());
  const auto pa = plain.parameters(), pb = recomputed.parameters();
  REQUIRE(pa.size() == pb.size());
  for (size_t i = 0; i < pa.size(); ++i) {
    INFO("parameter " << i);
    REQUIRE(pb[i].grad(ctx).has_value());
    CHECK(pb[i].grad(ctx)->toVector() == pa[i].grad(ctx)->toVector());
  }
}

TEST_CASE("W3 gpt rejects bad configurations and inputs", "[models]") {
  ExecContext ctx;
  nn::GptConfig bad = kSmallGpt;
  bad.heads = 5;
  REQUIRE_FUCINA_ERROR(nn::Gpt(ctx, bad, 0), InvalidArgument);
  const nn::Gpt model(ctx, kSmallGpt, 0);
  REQUIRE_FUCINA_ERROR(model(ctx, textBatch(ctx, 1, 17, 0)), InvalidArgument);  // longer than the context
  REQUIRE_FUCINA_ERROR(model.loss(ctx, textBatch(ctx, 1, 1, 0)), InvalidArgument);
  REQUIRE_FUCINA_ERROR(model(ctx, Tensor::fromInts(ctx, {"batch", "time"}, {1, 2}, {1, 2})), ShapeMismatch);
}
