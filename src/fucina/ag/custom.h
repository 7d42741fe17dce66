/// @file
/// Custom VJPs: user-defined differentiable ops. A Spec computes on raw tensors:
///
/// ```
///   struct Spec {
///     static constexpr size_t output_rank = 1;  // optional: the forward result's rank is checked
///     static internal::RawTensor forward(ExecContext&, const Extra&,
///                                        std::span<const internal::RawTensor* const> inputs);
///     static void backward(ExecContext&, const Extra&,
///                          std::span<const internal::RawTensor* const> inputs,
///                          const internal::RawTensor& output, const internal::RawTensor& gy,
///                          std::span<const bool> needs_grad,
///                          std::span<std::optional<internal::RawTensor>> out);
///   };
/// ```
///
/// backward must fill out[i] for every true needs_grad[i] with a gradient shaped like input i
/// (MissingBackwardGradient / ShapeMismatch otherwise). The raw ops in <fucina/ops/raw.h> are the
/// usual building blocks. For elementwise functions, elementalUnary/elementalBinary
/// (fucina/ops/elemental.h) need no raw code.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "fucina/ag/tensor.h"

namespace fucina {

/// The type-erased form every customVjp goes through (the JS facade calls it directly).
struct CustomVjpFunctions {
  std::string name = "customVjp";
  std::function<internal::RawTensor(ExecContext&, std::span<const internal::RawTensor* const>)> forward;
  std::function<void(ExecContext&, std::span<const internal::RawTensor* const> inputs,
                     const internal::RawTensor& output, const internal::RawTensor& gy,
                     std::span<const bool> needs_grad,
                     std::span<std::optional<internal::RawTensor>> out)>
      backward;
  std::optional<size_t> output_rank;  ///< checked against the forward result when set
};
Tensor customVjpErased(ExecContext& ctx, CustomVjpFunctions fns, const std::vector<Tensor>& inputs);

template <class Spec, class Extra, class... In>
Tensor customVjp(ExecContext& ctx, Extra extra, const In&... inputs) {
  static_assert((std::is_same_v<In, Tensor> && ...), "customVjp: inputs must be fucina::Tensor");
  CustomVjpFunctions fns;
  fns.forward = [extra](ExecContext& c, std::span<const internal::RawTensor* const> ins) {
    return Spec::forward(c, extra, ins);
  };
  // Kept by value in the record (extra's pointees must outlive backward, as in checkpoint).
  fns.backward = [extra](ExecContext& c, std::span<const internal::RawTensor* const> ins,
                         const internal::RawTensor& output, const internal::RawTensor& gy,
                         std::span<const bool> needs, std::span<std::optional<internal::RawTensor>> out) {
    Spec::backward(c, extra, ins, output, gy, needs, out);
  };
  if constexpr (requires { Spec::output_rank; }) fns.output_rank = Spec::output_rank;
  return customVjpErased(ctx, std::move(fns), std::vector<Tensor>{inputs...});
}

}  // namespace fucina
