/// @file
/// gradcheck: central finite differences against the analytical backward of a scalar loss.
#pragma once

#include <cstddef>
#include <functional>
#include <type_traits>
#include <vector>

#include "fucina/ag/tensor.h"

namespace fucina {

struct GradcheckOptions {
  double eps = 1e-3;       ///< central-difference step
  double abs_tol = 1e-3;   ///< absolute tolerance floor
  double rel_tol = 1e-2;   ///< relative tolerance factor
  bool print_mismatch = true;  ///< print the first failing element to stderr
};

struct GradcheckResult {
  size_t checked = 0;  ///< elements compared
  double max_abs_error = 0;
  double max_rel_error = 0;  ///< over elements whose |analytical| exceeds abs_tol
};

/// The loss is rebuilt for every evaluation; it reads the inputs through the handles it captured
/// (or, for the two-argument form, through the tensors handed to it, in the order of `inputs`).
using GradcheckLoss = std::function<Tensor(ExecContext&, const std::vector<Tensor>&)>;
GradcheckResult gradcheckImpl(ExecContext& ctx, const GradcheckLoss& loss,
                              const std::vector<Tensor*>& inputs, const GradcheckOptions& options);

/// Per element: |g_num - g_ana| <= abs_tol + rel_tol * |g_ana|. Variables among inputs are
/// checked (they must be contiguous f32); constants are ignored. Gradients of all inputs are
/// zeroed before and after. Errors: InvalidGradcheckOptions, NoVariableInputs,
/// MissingAnalyticalGradient, GradientShapeMismatch, GradientMismatch; loss errors propagate.
/// lossFn: Tensor(ExecContext&) or Tensor(ExecContext&, const std::vector<Tensor>&).
template <class LossFn>
GradcheckResult gradcheck(ExecContext& ctx, LossFn&& lossFn, std::vector<Tensor*> inputs,
                          GradcheckOptions options = {}) {
  GradcheckLoss loss;
  if constexpr (std::is_invocable_v<LossFn&, ExecContext&, const std::vector<Tensor>&>) {
    loss = [&lossFn](ExecContext& c, const std::vector<Tensor>& xs) { return lossFn(c, xs); };
  } else {
    static_assert(std::is_invocable_v<LossFn&, ExecContext&>,
                  "gradcheck: lossFn must take (ExecContext&) or (ExecContext&, const "
                  "std::vector<Tensor>&) and return a scalar Tensor");
    loss = [&lossFn](ExecContext& c, const std::vector<Tensor>&) { return lossFn(c); };
  }
  return gradcheckImpl(ctx, loss, inputs, options);
}

}  // namespace fucina
