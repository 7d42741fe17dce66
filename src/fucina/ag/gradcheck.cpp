#include "fucina/ag/gradcheck.h"

#include <cmath>
#include <cstdio>
#include <string>

#include "fucina/ag/control.h"
#include "fucina/core/error.h"
#include "fucina/exec/scope.h"

namespace fucina {
namespace {

void validate(const GradcheckOptions& o) {
  auto bad = [](double v) { return !std::isfinite(v); };
  if (bad(o.eps) || o.eps <= 0)
    fail(ErrorCode::InvalidGradcheckOptions, "eps must be finite and positive, got " + std::to_string(o.eps));
  if (bad(o.abs_tol) || o.abs_tol < 0)
    fail(ErrorCode::InvalidGradcheckOptions, "abs_tol must be finite and >= 0, got " + std::to_string(o.abs_tol));
  if (bad(o.rel_tol) || o.rel_tol < 0)
    fail(ErrorCode::InvalidGradcheckOptions, "rel_tol must be finite and >= 0, got " + std::to_string(o.rel_tol));
}

// Evaluates the loss as a double under its own scope.
double evaluate(ExecContext& ctx, const GradcheckLoss& loss, const std::vector<Tensor>& inputs) {
  ExecScope scope(ctx);
  Tensor y = loss(ctx, inputs);
  if (y.numel() != 1)
    fail(ErrorCode::InvalidArgument, "gradcheck: the loss must be a scalar, got " + y.value().describe());
  return y.item();
}

// Zeroes every input's gradient when it goes out of scope, on success and on error alike.
struct ZeroGradsOnExit {
  const std::vector<Tensor>& inputs;
  ~ZeroGradsOnExit() {
    for (const Tensor& t : inputs) t.zeroGrad();
  }
};

}  // namespace

GradcheckResult gradcheckImpl(ExecContext& ctx, const GradcheckLoss& loss,
                              const std::vector<Tensor*>& inputs, const GradcheckOptions& options) {
  validate(options);
  std::vector<Tensor> handles;
  std::vector<size_t> variables;
  for (Tensor* t : inputs) {
    if (!t) fail(ErrorCode::InvalidArgument, "gradcheck: null input pointer");
    handles.push_back(*t);
    if (!t->requiresGrad()) continue;
    if (!t->value().isContiguous())
      fail(ErrorCode::InvalidArgument, "gradcheck: variable inputs must be contiguous");
    variables.push_back(handles.size() - 1);
  }
  if (variables.empty())
    fail(ErrorCode::NoVariableInputs, "gradcheck: no input requires gradients");
  for (const Tensor& t : handles) t.zeroGrad();
  ZeroGradsOnExit guard{handles};

  // Analytical gradients: one backward under a scope.
  std::vector<std::vector<float>> analytical;
  {
    ExecScope scope(ctx);
    Tensor y = loss(ctx, handles);
    if (y.numel() != 1)
      fail(ErrorCode::InvalidArgument, "gradcheck: the loss must be a scalar, got " + y.value().describe());
    y.backward(ctx);
    for (size_t v : variables) {
      const Tensor& x = handles[v];
      auto g = x.gradState()->gradView();
      if (!g)
        fail(ErrorCode::MissingAnalyticalGradient,
             "gradcheck: backward produced no gradient for input " + std::to_string(v) + " " +
                 x.value().describe());
      if (g->tags() != x.tags() || g->shape() != x.shape())
        fail(ErrorCode::GradientShapeMismatch, "gradcheck: gradient " + g->describe() +
                                                   " for input " + std::to_string(v) + " " +
                                                   x.value().describe());
      analytical.push_back(g->toVector());
    }
  }

  // Numerical gradients: perturb each element of each variable in place.
  GradcheckResult result;
  NoGradScope no_grad = noGrad();
  for (size_t vi = 0; vi < variables.size(); ++vi) {
    const Tensor& x = handles[variables[vi]];
    float* data = x.value().f32();
    for (int64_t i = 0; i < x.numel(); ++i) {
      const float original = data[i];
      struct Restore {  // the input is left as it was even when the loss throws
        float* slot;
        float value;
        ~Restore() { *slot = value; }
      } restore{data + i, original};
      data[i] = static_cast<float>(original + options.eps);
      const double plus = evaluate(ctx, loss, handles);
      data[i] = static_cast<float>(original - options.eps);
      const double minus = evaluate(ctx, loss, handles);
      data[i] = original;
      // The step actually taken in f32 may differ from eps; divide by it.
      const double step = static_cast<double>(static_cast<float>(original + options.eps)) -
                          static_cast<double>(static_cast<float>(original - options.eps));
      const double numerical = (plus - minus) / step;
      const double ana = analytical[vi][static_cast<size_t>(i)];
      const double abs_err = std::fabs(numerical - ana);
      ++result.checked;
      result.max_abs_error = std::max(result.max_abs_error, abs_err);
      // Relative error only where it means something: below abs_tol the absolute test governs.
      if (std::fabs(ana) > options.abs_tol)
        result.max_rel_error = std::max(result.max_rel_error, abs_err / std::fabs(ana));
      if (!(abs_err <= options.abs_tol + options.rel_tol * std::fabs(ana))) {
        const std::string msg = "gradcheck: input " + std::to_string(variables[vi]) + " " +
                                x.value().describe() + " element " + std::to_string(i) +
                                ": numerical " + std::to_string(numerical) + " vs analytical " +
                                std::to_string(ana) + " (abs error " + std::to_string(abs_err) + ")";
        if (options.print_mismatch) std::fprintf(stderr, "%s\n", msg.c_str());
        fail(ErrorCode::GradientMismatch, msg);
      }
    }
  }
  return result;
}

}  // namespace fucina
