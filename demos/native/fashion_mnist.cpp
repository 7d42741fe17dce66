// The native twin of demos/node/fashion_mnist.mjs (`npm start -- --native`): trains the W1 MLP or
// the W2 CNN on the real Fashion-MNIST with a progress bar, then prints the test accuracy.
//   fashion_mnist [--model mlp|cnn] [--epochs N] [--threads N] [--data DIR] [--steps N]
//                 [--save FILE] [--load FILE]
// --steps caps the steps per epoch (a smoke test). --save writes the trained parameters as
// safetensors; --load reads them first (then --epochs 0 only evaluates). A downstream program of
// the installed package (demos/native/CMakeLists.txt, README.md there); the main build compiles it too.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <string>

#include <fucina/fucina.h>

using fucina::ExecContext;
using fucina::Tensor;
namespace data = fucina::data;
namespace nn = fucina::nn;

namespace {

struct Options {
  std::string model = "mlp", dir = data::kFashionMnistDir, save, load;
  int epochs = 2, threads = 0;
  int64_t max_steps = -1;  // per epoch; -1: the whole training split
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) throw std::invalid_argument(flag + " needs a value");
    const std::string value = argv[++i];
    if (flag == "--model") o.model = value;
    else if (flag == "--epochs") o.epochs = std::stoi(value);
    else if (flag == "--threads") o.threads = std::stoi(value);
    else if (flag == "--data") o.dir = value;
    else if (flag == "--steps") o.max_steps = std::stoll(value);
    else if (flag == "--save") o.save = value;
    else if (flag == "--load") o.load = value;
    else throw std::invalid_argument("unknown option " + flag);
  }
  if (o.model != "mlp" && o.model != "cnn") throw std::invalid_argument("--model must be mlp or cnn");
  return o;
}

double seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

// One line, rewritten in place on a terminal; every 10% as a new line in a log.
void progress(int epoch, int epochs, int64_t step, int64_t steps, double loss, double per_second) {
  const bool tty = isatty(STDOUT_FILENO);
  if (!tty && step != steps && step % ((steps + 9) / 10) != 0) return;
  const int width = 30, done = static_cast<int>(width * step / steps);
  std::printf("%sepoch %d/%d [%s%s] %lld/%lld  loss %.4f  %.0f images/s%s", tty ? "\r" : "", epoch, epochs,
              std::string(static_cast<size_t>(done), '#').c_str(), std::string(static_cast<size_t>(width - done), '.').c_str(),
              static_cast<long long>(step), static_cast<long long>(steps), loss, per_second, tty ? "" : "\n");
  std::fflush(stdout);
}

// Pixels standardized with the training split's mean and standard deviation.
Tensor standardize(ExecContext& ctx, const Tensor& images) { return images.subScalar(ctx, data::kFashionMnistMean).divScalar(ctx, data::kFashionMnistStd); }

template <class Model, class Input>
int run(ExecContext& ctx, const Options& o, const Model& model, Input input, int64_t batch, double lr) {
  const data::Split train = data::loadFashionMnist(ctx, o.dir, true);
  const data::Split test = data::loadFashionMnist(ctx, o.dir, false);
  std::printf("fucina native (%d thread%s): %s on Fashion-MNIST, %lld training and %lld test images\n", ctx.threads(),
              ctx.threads() > 1 ? "s" : "", o.model == "mlp" ? "MLP" : "CNN",
              static_cast<long long>(train.labels.numel()), static_cast<long long>(test.labels.numel()));
  if (!o.load.empty()) {
    nn::loadParameters(ctx, o.load, model.parameters());
    std::printf("loaded the parameters from %s\n", o.load.c_str());
  }
  fucina::optim::Adam opt(model.parameters(), {.lr = lr});
  const int64_t n = train.labels.numel();
  const int64_t steps = o.max_steps < 0 ? (n + batch - 1) / batch : std::min(o.max_steps, (n + batch - 1) / batch);
  const auto started = std::chrono::steady_clock::now();
  for (int epoch = 1; epoch <= o.epochs; ++epoch) {
    const auto order = data::shuffledIndices(n, static_cast<uint64_t>(epoch));
    const auto epoch_start = std::chrono::steady_clock::now();
    double smoothed = -1;
    for (int64_t step = 1; step <= steps; ++step) {
      fucina::ExecScope scope(ctx);
      const data::Split b = data::batch(ctx, train, order, (step - 1) * batch, batch);
      opt.zeroGrad();
      const Tensor loss = model(ctx, input(ctx, b.images)).crossEntropy(ctx, b.labels, "class");
      loss.backward(ctx);
      opt.step(ctx);
      smoothed = smoothed < 0 ? loss.item() : 0.95 * smoothed + 0.05 * loss.item();
      progress(epoch, o.epochs, step, steps, smoothed, static_cast<double>(step * batch) / seconds(epoch_start));
    }
    if (isatty(STDOUT_FILENO)) std::printf("\n");
  }
  const double train_seconds = seconds(started);
  if (!o.save.empty()) {
    nn::saveParameters(ctx, o.save, model.parameters(), {{"model", o.model}, {"dataset", "fashion-mnist"}});
    std::printf("saved the parameters to %s (safetensors)\n", o.save.c_str());
  }

  auto no_grad = fucina::noGrad();
  int64_t correct = 0;
  const int64_t count = test.labels.numel(), chunk = 1000;
  const auto labels = test.labels.toVector();
  for (int64_t begin = 0; begin < count; begin += chunk) {
    fucina::ExecScope scope(ctx);
    const auto predicted = model(ctx, input(ctx, test.images.narrow(ctx, "sample", begin, chunk))).argmax(ctx, "class").toVector();
    for (int64_t i = 0; i < chunk; ++i) correct += predicted[static_cast<size_t>(i)] == labels[static_cast<size_t>(begin + i)];
  }
  if (o.epochs > 0) std::printf("trained %d epoch%s in %.1f s; ", o.epochs, o.epochs == 1 ? "" : "s", train_seconds);
  std::printf("test accuracy %.2f%%\n", 100.0 * static_cast<double>(correct) / static_cast<double>(count));
  std::printf("peak tensor memory %.1f MiB\n", static_cast<double>(ctx.memory().peak_bytes) / (1 << 20));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Options o = parse(argc, argv);
    ExecContext ctx(fucina::ExecOptions{.threads = o.threads});
    if (o.model == "mlp")
      return run(ctx, o, nn::Mlp(ctx, nn::MlpConfig{}, 1), [](ExecContext& c, const Tensor& images) {
        return standardize(c, images).merge(c, {"h", "w"}, "in");
      }, 128, 1e-3);
    return run(ctx, o, nn::Cnn(ctx, nn::CnnConfig{}, 1), standardize, 64, 2e-3);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fashion_mnist: %s\n", e.what());
    return 1;
  }
}
