// The autograd reference examples (backward and grad, seeds, shared branches, accumulation, noGrad) as a downstream program of the installed library.
// Prints one line per example and returns nonzero on the first mismatch.
#include <fucina/fucina.h>

#include <cstdio>
#include <exception>
#include <optional>
#include <string>
#include <vector>

namespace {

struct Mismatch : std::exception {
  std::string what_;
  explicit Mismatch(std::string w) : what_(std::move(w)) {}
  const char* what() const noexcept override { return what_.c_str(); }
};

void check(bool ok, const char* what) {
  if (!ok) throw Mismatch(what);
}

// The expected values are small integers, exact in f32, so exact comparison is intended.
void checkValues(const std::optional<fucina::Tensor>& t, const std::vector<float>& want, const char* what) {
  check(t.has_value(), what);
  check(t->toVector() == want, what);
}

// The reference example: backward and grad read
void backwardAndGradRead(fucina::ExecContext& ctx) {
  auto x = fucina::Tensor::variableFromSlice(ctx, {"d"}, {3}, {1, 2, 3});
  auto c = fucina::Tensor::fromSlice(ctx, {"d"}, {3}, {10, 20, 30});  // constant: no grad state
  auto loss = x.mul(ctx, c).sumAll(ctx);                                // scalar: implicit seed 1
  loss.backward(ctx);
  checkValues(x.grad(ctx), {10, 20, 30}, "x.grad() == {10, 20, 30}");
  check(!c.grad(ctx).has_value(), "constants never accumulate");
}

// The reference example: non-scalar output needs a seed
void nonScalarOutputNeedsSeed(fucina::ExecContext& ctx) {
  auto x = fucina::Tensor::variableFromSlice(ctx, {"d"}, {2}, {3, 4});
  auto y = x.scale(ctx, 2);
  bool threw = false;
  try {
    y.backward(ctx);
  } catch (const fucina::Error& e) {
    threw = e.code() == fucina::ErrorCode::MissingOutputGradient;
  }
  check(threw, "unseeded non-scalar backward throws MissingOutputGradient");
  // The failed seeding left no debris: the same graph runs once a seed is supplied.
  auto grad_output = fucina::Tensor::fromSlice(ctx, {"d"}, {2}, {1, 10});
  y.backwardWithGrad(ctx, grad_output);
  checkValues(x.grad(ctx), {2, 20}, "x.grad() == {2, 20}");
}

// The reference example: shared branch accumulates
void sharedBranchAccumulates(fucina::ExecContext& ctx) {
  auto x = fucina::Tensor::variableFromSlice(ctx, {"d"}, {2}, {3, 5});
  auto sq = x.mul(ctx, x);    // x feeds the node twice
  auto lin = x.scale(ctx, 4);  // second consumer of x
  auto loss = sq.add(ctx, lin).sumAll(ctx);
  loss.backward(ctx);
  checkValues(x.grad(ctx), {10, 14}, "d/dx (x^2 + 4x) = 2x + 4 == {10, 14}");
}

// The reference example: micro-batch accumulation and zeroGrad
void microBatchAccumulation(fucina::ExecContext& ctx) {
  auto w = fucina::Tensor::variableFromSlice(ctx, {"d"}, {2}, {1, 2});
  for (int i = 0; i < 2; ++i) {  // one fresh graph per micro-batch
    w.scale(ctx, 3).sumAll(ctx).backward(ctx);
  }
  checkValues(w.grad(ctx), {6, 6}, "w.grad() sums across passes == {6, 6}");
  w.zeroGrad();
  check(!w.grad(ctx).has_value(), "zeroGrad drops the gradient");
}

// The reference example: noGrad suppresses recording
void noGradSuppressesRecording(fucina::ExecContext& ctx) {
  auto x = fucina::Tensor::variableFromSlice(ctx, {"d"}, {2}, {1, 2});
  {
    fucina::NoGradScope scope = fucina::noGrad();
    check(!fucina::isGradEnabled(), "isGradEnabled() is false inside noGrad");
    auto y = x.scale(ctx, 2);  // same op path, but no backward node
    check(!y.requiresGrad(), "results inside noGrad do not require grad");
    checkValues(y, {2, 4}, "y == {2, 4}");
    scope.close();
    scope.close();  // idempotent
  }
  check(fucina::isGradEnabled(), "gradients are enabled again after close");
}

}  // namespace

int main() {
  struct Example {
    const char* name;
    void (*run)(fucina::ExecContext&);
  };
  const Example examples[] = {
      {"5.1 backward and grad read", backwardAndGradRead},
      {"5.2 non-scalar output needs a seed", nonScalarOutputNeedsSeed},
      {"5.2 shared branch accumulates", sharedBranchAccumulates},
      {"5.3 micro-batch accumulation and zeroGrad", microBatchAccumulation},
      {"5.4 noGrad suppresses recording", noGradSuppressesRecording},
  };
  fucina::ExecContext ctx;
  for (const auto& ex : examples) {
    try {
      ex.run(ctx);
    } catch (const Mismatch& m) {
      std::printf("FAIL %s: expected %s\n", ex.name, m.what());
      return 1;
    } catch (const fucina::Error& e) {
      std::printf("FAIL %s: fucina::Error %s\n", ex.name, e.what());
      return 1;
    } catch (const std::exception& e) {
      std::printf("FAIL %s: %s\n", ex.name, e.what());
      return 1;
    }
    std::printf("ok   %s\n", ex.name);
  }
  std::printf("all examples passed\n");
  return 0;
}
