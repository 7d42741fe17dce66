#include "fucina/nn/rotary_tables.h"

#include <algorithm>
#include <bit>
#include <cmath>

#include "fucina/core/error.h"
#include "fucina/exec/context.h"

namespace fucina::nn {

using internal::RawTensor;

RotaryTables::RotaryTables(std::vector<double> inv_freq, int64_t positions, Tag position, Tag dim)
    : inv_freq_(std::move(inv_freq)), positions_(positions), position_(position), dim_(dim) {}

std::pair<Tensor, Tensor> RotaryTables::rows(ExecContext& ctx, int64_t start, int64_t t) const {
  if (start < 0 || t < 0 || start + t > positions_)
    fail(ErrorCode::InvalidArgument, "RotaryTables: positions " + std::to_string(start) + " .. " + std::to_string(start + t - 1) +
            " lie outside 0 .. " + std::to_string(positions_ - 1));
  const int64_t end = start + t, half = static_cast<int64_t>(inv_freq_.size());
  RawTensor cos, sin;
  {
    std::lock_guard lock(mutex_);
    auto it = std::find_if(kept_.begin(), kept_.end(), [&](const Kept& k) { return k.account->device() == ctx.device(); });
    if (it != kept_.end() && (it->account != ctx.account() || it->cos.extent(position_) < end)) {
      kept_.erase(it);
      it = kept_.end();
    }
    if (it == kept_.end()) {
      const int64_t n = std::min(positions_, std::max<int64_t>(64, static_cast<int64_t>(std::bit_ceil(static_cast<uint64_t>(end)))));
      std::vector<float> c(static_cast<size_t>(n * half)), s(c.size());
      for (int64_t p = 0; p < n; ++p)
        for (int64_t i = 0; i < half; ++i) {
          const double angle = static_cast<double>(p) * inv_freq_[static_cast<size_t>(i)];
          c[static_cast<size_t>(p * half + i)] = static_cast<float>(std::cos(angle));
          s[static_cast<size_t>(p * half + i)] = static_cast<float>(std::sin(angle));
        }
      kept_.push_back({ctx.account(), RawTensor::fromSlice(ctx, {position_, dim_}, {n, half}, c),
                       RawTensor::fromSlice(ctx, {position_, dim_}, {n, half}, s)});
      it = kept_.end() - 1;
    }
    cos = it->cos;
    sin = it->sin;
  }
  // Rows from 0 are a view the kernels read in place; a view starting inside the buffer is
  // copied once here rather than by every op that reads it.
  const auto part = [&](const RawTensor& table) {
    const RawTensor r = table.narrowed(position_, start, t);
    return Tensor::fromRaw(ctx, start == 0 ? r : r.clone(ctx));
  };
  return {part(cos), part(sin)};
}

}  // namespace fucina::nn
