#include "fucina/backend/cpu/conv_xnnpack.h"

#ifdef FUCINA_HAVE_XNNPACK
#include <pthreadpool.h>
#include <xnnpack.h>

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#endif

#include "fucina/exec/context.h"

namespace fucina::kernels {

#ifdef FUCINA_HAVE_XNNPACK

namespace {

bool initialized() {
  static const bool ok = xnn_initialize(nullptr) == xnn_status_success;
  return ok;
}

// One pthreadpool per thread count, made on first use and kept (a pool per call would start and
// join its threads every convolution).
pthreadpool_t poolFor(int threads) {
  if (threads <= 1) return nullptr;
  static std::mutex mutex;
  static std::map<int, pthreadpool_t> pools;
  const std::lock_guard<std::mutex> lock(mutex);
  pthreadpool_t& pool = pools[threads];
  if (pool == nullptr) pool = pthreadpool_create(static_cast<size_t>(threads));
  return pool;
}

}  // namespace

bool xnnpackConv2d(ExecContext& ctx, const ConvPlan& p, const float* x, const float* w, float* y) {
  const Conv2dGeometry& g = p.g;
  if (!p.channels_last || p.G < 1 || g.channels == 0 || !initialized()) return false;
  for (int64_t v : {g.pad_h, g.pad_w, g.kh, g.kw, g.stride_h, g.stride_w, g.dilation_h, g.dilation_w, p.G})
    if (v < 0 || v > int64_t{UINT32_MAX}) return false;
  auto u32 = [](int64_t v) { return static_cast<uint32_t>(v); };
  auto sz = [](int64_t v) { return static_cast<size_t>(v); };
  // The weight [OC, kh, kw, C/G] is XNNPACK's [groups, OC/G, kh, kw, C/G]; no bias, no clamp.
  xnn_operator_t op = nullptr;
  if (xnn_create_convolution2d_nhwc_f32(u32(g.pad_h), u32(g.pad_w), u32(g.pad_h), u32(g.pad_w), u32(g.kh), u32(g.kw),
                                        u32(g.stride_h), u32(g.stride_w), u32(g.dilation_h), u32(g.dilation_w),
                                        u32(p.G), sz(g.channels / p.G), sz(p.OC / p.G), sz(g.channels), sz(p.OC), w,
                                        nullptr, -INFINITY, INFINITY, 0, &op) != xnn_status_success)
    return false;
  const std::unique_ptr<xnn_operator, decltype(&xnn_delete_operator)> owned(op, xnn_delete_operator);
  pthreadpool_t pool = poolFor(ctx.threads());
  return xnn_setup_convolution2d_nhwc_f32(op, sz(p.N), sz(g.height), sz(g.width), x, y, pool) == xnn_status_success &&
         xnn_run_operator(op, pool) == xnn_status_success;
}

#else

bool xnnpackConv2d(ExecContext&, const ConvPlan&, const float*, const float*, float*) { return false; }

#endif

}  // namespace fucina::kernels
