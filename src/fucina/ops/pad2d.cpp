// zeroPad2d and constantPad2d: torch.nn.functional.pad on two named axes. Not built
// on Tensor::pad, which refuses negative pads: here a negative pad crops, as in torch, so each
// axis keeps one overlapping run of the input (possibly empty) and the rest is `value`. The VJP
// copies the gradient of that run back into zeros.
#include <algorithm>
#include <string>

#include "fucina/backend/kernels.h"
#include "fucina/ops/finish_op.h"
#include "fucina/ops/typed.h"

namespace fucina {

using internal::RawTensor;
using ops::Grads;
using ops::NeedsGrad;

namespace {

// Along one axis of extent n padded by (before, after): the result's extent, and the run of
// `length` input elements from `from` that lands at `to` in the result.
struct PadRun {
  int64_t extent, from, to, length;
};

PadRun padRun(std::string_view op, const RawTensor& a, Tag axis, int64_t before, int64_t after) {
  const int64_t n = a.extent(axis);
  const int64_t m = checkedAdd(n, checkedAdd(before, after, op), op);
  if (m < 0)
    fail(ErrorCode::InvalidArgument, std::string(op) + " of " + a.describe() + ": pads (" + std::to_string(before) +
                                         ", " + std::to_string(after) + ") on " + quoted(axis) +
                                         " crop more than its extent");
  // Cropping `before` < 0 skips -before input elements (at most n, so that -before cannot overflow).
  const int64_t from = before < 0 ? (before < -n ? n : -before) : 0;
  const int64_t to = before > 0 ? std::min(before, m) : 0;
  const int64_t length = std::max<int64_t>(0, std::min(n - from, m - to));
  return {m, from, to, length};
}

RawTensor run2d(const RawTensor& t, Tag h, Tag w, const PadRun& rh, const PadRun& rw, bool input) {
  return t.narrowed(h, input ? rh.from : rh.to, rh.length).narrowed(w, input ? rw.from : rw.to, rw.length);
}

Tensor pad2d(ExecContext& ctx, std::string_view op, const Tensor& x, Tag h, Tag w, std::array<int64_t, 4> pads,
             double value) {
  const RawTensor& a = x.value();
  const size_t ph = a.axis(h), pw = a.axis(w);
  if (h == w) fail(ErrorCode::InvalidArgument, std::string(op) + " of " + a.describe() + ": h and w are both " + quoted(h));
  ops::refuseQ8(op, a);
  const PadRun rw = padRun(op, a, w, pads[0], pads[1]), rh = padRun(op, a, h, pads[2], pads[3]);
  Extents shape = a.shape();
  shape[ph] = rh.extent;
  shape[pw] = rw.extent;
  validateShape(a.tags(), shape, op);
  RawTensor out = RawTensor::full(ctx, a.tags(), shape, value, a.dtype());
  backend::kernelsOf(ctx).copy(ctx, run2d(a, h, w, rh, rw, true), run2d(out, h, w, rh, rw, false));
  return ops::finishOp(ctx, op, out, {&x}, [&] {
    return [tags = a.tags(), in_shape = a.shape(), h, w, rh, rw](ExecContext& c, const RawTensor& gy, NeedsGrad,
                                                                  Grads g) {
      RawTensor full = RawTensor::zeros(c, tags, in_shape);
      backend::kernelsOf(c).copy(c, run2d(gy.permuted(tags), h, w, rh, rw, false), run2d(full, h, w, rh, rw, true));
      g[0] = std::move(full);
    };
  }, static_cast<size_t>(out.numel()));
}

}  // namespace

Tensor Tensor::zeroPad2d(ExecContext& ctx, Tag h_axis, Tag w_axis, std::array<int64_t, 4> pads) const {
  return pad2d(ctx, "zeroPad2d", *this, h_axis, w_axis, pads, 0.0);
}

Tensor Tensor::constantPad2d(ExecContext& ctx, Tag h_axis, Tag w_axis, std::array<int64_t, 4> pads, double value) const {
  return pad2d(ctx, "constantPad2d", *this, h_axis, w_axis, pads, value);
}

}  // namespace fucina
