// Elementwise maps over named-axis tensors: inputs are aligned to the output's axes by tag
// (missing axes broadcast with stride 0), any strides are accepted, the output is a new
// contiguous tensor (f32, or the element type of mapAs). Every pointwise op and its VJP is one call with a scalar lambda.
#pragma once

#include <array>
#include <span>
#include <string>
#include <type_traits>

#include "fucina/core/error.h"
#include "fucina/core/raw_tensor.h"
#include "fucina/exec/context.h"
#include "fucina/kernels/strided.h"
#include "fucina/kernels/vector_ops.h"

namespace fucina::kernels {

struct AlignedShape {
  Tags tags;
  Extents shape;
};

// Output axes of a binary op: a's axes, then b's axes that a lacks. Shared axes must agree in
// extent, else ShapeMismatch naming both shapes and the axis.
AlignedShape alignShapes(std::string_view op, const internal::RawTensor& a,
                         const internal::RawTensor& b);

// Elements per parallel chunk: below this, threads cost more than they save.
inline constexpr int64_t kElementwiseGrain = 32 * 1024;

// The SIMD twin of a map's scalar function (vector_ops.h), if it has one: `op` applied to input
// x (and input y when the op is binary). Runs where those inputs have stride 0 or 1 use it.
struct VecMap {
  vec::Op op = vec::Op::none;
  uint8_t x = 0, y = 1;
};

// The dtype that stores elements of type T (the maps below work in T).
template <class T>
constexpr DType dtypeOf() {
  if constexpr (std::is_same_v<T, float>) return DType::f32;
  else if constexpr (std::is_same_v<T, double>) return DType::f64;
  else if constexpr (std::is_same_v<T, int32_t>) return DType::i32;
  else if constexpr (std::is_same_v<T, int64_t>) return DType::i64;
  else {
    static_assert(std::is_same_v<T, uint8_t>, "no dtype stores this element type");
    return DType::u8;
  }
}

// Typed pointer to t's first element after checking that t stores T.
template <class T>
const T* elementsOf(const internal::RawTensor& t) {
  if constexpr (std::is_same_v<T, float>) {
    return t.f32();
  } else {
    if (t.dtype() != dtypeOf<T>())
      fail(ErrorCode::DTypeMismatch, "expected a " + std::string(name(dtypeOf<T>())) + " tensor, got " +
                                         std::string(name(t.dtype())) + " " + t.describe());
    return t.data<T>();
  }
}

// out[i] = f(in_0[i], ..., in_{K-1}[i]) over out's axes, every input and the output holding T
// (f32 for `map`; the f64 and integer paths of pointwise ops use mapAs<double> etc., without SIMD).
// Each input's axes must be a subset of out's with the same extents (ops check this first with
// alignShapes for good messages).
// mapTo writes Out elements from In inputs (compare's u8 results).
template <class Out, class T, size_t K, class F>
internal::RawTensor mapTo(ExecContext& ctx, const Tags& tags, const Extents& shape,
                          const std::array<const internal::RawTensor*, K>& ins, F f, VecMap simd = {}) {
  internal::RawTensor out = internal::RawTensor::empty(ctx, tags, shape, dtypeOf<Out>());
  if (out.numel() == 0) return out;
  std::array<internal::RawTensor, K> views;
  std::array<const std::vector<int64_t>*, K + 1> strides;
  std::array<const T*, K> base;
  for (size_t k = 0; k < K; ++k) {
    views[k] = ins[k]->broadcastView(tags, shape);
    strides[k] = &views[k].strides();
    base[k] = elementsOf<T>(views[k]);
  }
  strides[K] = &out.strides();
  const auto plan = planStrided<K + 1>(shape, strides);
  Out* dst = out.data<Out>();
  constexpr bool kF32 = std::is_same_v<T, float> && std::is_same_v<Out, float>;
  const bool use_simd = kF32 && simd.op != vec::Op::none && vec::enabled();
  const bool binary = vec::isBinary(simd.op);
  forEachRowParallel(&ctx, plan, kElementwiseGrain, [&](const auto& off, int64_t n, const auto& st) {
    Out* o = dst + off[K];
    if constexpr (kF32) {
      if (use_simd && st[K] == 1 && (st[simd.x] == 0 || st[simd.x] == 1) &&
          (!binary || st[simd.y] == 0 || st[simd.y] == 1)) {
        vec::run(simd.op, n, base[simd.x] + off[simd.x], st[simd.x],
                 binary ? base[simd.y] + off[simd.y] : nullptr, binary ? st[simd.y] : 0, o);
        return;
      }
    }
    bool unit = true;
    for (size_t k = 0; k < K; ++k) unit = unit && st[k] == 1;
    if (unit) {  // the common case, kept simple so the compiler vectorizes it
      std::array<const T*, K> p;
      for (size_t k = 0; k < K; ++k) p[k] = base[k] + off[k];
      for (int64_t i = 0; i < n; ++i)
        o[i] = [&]<size_t... I>(std::index_sequence<I...>) { return static_cast<Out>(f(p[I][i]...)); }(
            std::make_index_sequence<K>{});
    } else {
      for (int64_t i = 0; i < n; ++i)
        o[i] = [&]<size_t... I>(std::index_sequence<I...>) {
          return static_cast<Out>(f(base[I][off[I] + i * st[I]]...));
        }(std::make_index_sequence<K>{});
    }
  });
  return out;
}

template <class T, size_t K, class F>
internal::RawTensor mapAs(ExecContext& ctx, const Tags& tags, const Extents& shape,
                          const std::array<const internal::RawTensor*, K>& ins, F f, VecMap simd = {}) {
  return mapTo<T, T, K>(ctx, tags, shape, ins, f, simd);
}

// The f32 map every op and VJP uses.
template <size_t K, class F>
internal::RawTensor map(ExecContext& ctx, const Tags& tags, const Extents& shape,
                        const std::array<const internal::RawTensor*, K>& ins, F f, VecMap simd = {}) {
  return mapAs<float, K>(ctx, tags, shape, ins, f, simd);
}

// Unary convenience: same axes as a.
template <class F>
internal::RawTensor map1(ExecContext& ctx, const internal::RawTensor& a, F f, VecMap simd = {}) {
  return map<1>(ctx, a.tags(), a.shape(), {&a}, f, simd);
}

// Binary convenience: axes aligned by tag (see alignShapes).
template <class F>
internal::RawTensor map2(ExecContext& ctx, std::string_view op, const internal::RawTensor& a,
                         const internal::RawTensor& b, F f, VecMap simd = {}) {
  const AlignedShape s = alignShapes(op, a, b);
  return map<2>(ctx, s.tags, s.shape, {&a, &b}, f, simd);
}

// dst += src elementwise; dst contiguous f32 and exclusively owned, src the same axes/extents.
// Split over ctx's pool like map (any split gives the same values).
void addInto(ExecContext& ctx, const internal::RawTensor& dst, const internal::RawTensor& src);

}  // namespace fucina::kernels
