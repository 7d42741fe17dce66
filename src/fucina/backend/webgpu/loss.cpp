// Label losses over rows of log-probabilities (the last axis of contiguous f32), at i64 labels
// in range (checked on the device: Note [Device faults]). The per-row losses are f32 here, where
// the cpu's are f64: WGSL has none, and the sum or mean over them (reduceLoss) is f32 too.
#include <string>

#include "fucina/backend/webgpu/pieces.h"
#include "fucina/backend/webgpu/primitives.h"
#include "fucina/backend/webgpu/wgsl.h"
#include "fucina/core/error.h"
#include "fucina/exec/context.h"

namespace fucina::backend::webgpu {
namespace {

// loss[r] = -lp[y] (plain), or -((1 - s)·lp[y] + s·mean(lp row)).
std::string rowsSource(bool plain) {
  return prelude(3) + readBinding(0, "lp") + readBinding(1, "ix", "u32") + writeBinding(2, "loss") + kIndexAt +
         rowKernelHead() + "  let s = uf(2u);\n  let at = lp[base + index_at(row, n)];\n" +
         (plain ? "  if (l == 0u) { loss[row] = -at; }\n"
                : "  var t = 0.0;\n"
                  "  for (var i = l; i < n; i = i + 256u) { t = t + lp[base + i]; }\n"
                  "  let mean = reduce(l, t, false) / f32(n);\n"
                  "  if (l == 0u) { loss[row] = -((1.0 - s) * at + s * mean); }\n") +
         "}\n";
}

// gx = f·(exp(lp) - target), target = (1 - s)·[c = y] + s/n; plain: -f at y, 0 elsewhere. f is
// gy[r] (rows) or gy[0]·scale (a scalar upstream gradient).
std::string vjpSource(bool plain) {
  const int lp = plain ? 0 : 1;
  std::string src = prelude(3 + lp) + (plain ? "" : readBinding(0, "lp")) + readBinding(lp, "ix", "u32") +
                    readBinding(lp + 1, "gy") + writeBinding(lp + 2, "gx") + kIndexAt + kMainSignature + " {\n  " +
                    kLinearIndex +
                    "\n  if (i >= uw(0u)) { return; }\n"
                    "  let n = uw(1u);\n  let s = uf(2u);\n  let r = i / n;\n  let c = i % n;\n"
                    "  var f = gy[0] * uf(3u);\n"
                    "  if (uw(4u) != 0u) { f = gy[r]; }\n"
                    "  let hit = select(0.0, 1.0, c == index_at(r, n));\n";
  return src + (plain ? "  gx[i] = -f * hit;\n}\n"
                      : "  gx[i] = f * (exp(lp[i]) - ((1.0 - s) * hit + s / f32(n)));\n}\n");
}

void requireLabels(const RawTensor& labels, int64_t rows) {
  if (labels.dtype() != DType::i64 || !labels.isContiguous() || labels.numel() != rows)
    fail(ErrorCode::InvalidArgument, "label losses take contiguous i64 labels, one per row; got " +
                                         std::string(name(labels.dtype())) + " " + labels.describe());
}

}  // namespace

RawTensor labelLossRows(ExecContext& ctx, const RawTensor& lp_in, const RawTensor& labels_in, double smoothing,
                        bool plain) {
  const RawTensor lp = rowsOf(ctx, lp_in, "label loss");
  const RowLayout l = rowLayout(lp);
  requireLabels(labels_in, l.rows);
  const RawTensor labels = whole(ctx, labels_in);
  RawTensor loss = RawTensor::empty(ctx, Tags(lp.tags().begin(), lp.tags().end() - 1),
                                    Extents(lp.shape().begin(), lp.shape().end() - 1));
  if (l.rows == 0) return loss;
  if (l.n == 0) fail(ErrorCode::InvalidArgument, "label loss over rows of no classes");
  const uint32_t buffers[3] = {bufferOf(lp, "label loss"), bufferOf(labels, "label loss"), bufferOf(loss, "label loss")};
  const uint64_t row_bytes[3] = {4 * static_cast<uint64_t>(l.n), 8, 4};
  dispatchRows(rowsSource(plain), buffers, l, static_cast<float>(smoothing), {}, row_bytes);
  return loss;
}

RawTensor labelLossRowsVjp(ExecContext& ctx, const RawTensor& lp_in, const RawTensor& labels_in,
                           const RawTensor& gy_in, float scale, double smoothing, bool plain) {
  const RowLayout l = rowLayout(lp_in);
  requireLabels(labels_in, l.rows);
  const RawTensor labels = whole(ctx, labels_in), gy = rowsOf(ctx, gy_in, "label loss VJP");
  const RawTensor lp = plain ? lp_in : rowsOf(ctx, lp_in, "label loss VJP");
  RawTensor gx = RawTensor::empty(ctx, lp.tags(), lp.shape());
  if (gx.numel() == 0) return gx;
  Uniforms u;
  u.u(static_cast<uint64_t>(gx.numel())).u(static_cast<uint64_t>(l.n)).f(static_cast<float>(smoothing)).f(scale);
  u.u(gy.rank() > 0 ? 1 : 0);
  std::vector<uint32_t> buffers;
  std::vector<uint64_t> row_bytes;  // in pieces of rows (Note [Bound in pieces])
  const uint64_t row = 4 * static_cast<uint64_t>(l.n);
  if (!plain) {
    buffers.push_back(bufferOf(lp, "label loss VJP"));
    row_bytes.push_back(row);
  }
  buffers.insert(buffers.end(), {bufferOf(labels, "label loss VJP"), bufferOf(gy, "label loss VJP"),
                                 bufferOf(gx, "label loss VJP")});
  row_bytes.insert(row_bytes.end(), {8, gy.rank() > 0 ? 4u : 0u, row});
  const uint32_t pipeline = Gpu::get().pipeline(vjpSource(plain));
  inRowPieces(buffers, row_bytes, l.rows, [&](int64_t, int64_t rows, std::span<const Window> windows) {
    u.set(0, static_cast<uint32_t>(rows * l.n));
    dispatchLinear(pipeline, buffers, u, rows * l.n, windows);
  });
  return gx;
}

}  // namespace fucina::backend::webgpu
