// Truth values over the host's typed maps (mapTo reads every operand as double); the row
// reductions and the band on the calling thread.
#include "fucina/backend/cpu/logic.h"

#include "fucina/backend/cpu/elementwise.h"
#include "fucina/backend/logic_rows.h"

namespace fucina::kernels {

using internal::RawTensor;

RawTensor logic(ExecContext& ctx, backend::Kernels::Logic op, const Tags& tags, const Extents& shape,
                backend::Inputs ins) {
  return backend::logic::visit(
      op,
      [&](auto f) {
        return mapTo<uint8_t, double, 1>(ctx, tags, shape, {ins[0]}, [f](double v) { return uint8_t(f(v)); });
      },
      [&](auto f) {
        if (backend::logic::readsI64(ins))
          return mapTo<uint8_t, int64_t, 2>(ctx, tags, shape, {ins[0], ins[1]},
                                            [f](int64_t p, int64_t q) { return uint8_t(f(p, q)); });
        return mapTo<uint8_t, double, 2>(ctx, tags, shape, {ins[0], ins[1]},
                                         [f](double p, double q) { return uint8_t(f(p, q)); });
      });
}

RawTensor truthRows(ExecContext& ctx, const RawTensor& truth, bool any) {
  const int64_t n = truth.shape().back();
  Tags tags(truth.tags().begin(), truth.tags().end() - 1);
  Extents shape(truth.shape().begin(), truth.shape().end() - 1);
  RawTensor out = RawTensor::empty(ctx, tags, shape, DType::u8);
  const uint8_t* src = truth.data<uint8_t>();
  uint8_t* dst = out.data<uint8_t>();
  for (int64_t r = 0; r < out.numel(); ++r) dst[r] = backend::logic::truthRow(src + r * n, n, any);
  return out;
}

RawTensor bandMask(ExecContext& ctx, Tag row, Tag col, int64_t rows, int64_t cols, int64_t lower, int64_t upper) {
  RawTensor out = RawTensor::empty(ctx, {row, col}, {rows, cols}, DType::u8);
  uint8_t* p = out.data<uint8_t>();
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) p[i * cols + j] = backend::logic::inBand(i, j, lower, upper);
  return out;
}

}  // namespace fucina::kernels
