// Elementwise maps over named-axis tensors: inputs are aligned to the output's axes by tag
// (missing axes broadcast with stride 0), any strides are accepted, the output is a new
// contiguous tensor (f32, or the element type of mapAs/mapTo). The cpu backend runs the rows of
// backend/elementwise_table.h through these, and the ops not yet written as rows call them with
// a scalar lambda.
#pragma once

#include <array>
#include <span>
#include <string>
#include <type_traits>

#include "fucina/backend/elementwise_table.h"
#include "fucina/backend/scalar_loop.h"
#include "fucina/core/error.h"
#include "fucina/core/raw_tensor.h"
#include "fucina/exec/context.h"
#include "fucina/backend/cpu/copy.h"
#include "fucina/backend/cpu/strided.h"
#include "fucina/backend/cpu/vector_ops.h"

namespace fucina::kernels {

// Elements per parallel chunk: below this, threads cost more than they save.
inline constexpr int64_t kElementwiseGrain = 32 * 1024;

// out[i] = f(in_0[i], ..., in_{K-1}[i]) over out's axes. Each input's axes must be a subset of
// out's with the same extents (ops check this first with alignShapes for good messages).
//
// The f32 map: any strides, SIMD twins where the inputs allow, split over ctx's pool.
template <size_t K, class F>
internal::RawTensor map(ExecContext& ctx, const Tags& tags, const Extents& shape,
                        const std::array<const internal::RawTensor*, K>& ins, F f, backend::SimdForm simd = {}) {
  internal::RawTensor out = internal::RawTensor::empty(ctx, tags, shape, DType::f32);
  if (out.numel() == 0) return out;
  std::array<internal::RawTensor, K> views;
  std::array<const std::vector<int64_t>*, K + 1> strides;
  std::array<const float*, K> base;
  for (size_t k = 0; k < K; ++k) {
    views[k] = ins[k]->broadcastView(tags, shape);
    strides[k] = &views[k].strides();
    base[k] = views[k].f32();
  }
  strides[K] = &out.strides();
  const auto plan = planStrided<K + 1>(shape, strides);
  float* dst = out.f32();
  const bool use_simd = simd.op != vec::Op::none && vec::enabled();
  const bool binary = vec::isBinary(simd.op);
  forEachRowParallel(&ctx, plan, kElementwiseGrain, [&](const auto& off, int64_t n, const auto& st) {
    float* o = dst + off[K];
    if (use_simd && st[K] == 1 && (st[simd.x] == 0 || st[simd.x] == 1) &&
        (!binary || st[simd.y] == 0 || st[simd.y] == 1)) {
      vec::run(simd.op, n, base[simd.x] + off[simd.x], st[simd.x],
               binary ? base[simd.y] + off[simd.y] : nullptr, binary ? st[simd.y] : 0, o);
      return;
    }
    bool unit = true;
    for (size_t k = 0; k < K; ++k) unit = unit && st[k] == 1;
    if (unit) {  // the common case, kept simple so the compiler vectorizes it
      std::array<const float*, K> p;
      for (size_t k = 0; k < K; ++k) p[k] = base[k] + off[k];
      for (int64_t i = 0; i < n; ++i)
        o[i] = [&]<size_t... I>(std::index_sequence<I...>) { return f(p[I][i]...); }(
            std::make_index_sequence<K>{});
    } else {
      for (int64_t i = 0; i < n; ++i)
        o[i] = [&]<size_t... I>(std::index_sequence<I...>) {
          return f(base[I][off[I] + i * st[I]]...);
        }(std::make_index_sequence<K>{});
    }
  });
  return out;
}

// The other element types (the f64, integer and compare paths, Note [Dtype rules]): each input
// is first copied, converted to T, into a dense tensor of out's shape (broadcasts materialized),
// then one flat loop writes Out. Simple on purpose: these paths are not the hot ones, and each
// op instantiates this for several types, so a lean body keeps the wasm binary small.
template <class Out, class T, size_t K, class F>
internal::RawTensor mapTo(ExecContext& ctx, const Tags& tags, const Extents& shape,
                          const std::array<const internal::RawTensor*, K>& ins, F f) {
  internal::RawTensor out = internal::RawTensor::empty(ctx, tags, shape, dtypeOf<Out>());
  if (out.numel() == 0) return out;
  std::array<internal::RawTensor, K> dense;
  std::array<const T*, K> p;
  for (size_t k = 0; k < K; ++k) {
    dense[k] = internal::RawTensor::empty(ctx, tags, shape, dtypeOf<T>());
    copyConvert(ins[k]->broadcastView(tags, shape), dense[k], &ctx);
    p[k] = dense[k].template data<T>();
  }
  Out* o = out.data<Out>();
  ctx.parallelFor(out.numel(), kElementwiseGrain, [&](int64_t begin, int64_t end) {
    // Not vectorized or unrolled: per type and op, those copies of the loop cost more binary size
    // (wasm) than these paths are worth in speed.
    FUCINA_SCALAR_LOOP
    for (int64_t i = begin; i < end; ++i)
      o[i] = [&]<size_t... I>(std::index_sequence<I...>) { return static_cast<Out>(f(p[I][i]...)); }(
          std::make_index_sequence<K>{});
  });
  return out;
}

template <class T, size_t K, class F>
internal::RawTensor mapAs(ExecContext& ctx, const Tags& tags, const Extents& shape,
                          const std::array<const internal::RawTensor*, K>& ins, F f) {
  return mapTo<T, T, K>(ctx, tags, shape, ins, f);
}

// Unary convenience: same axes as a.
template <class F>
internal::RawTensor map1(ExecContext& ctx, const internal::RawTensor& a, F f, backend::SimdForm simd = {}) {
  return map<1>(ctx, a.tags(), a.shape(), {&a}, f, simd);
}

// dst[i] = f(dst[i], src[i]) for f32 dst (any strides, written in place) and src broadcast to its
// axes by tag; split over ctx's pool like map. The in-place helpers' loop (ops/inplace.cpp).
template <class F>
void updateInto(ExecContext& ctx, const internal::RawTensor& dst, const internal::RawTensor& src, F f) {
  if (dst.numel() == 0) return;
  const internal::RawTensor view = src.broadcastView(dst.tags(), dst.shape());
  const auto plan = planStrided<2>(dst.shape(), {&view.strides(), &dst.strides()});
  const float* s = view.f32();
  float* d = dst.f32();
  forEachRowParallel(&ctx, plan, kElementwiseGrain, [&](const auto& off, int64_t n, const auto& st) {
    float* q = d + off[1];
    const float* r = s + off[0];
    if (st[1] == 1 && st[0] == 1) {
      for (int64_t i = 0; i < n; ++i) q[i] = f(q[i], r[i]);
    } else {
      for (int64_t i = 0; i < n; ++i) q[i * st[1]] = f(q[i * st[1]], r[i * st[0]]);
    }
  });
}

// dst += src elementwise; dst contiguous f32 and exclusively owned, src the same axes/extents.
// Split over ctx's pool like map (any split gives the same values).
void addInto(ExecContext& ctx, const internal::RawTensor& dst, const internal::RawTensor& src);

}  // namespace fucina::kernels
