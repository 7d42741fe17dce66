#include "fucina/backend/kernels.h"
#include "fucina/ops/raw.h"

#include "fucina/ag/control.h"
#include "fucina/ag/tensor.h"

namespace fucina::raw {
namespace {

// Runs a Tensor op on constant wrappers of raw inputs and returns the raw result.
template <class Op>
RawTensor viaTensor(Op op) {
  NoGradScope no_grad = noGrad();
  Tensor result = op();
  return result.value();
}

Tensor wrap(ExecContext& ctx, const RawTensor& t) { return Tensor::fromRaw(ctx, t); }

}  // namespace

RawTensor add(ExecContext& ctx, const RawTensor& a, const RawTensor& b) {
  return viaTensor([&] { return wrap(ctx, a).add(ctx, wrap(ctx, b)); });
}
RawTensor sub(ExecContext& ctx, const RawTensor& a, const RawTensor& b) {
  return viaTensor([&] { return wrap(ctx, a).sub(ctx, wrap(ctx, b)); });
}
RawTensor mul(ExecContext& ctx, const RawTensor& a, const RawTensor& b) {
  return viaTensor([&] { return wrap(ctx, a).mul(ctx, wrap(ctx, b)); });
}
RawTensor div(ExecContext& ctx, const RawTensor& a, const RawTensor& b) {
  return viaTensor([&] { return wrap(ctx, a).div(ctx, wrap(ctx, b)); });
}
RawTensor scale(ExecContext& ctx, const RawTensor& a, double factor) {
  return viaTensor([&] { return wrap(ctx, a).scale(ctx, factor); });
}
RawTensor addScalar(ExecContext& ctx, const RawTensor& a, double value) {
  return viaTensor([&] { return wrap(ctx, a).addScalar(ctx, value); });
}
RawTensor neg(ExecContext& ctx, const RawTensor& a) {
  return viaTensor([&] { return wrap(ctx, a).neg(ctx); });
}
RawTensor exp(ExecContext& ctx, const RawTensor& a) {
  return viaTensor([&] { return wrap(ctx, a).exp(ctx); });
}
RawTensor log(ExecContext& ctx, const RawTensor& a) {
  return viaTensor([&] { return wrap(ctx, a).log(ctx); });
}
RawTensor tanh(ExecContext& ctx, const RawTensor& a) {
  return viaTensor([&] { return wrap(ctx, a).tanh(ctx); });
}
RawTensor sumAll(ExecContext& ctx, const RawTensor& a) {
  return viaTensor([&] { return wrap(ctx, a).sumAll(ctx); });
}
RawTensor sum(ExecContext& ctx, const RawTensor& a, Tag axis) {
  return viaTensor([&] { return wrap(ctx, a).sum(ctx, axis); });
}
RawTensor dot(ExecContext& ctx, const RawTensor& a, const RawTensor& b, Tag axis) {
  return viaTensor([&] { return wrap(ctx, a).dot(ctx, wrap(ctx, b), axis); });
}
RawTensor sumTo(ExecContext& ctx, const RawTensor& a, const RawTensor& like) {
  return backend::sumTo(ctx, a, like.tags(), like.shape());
}

}  // namespace fucina::raw
