// Shared by the ops over named spatial axes (ops/conv.cpp, ops/pool.cpp): checks of their
// options and axes, with messages that name them.
#pragma once

#include <string>
#include <string_view>

#include "fucina/core/error.h"
#include "fucina/core/raw_tensor.h"
#include "fucina/core/shape.h"

namespace fucina::ops::spatial {

using internal::RawTensor;

inline std::string num(int64_t v) { return std::to_string(v); }

inline std::string listed(const Tags& tags) {
  std::string names;
  for (Tag t : tags) names += (names.empty() ? "" : ", ") + quoted(t);
  return names;
}

inline void requireDistinct(std::string_view op, const Tags& tags) {
  for (auto i = tags.begin(); i != tags.end(); ++i)
    for (auto j = i + 1; j != tags.end(); ++j)
      if (*i == *j)
        fail(ErrorCode::InvalidArgument, std::string(op) + ": axis " + quoted(*i) + " is named twice in the options");
}

inline void requireAxes(std::string_view op, const char* what, const RawTensor& a, const Tags& tags) {
  for (Tag t : tags)
    if (!hasTag(a.tags(), t))
      fail(ErrorCode::ShapeMismatch, std::string(op) + ": the " + what + " needs axes " + listed(tags) + ", got " + a.describe());
}

inline void requirePositive(std::string_view op, const char* what, int64_t v, int64_t min = 1) {
  if (v < min)
    fail(ErrorCode::InvalidArgument, std::string(op) + ": " + what + " must be >= " + num(min) + ", got " + num(v));
}

// Axes of a other than `spatial`, in a's order, and the product of their extents.
inline Tags otherAxes(const RawTensor& a, const Tags& spatial, Extents* shape, int64_t* count) {
  Tags out;
  *count = 1;
  for (size_t i = 0; i < a.rank(); ++i) {
    bool skip = false;
    for (Tag t : spatial) skip = skip || a.tags()[i] == t;
    if (skip) continue;
    out.push_back(a.tags()[i]);
    shape->push_back(a.shape()[i]);
    *count *= a.shape()[i];
  }
  return out;
}

}  // namespace fucina::ops::spatial
