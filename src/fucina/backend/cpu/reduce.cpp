#include "fucina/backend/cpu/reduce.h"

#include <cmath>
#include <vector>

#include "fucina/core/error.h"
#include "fucina/exec/context.h"
#include "fucina/backend/cpu/strided.h"
#include "fucina/backend/cpu/vector_ops.h"

namespace fucina::kernels {

using internal::RawTensor;

namespace {
constexpr int64_t kReduceGrain = 32 * 1024;  // elements per parallel chunk
constexpr int64_t kMaxRowBlocks = 16, kMinRowsPerBlock = 32;  // Note [Row blocks]
}  // namespace

RawTensor sumAxes(ExecContext& ctx, const RawTensor& a, const Tags& axes) {
  Tags kept_tags;
  Extents kept_shape;
  for (Tag tag : axes) a.axis(tag);  // every reduced axis must exist
  for (size_t i = 0; i < a.rank(); ++i) {
    if (hasTag(axes, a.tags()[i])) continue;
    kept_tags.push_back(a.tags()[i]);
    kept_shape.push_back(a.shape()[i]);
  }
  RawTensor out = RawTensor::empty(ctx, kept_tags, kept_shape, DType::f32);
  const int64_t out_n = out.numel();
  const Scratch<double> acc(ctx.account(), static_cast<size_t>(out_n), 0.0);
  if (a.numel() > 0) {
    // Strides of the accumulator seen from a's axes: 0 along reduced axes.
    const std::vector<int64_t> kept_strides = contiguousStrides(kept_shape);
    std::vector<int64_t> acc_strides(a.rank(), 0);
    for (size_t i = 0, j = 0; i < a.rank(); ++i)
      if (!hasTag(axes, a.tags()[i])) acc_strides[i] = kept_strides[j++];
    const auto plan = planStrided<2>(a.shape(), {&a.strides(), &acc_strides});
    const float* src = a.f32();
    const int64_t rows = plan.outer(), n = plan.inner();
    const bool simd = vec::enabled();
    if (plan.strides[1].back() == 0) {
      // Each row sums into one output: row sums in parallel, then added in row order, so the
      // result does not depend on the thread count.
      const Scratch<double> sums(ctx.account(), static_cast<size_t>(rows));
      const Scratch<int64_t> target(ctx.account(), static_cast<size_t>(rows));
      ctx.parallelFor(rows, std::max<int64_t>(1, kReduceGrain / n), [&](int64_t begin, int64_t end) {
        int64_t r = begin;
        forEachRow(plan, begin, end, [&](const auto& off, int64_t len, const auto& st) {
          double s = 0;
          if (simd && st[0] == 1) {
            s = vec::sumRow(src + off[0], len);
          } else {
            for (int64_t i = 0; i < len; ++i) s += src[off[0] + i * st[0]];
          }
          sums[static_cast<size_t>(r)] = s;
          target[static_cast<size_t>(r)] = off[1];
          ++r;
        });
      });
      for (int64_t r = 0; r < rows; ++r) acc[static_cast<size_t>(target[static_cast<size_t>(r)])] += sums[static_cast<size_t>(r)];
    } else {
      // Note [Row blocks]: each row adds into distinct outputs, one per column. Rows are cut into
      // a number of blocks fixed by the shape alone; each block sums its rows in order into its
      // own partial, and the partials are added in block order, so the result does not depend on
      // the thread count. Splitting the columns instead (each thread reading a part of every row)
      // made 2 threads slower than 1 on W3's bias gradients (2048×384: 55 → 78 µs).
      // With too few rows to block, long rows are split by columns, every output still summing
      // its rows in order.
      auto addRows = [&](int64_t r0, int64_t r1, int64_t c0, int64_t c1, double* into) {
        forEachRow(plan, r0, r1, [&](const auto& off, int64_t, const auto& st) {
          double* dst = into + off[1];
          if (simd && st[0] == 1 && st[1] == 1) {
            vec::addToF64(src + off[0] + c0, c1 - c0, dst + c0);
          } else {
            for (int64_t i = c0; i < c1; ++i) dst[i * st[1]] += src[off[0] + i * st[0]];
          }
        });
      };
      const int64_t blocks = std::min({kMaxRowBlocks, rows / kMinRowsPerBlock, (rows * n + kReduceGrain - 1) / kReduceGrain});
      if (blocks <= 1) {
        ctx.parallelFor(n, std::max<int64_t>(1, kReduceGrain / std::max<int64_t>(1, rows)),
                        [&](int64_t c0, int64_t c1) { addRows(0, rows, c0, c1, acc.data()); });
      } else {
        const Scratch<double> partial(ctx.account(), static_cast<size_t>(blocks * out_n), 0.0);
        ctx.parallelFor(blocks, 1, [&](int64_t b0, int64_t b1) {
          for (int64_t b = b0; b < b1; ++b) addRows(rows * b / blocks, rows * (b + 1) / blocks, 0, n, partial.data() + b * out_n);
        });
        ctx.parallelFor(out_n, kReduceGrain / blocks, [&](int64_t i0, int64_t i1) {
          for (int64_t b = 0; b < blocks; ++b) {
            const double* pb = partial.data() + b * out_n;
            for (int64_t i = i0; i < i1; ++i) acc[static_cast<size_t>(i)] += pb[i];
          }
        });
      }
    }
  }
  float* o = out.f32();
  for (int64_t i = 0; i < out_n; ++i) o[i] = static_cast<float>(acc[static_cast<size_t>(i)]);
  return out;
}

}  // namespace fucina::kernels

namespace fucina::kernels {

namespace {

// Calls line(src, src_stride, dst, dst_stride, n) for every line of a along axis `ax`. dst is
// contiguous f32 with a's axes in a's order, either keeping the axis (keep) or without it (then
// dst_stride is 0 and dst points at the line's single output element).
template <class Line>
void forEachLine(const RawTensor& a, size_t ax, const RawTensor& dst, bool keep, Line&& line) {
  if (a.numel() == 0 && dst.numel() == 0) return;
  Extents outer_shape;
  std::vector<int64_t> src_strides, dst_strides;
  const std::vector<int64_t> full = contiguousStrides(a.shape());
  std::vector<int64_t> dropped_shape;
  for (size_t i = 0; i < a.rank(); ++i)
    if (i != ax) dropped_shape.push_back(a.shape()[i]);
  const std::vector<int64_t> dropped = contiguousStrides(dropped_shape);
  for (size_t i = 0, j = 0; i < a.rank(); ++i) {
    if (i == ax) continue;
    outer_shape.push_back(a.shape()[i]);
    src_strides.push_back(a.strides()[i]);
    dst_strides.push_back(keep ? full[i] : dropped[j]);
    ++j;
  }
  const int64_t n = a.shape()[ax];
  const int64_t src_stride = a.strides()[ax];
  const int64_t dst_stride = keep ? full[ax] : 0;
  const auto plan = planStrided<2>(outer_shape, {&src_strides, &dst_strides});
  const float* src = a.numel() > 0 ? a.f32() : nullptr;
  float* out = dst.f32();
  forEachRow(plan, 0, plan.outer(), [&](const auto& off, int64_t rows, const auto& st) {
    for (int64_t r = 0; r < rows; ++r)
      line(src + (src ? off[0] + r * st[0] : 0), src_stride, out + off[1] + r * st[1], dst_stride, n);
  });
}

Extents droppedShape(const RawTensor& a, size_t ax, Tags* tags) {
  Extents shape;
  for (size_t i = 0; i < a.rank(); ++i) {
    if (i == ax) continue;
    tags->push_back(a.tags()[i]);
    shape.push_back(a.shape()[i]);
  }
  return shape;
}

}  // namespace

RawTensor extremumAlong(ExecContext& ctx, const RawTensor& a, Tag axis, bool is_max,
                        RawTensor* index) {
  const size_t ax = a.axis(axis);
  Tags tags;
  const Extents shape = droppedShape(a, ax, &tags);
  RawTensor out = RawTensor::empty(ctx, tags, shape, DType::f32);
  RawTensor idx = RawTensor::empty(ctx, tags, shape, DType::f32);
  if (out.numel() > 0) {
    float* const out_base = out.f32();
    float* const idx_base = idx.f32();
    forEachLine(a, ax, out, false, [&](const float* s, int64_t ss, float* d, int64_t, int64_t n) {
      float best = s[0];
      int64_t at = 0;
      for (int64_t i = 1; i < n && !std::isnan(best); ++i) {
        const float v = s[i * ss];
        if (std::isnan(v) || (is_max ? v > best : v < best)) {
          best = v;
          at = i;
        }
      }
      *d = best;
      idx_base[d - out_base] = static_cast<float>(at);
    });
  }
  if (index) *index = idx;
  return out;
}

RawTensor cumsumAlong(ExecContext& ctx, const RawTensor& a, Tag axis, bool reverse) {
  const size_t ax = a.axis(axis);
  RawTensor out = RawTensor::empty(ctx, a.tags(), a.shape(), DType::f32);
  if (out.numel() == 0) return out;
  forEachLine(a, ax, out, true, [&](const float* s, int64_t ss, float* d, int64_t ds, int64_t n) {
    double acc = 0;
    for (int64_t k = 0; k < n; ++k) {
      const int64_t i = reverse ? n - 1 - k : k;
      acc += s[i * ss];
      d[i * ds] = static_cast<float>(acc);
    }
  });
  return out;
}

RawTensor prodAlong(ExecContext& ctx, const RawTensor& a, Tag axis) {
  const size_t ax = a.axis(axis);
  Tags tags;
  const Extents shape = droppedShape(a, ax, &tags);
  RawTensor out = RawTensor::empty(ctx, tags, shape, DType::f32);
  if (out.numel() == 0) return out;
  forEachLine(a, ax, out, false, [&](const float* s, int64_t ss, float* d, int64_t, int64_t n) {
    double p = 1;
    for (int64_t i = 0; i < n; ++i) p *= s[i * ss];
    *d = static_cast<float>(p);
  });
  return out;
}

RawTensor prodOthersAlong(ExecContext& ctx, const RawTensor& a, Tag axis) {
  const size_t ax = a.axis(axis);
  RawTensor out = RawTensor::empty(ctx, a.tags(), a.shape(), DType::f32);
  if (out.numel() == 0) return out;
  forEachLine(a, ax, out, true, [&](const float* s, int64_t ss, float* d, int64_t ds, int64_t n) {
    double prefix = 1;  // d[i] = x[0]···x[i-1], then times x[i+1]···x[n-1]
    for (int64_t i = 0; i < n; ++i) {
      d[i * ds] = static_cast<float>(prefix);
      prefix *= s[i * ss];
    }
    double suffix = 1;
    for (int64_t i = n; i-- > 0;) {
      d[i * ds] = static_cast<float>(static_cast<double>(d[i * ds]) * suffix);
      suffix *= s[i * ss];
    }
  });
  return out;
}

backend::Kernels::Along reduceAlong(ExecContext& ctx, backend::Kernels::AlongAxis op, const RawTensor& a, Tag axis) {
  using A = backend::Kernels::AlongAxis;
  backend::Kernels::Along r;
  switch (op) {
    case A::max: case A::min: r.values = extremumAlong(ctx, a, axis, op == A::max, &r.index); break;
    case A::prod: r.values = prodAlong(ctx, a, axis); break;
    case A::prodOthers: r.values = prodOthersAlong(ctx, a, axis); break;
    case A::cumsum: case A::cumsumReverse: r.values = cumsumAlong(ctx, a, axis, op == A::cumsumReverse); break;
  }
  return r;
}

}  // namespace fucina::kernels
