#include "fucina/ag/custom.h"

#include "fucina/ag/control.h"
#include "fucina/core/error.h"

namespace fucina {

using internal::RawTensor;

namespace {

std::vector<const RawTensor*> pointers(const std::vector<RawTensor>& ts) {
  std::vector<const RawTensor*> ps;
  for (const RawTensor& t : ts) ps.push_back(&t);
  return ps;
}

// Holds refcounted views of the inputs and the output (no copies) and the user's backward.
class CustomRecord final : public BackwardFunction {
 public:
  CustomRecord(CustomVjpFunctions fns, std::vector<RawTensor> inputs, RawTensor output,
               std::vector<std::shared_ptr<GradState>> operands)
      : fns_(std::move(fns)),
        inputs_(std::move(inputs)),
        output_(std::move(output)),
        operands_(std::move(operands)) {}
  std::span<const std::shared_ptr<GradState>> operands() const override { return operands_; }
  std::string_view name() const override { return fns_.name; }
  void backward(ExecContext& ctx, const RawTensor& gy, std::span<const bool> needs_grad,
                std::span<std::optional<RawTensor>> out) override {
    const auto ins = pointers(inputs_);
    fns_.backward(ctx, ins, output_, gy, needs_grad, out);
    // The engine then reports an empty required slot (MissingBackwardGradient) or a gradient
    // whose axes do not match its input (ShapeMismatch).
  }

 private:
  CustomVjpFunctions fns_;
  std::vector<RawTensor> inputs_;
  RawTensor output_;
  std::vector<std::shared_ptr<GradState>> operands_;
};

}  // namespace

Tensor customVjpErased(ExecContext& ctx, CustomVjpFunctions fns, const std::vector<Tensor>& inputs) {
  if (!fns.forward) fail(ErrorCode::InvalidArgument, fns.name + ": no forward function");
  std::vector<RawTensor> values;
  bool any_grad = false;
  for (const Tensor& t : inputs) {
    ops::requireF32(fns.name, t);
    values.push_back(t.value());
    any_grad = any_grad || t.requiresGrad();
  }
  RawTensor out;
  {
    NoGradScope no_grad = noGrad();  // the forward builds no graph of its own
    out = fns.forward(ctx, pointers(values));
  }
  if (!out.valid()) fail(ErrorCode::InvalidArgument, fns.name + ": forward returned no tensor");
  if (out.dtype() != DType::f32)
    fail(ErrorCode::DTypeMismatch, fns.name + ": forward must return f32, got " +
                                       std::string(name(out.dtype())));
  if (fns.output_rank && out.rank() != *fns.output_rank)
    fail(ErrorCode::ShapeMismatch, fns.name + ": forward returned " + out.describe() + " of rank " +
                                       std::to_string(out.rank()) + ", the spec declares rank " +
                                       std::to_string(*fns.output_rank));
  if (!any_grad || !isGradEnabled()) return Tensor::make(ctx, std::move(out), nullptr);
  if (!fns.backward)
    fail(ErrorCode::UnsupportedGradient, fns.name + ": an input requires gradients but no backward was given");
  std::vector<std::shared_ptr<GradState>> operands;
  for (const Tensor& t : inputs) operands.push_back(t.impl()->gradState());
  auto record = std::make_unique<CustomRecord>(std::move(fns), std::move(values), out, std::move(operands));
  auto state = std::make_shared<GradState>(out.tags(), out.shape(), std::move(record));
  return Tensor::make(ctx, std::move(out), std::move(state));
}

}  // namespace fucina
