/// @file
/// The rotary angles' cos and sin tables of a model (nn::Llama), made once per device and kept.
///
/// Note [Rotary tables kept]: a forward over positions start .. start+t-1 reads rows start ..
/// start+t-1 of tables {t, hd: head_dim/2} whose row p holds cos and sin of p·inv_freq (the angle
/// in double, rounded to f32 once). Made on the host for each forward, they would be uploaded by
/// every training step on a device; so the model keeps one pair where it last ran
/// (a forward on another device or context replaces it: a model moved to a device leaves nothing
/// behind on the cpu), grown to the next power of two (at most the model's positions) when a
/// forward reaches past it, and a step in steady state uploads none. Rows from 0 are views; rows
/// from a later start (a KV cache's new tokens) are one copy per table, made before the blocks
/// read them. A copy of the model starts without tables, so copies on two devices do not take
/// turns remaking them.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "fucina/ag/tensor.h"

namespace fucina::nn {

class RotaryTables {
 public:
  /// inv_freq: one inverse frequency per pair of head dims; positions: the most rows ever read.
  RotaryTables(std::vector<double> inv_freq, int64_t positions, Tag position, Tag dim);
  RotaryTables(const RotaryTables& other);  ///< the same angles, no tables yet
  RotaryTables(RotaryTables&& other) noexcept;
  RotaryTables& operator=(const RotaryTables& other);
  RotaryTables& operator=(RotaryTables&& other) noexcept;

  /// cos and sin {position: t, dim: inv_freq.size()} of positions start .. start+t-1 on ctx's
  /// device (start + t <= positions). Constants: no gradient flows into them.
  std::pair<Tensor, Tensor> rows(ExecContext& ctx, int64_t start, int64_t t) const;

 private:
  std::vector<double> inv_freq_;
  int64_t positions_;
  Tag position_, dim_;
  mutable std::mutex mutex_;
  mutable std::shared_ptr<MemoryAccount> account_;  // whose buffers the kept pair is (null: none)
  mutable internal::RawTensor cos_, sin_;
};

}  // namespace fucina::nn
