// Truth values element after element: each operand read as double in the result's row-major
// order (broadcast to it first), on the calling thread.
#include "fucina/backend/reference/logic.h"

#include "fucina/backend/logic_rows.h"

namespace fucina::backend::reference {

RawTensor logic(ExecContext& ctx, Kernels::Logic op, const Tags& tags, const Extents& shape, Inputs ins) {
  RawTensor out = RawTensor::empty(ctx, tags, shape, DType::u8);
  if (out.numel() == 0) return out;
  auto read = [&](size_t k) { return ins[k]->broadcastView(tags, shape).to(ctx, DType::f64); };
  logic::visit(
      op,
      [&](auto f) {
        const RawTensor a = read(0);
        for (int64_t i = 0; i < out.numel(); ++i) out.data<uint8_t>()[i] = f(a.data<double>()[i]);
      },
      [&](auto f) {
        if (logic::readsI64(ins)) {
          const RawTensor a = ins[0]->broadcastView(tags, shape).contiguous(ctx);
          const RawTensor b = ins[1]->broadcastView(tags, shape).contiguous(ctx);
          for (int64_t i = 0; i < out.numel(); ++i) out.data<uint8_t>()[i] = f(a.data<int64_t>()[i], b.data<int64_t>()[i]);
          return;
        }
        const RawTensor a = read(0), b = read(1);
        for (int64_t i = 0; i < out.numel(); ++i) out.data<uint8_t>()[i] = f(a.data<double>()[i], b.data<double>()[i]);
      });
  return out;
}

RawTensor truthRows(ExecContext& ctx, const RawTensor& truth, bool any) {
  const int64_t n = truth.shape().back();
  RawTensor out = RawTensor::empty(ctx, Tags(truth.tags().begin(), truth.tags().end() - 1),
                                   Extents(truth.shape().begin(), truth.shape().end() - 1), DType::u8);
  for (int64_t r = 0; r < out.numel(); ++r) out.data<uint8_t>()[r] = logic::truthRow(truth.data<uint8_t>() + r * n, n, any);
  return out;
}

RawTensor bandMask(ExecContext& ctx, Tag row, Tag col, int64_t rows, int64_t cols, int64_t lower, int64_t upper) {
  RawTensor out = RawTensor::empty(ctx, {row, col}, {rows, cols}, DType::u8);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) out.data<uint8_t>()[i * cols + j] = logic::inBand(i, j, lower, upper);
  return out;
}

}  // namespace fucina::backend::reference
