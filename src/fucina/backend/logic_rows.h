// The truth functions of Kernels::logic over doubles, and one row of truthRows; shared by the
// backends, which differ only in how they walk and split the elements.
#pragma once

#include <cmath>
#include <cstdint>

#include "fucina/backend/kernels.h"

namespace fucina::backend::logic {

// Calls unary(f) with f(double) -> bool, or binary(f) with f(T, T) -> bool generic over the
// element type read (double, or int64_t for two i64 operands), for op: a lambda per op, so each
// backend's loop is instantiated with the function inlined.
template <class Unary, class Binary>
decltype(auto) visit(Kernels::Logic op, Unary&& unary, Binary&& binary) {
  using L = Kernels::Logic;
  switch (op) {
    case L::isnan: return unary([](double v) { return std::isnan(v); });
    case L::isinf: return unary([](double v) { return std::isinf(v); });
    case L::isfinite: return unary([](double v) { return std::isfinite(v); });
    case L::truth: return unary([](double v) { return v != 0; });
    case L::logicalNot: return unary([](double v) { return v == 0; });
    case L::logicalAnd: return binary([](auto p, auto q) { return p != 0 && q != 0; });
    case L::logicalOr: return binary([](auto p, auto q) { return p != 0 || q != 0; });
    case L::logicalXor: return binary([](auto p, auto q) { return (p != 0) != (q != 0); });
    case L::eq: return binary([](auto p, auto q) { return p == q; });
    case L::ne: return binary([](auto p, auto q) { return p != q; });
    case L::lt: return binary([](auto p, auto q) { return p < q; });
    case L::le: return binary([](auto p, auto q) { return p <= q; });
    case L::gt: return binary([](auto p, auto q) { return p > q; });
    case L::ge: return binary([](auto p, auto q) { return p >= q; });
  }
  return unary([](double) { return false; });
}

// Whether a binary op reads its two operands as i64 (both are i64) rather than as double.
inline bool readsI64(Inputs ins) {
  return ins.size() == 2 && ins[0]->dtype() == DType::i64 && ins[1]->dtype() == DType::i64;
}

// any (or all) of n truth values; the empty any is false, the empty all true.
inline uint8_t truthRow(const uint8_t* src, int64_t n, bool any) {
  bool v = !any;
  for (int64_t i = 0; i < n && v != any; ++i)
    if (bool(src[i]) == any) v = any;
  return v;
}

inline uint8_t inBand(int64_t i, int64_t j, int64_t lower, int64_t upper) {
  return (lower < 0 || i - j <= lower) && (upper < 0 || j - i <= upper);
}

}  // namespace fucina::backend::logic
