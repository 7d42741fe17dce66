#include "fucina/backend/cpu/conv_xnnpack.h"

#ifdef FUCINA_HAVE_XNNPACK
#include <xnnpack.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <memory>

#include "fucina/core/error.h"
#include "fucina/core/storage.h"
#include "fucina/exec/claims.h"
#endif

#include "fucina/exec/context.h"

namespace fucina::kernels {

#ifdef FUCINA_HAVE_XNNPACK

namespace {

bool initialized() {
  static const bool ok = xnn_initialize(nullptr) == xnn_status_success;
  return ok;
}

using Operator = std::unique_ptr<xnn_operator, decltype(&xnn_delete_operator)>;

// XNNPACK's operator for p (its weights packed from w), or null when XNNPACK refuses p.
Operator makeOperator(const ConvPlan& p, const float* w) {
  const Conv2dGeometry& g = p.g;
  auto u32 = [](int64_t v) { return static_cast<uint32_t>(v); };
  auto sz = [](int64_t v) { return static_cast<size_t>(v); };
  // The weight [OC, kh, kw, C/G] is XNNPACK's [groups, OC/G, kh, kw, C/G]; no bias, no clamp.
  xnn_operator_t op = nullptr;
  if (xnn_create_convolution2d_nhwc_f32(u32(g.pad_h), u32(g.pad_w), u32(g.pad_h), u32(g.pad_w), u32(g.kh), u32(g.kw),
                                        u32(g.stride_h), u32(g.stride_w), u32(g.dilation_h), u32(g.dilation_w),
                                        u32(p.G), sz(g.channels / p.G), sz(p.OC / p.G), sz(g.channels), sz(p.OC), w,
                                        nullptr, -INFINITY, INFINITY, 0, &op) != xnn_status_success)
    op = nullptr;
  return Operator(op, xnn_delete_operator);
}

// Images [first, first + count) through op on the calling thread.
bool runImages(const ConvPlan& p, xnn_operator_t op, const float* x, float* y, int64_t first, int64_t count) {
  const Conv2dGeometry& g = p.g;
  return xnn_setup_convolution2d_nhwc_f32(op, static_cast<size_t>(count), static_cast<size_t>(g.height),
                                          static_cast<size_t>(g.width), x + first * p.imageFloats(),
                                          y + first * p.positions() * p.OC, nullptr) == xnn_status_success &&
         xnn_run_operator(op, nullptr) == xnn_status_success;
}

}  // namespace

// The images are cut into one chunk per thread, run on our pool (no second thread pool), each
// chunk on an operator of its own: an operator's setup binds its batch, so one cannot serve two
// threads at once. Every output is one sum in XNNPACK's order whatever the chunk holding its
// image, so the cut (which depends on the thread count) changes no bit.
bool xnnpackConv2d(ExecContext& ctx, const ConvPlan& p, const internal::RawTensor& images, const float* w, float* y) {
  const Conv2dGeometry& g = p.g;
  if (!p.channels_last || p.G < 1 || g.channels == 0 || p.N == 0 || !initialized()) return false;
  const size_t end = static_cast<size_t>(images.offset() + images.numel()) * sizeof(float);
  if (MemoryAccount::blockSize(images.storage()->bytes()) < end + XNN_EXTRA_BYTES) return false;
  const float* x = images.f32();
  // Each call packs the weight into a new operator (a training step changes it): below ~4M
  // multiply-adds that costs more than XNNPACK saves (W6 at batch 1: 0.123 against 0.117 ms).
  if (static_cast<double>(p.N) * static_cast<double>(p.positions()) * static_cast<double>(p.OC) *
          static_cast<double>(p.groupDepth()) < kXnnpackMinWork)
    return false;
  for (int64_t v : {g.pad_h, g.pad_w, g.kh, g.kw, g.stride_h, g.stride_w, g.dilation_h, g.dilation_w, p.G})
    if (v < 0 || v > int64_t{UINT32_MAX}) return false;
  const Operator first = makeOperator(p, w);  // on this thread: a refusal leaves y untouched
  if (!first) return false;
  const int64_t chunks = std::min<int64_t>(p.N, ctx.threads());
  auto chunk = [&](int64_t c) {
    const int64_t begin = c * p.N / chunks, end = (c + 1) * p.N / chunks;
    const Operator own = c == 0 ? Operator(nullptr, xnn_delete_operator) : makeOperator(p, w);
    if ((c != 0 && !own) || !runImages(p, c == 0 ? first.get() : own.get(), x, y, begin, end - begin))
      fail(ErrorCode::OutOfMemory, "conv2d: XNNPACK could not run a convolution it had accepted (out of memory)");
  };
  if (chunks == 1) {
    chunk(0);
  } else {
    claimedFor(ctx, chunks, chunks, [&](int64_t begin, int64_t end) {
      for (int64_t c = begin; c < end; ++c) chunk(c);
    });
  }
  return true;
}

#else

bool xnnpackConv2d(ExecContext&, const ConvPlan&, const internal::RawTensor&, const float*, float*) { return false; }

#endif

}  // namespace fucina::kernels
