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

RotaryTables::RotaryTables(const RotaryTables& other)
    : RotaryTables(other.inv_freq_, other.positions_, other.position_, other.dim_) {}

RotaryTables::RotaryTables(RotaryTables&& other) noexcept
    : inv_freq_(std::move(other.inv_freq_)),
      positions_(other.positions_),
      position_(other.position_),
      dim_(other.dim_),
      account_(std::move(other.account_)),
      cos_(std::move(other.cos_)),
      sin_(std::move(other.sin_)) {}

RotaryTables& RotaryTables::operator=(const RotaryTables& other) {
  if (this != &other) *this = RotaryTables(other);
  return *this;
}

RotaryTables& RotaryTables::operator=(RotaryTables&& other) noexcept {
  inv_freq_ = std::move(other.inv_freq_);
  positions_ = other.positions_;
  position_ = other.position_;
  dim_ = other.dim_;
  account_ = std::move(other.account_);
  cos_ = std::move(other.cos_);
  sin_ = std::move(other.sin_);
  return *this;
}

std::pair<Tensor, Tensor> RotaryTables::rows(ExecContext& ctx, int64_t start, int64_t t) const {
  if (start < 0 || t < 0 || start + t > positions_)
    fail(ErrorCode::InvalidArgument, "RotaryTables: positions " + std::to_string(start) + " .. " +
                                         std::to_string(start + t - 1) + " lie outside 0 .. " +
                                         std::to_string(positions_ - 1));
  const int64_t end = start + t, half = static_cast<int64_t>(inv_freq_.size());
  RawTensor cos, sin;
  {
    std::lock_guard lock(mutex_);
    if (account_ != ctx.account() || cos_.extent(position_) < end) {
      const auto grown = static_cast<int64_t>(std::bit_ceil(static_cast<uint64_t>(end)));
      const int64_t n = std::min(positions_, std::max<int64_t>(64, grown));
      std::vector<float> c(static_cast<size_t>(n * half)), s(c.size());
      for (int64_t p = 0; p < n; ++p)
        for (int64_t i = 0; i < half; ++i) {
          const double angle = static_cast<double>(p) * inv_freq_[static_cast<size_t>(i)];
          c[static_cast<size_t>(p * half + i)] = static_cast<float>(std::cos(angle));
          s[static_cast<size_t>(p * half + i)] = static_cast<float>(std::sin(angle));
        }
      RawTensor made_cos = RawTensor::fromSlice(ctx, {position_, dim_}, {n, half}, c);
      RawTensor made_sin = RawTensor::fromSlice(ctx, {position_, dim_}, {n, half}, s);
      cos_ = std::move(made_cos);
      sin_ = std::move(made_sin);
      account_ = ctx.account();
    }
    cos = cos_;
    sin = sin_;
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
