// Seeded randomness shared by the backends: both draw from the counter-based generator of
// core/random.h at the same indices, so a seed gives the same values on either.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>

#include "fucina/core/error.h"
#include "fucina/core/random.h"

namespace fucina::backend::sampling {

// Dropout's multiplier of element `index`: 0 with probability p, else keep_scale.
inline float dropoutScale(uint64_t seed, double p, float keep_scale, int64_t index) {
  return random::unit(seed, static_cast<uint64_t>(index)) < p ? 0.0f : keep_scale;
}

// Row r of multinomial: n weights (copied into w, n doubles of scratch), `samples` draws into out;
// draw j uses unit(seed, r·samples + j). `what` names the weights in errors.
inline void multinomialRow(const double* src, double* w, int64_t n, int64_t r, int64_t samples, uint64_t seed,
                           bool replacement, const std::string& what, int64_t* out) {
  double total = 0;
  int64_t positive = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (!(src[i] >= 0) || std::isinf(src[i]))
      fail(ErrorCode::InvalidArgument, "multinomial: weights must be finite and >= 0, got " + std::to_string(src[i]) +
                                           " in row " + std::to_string(r) + " of " + what);
    w[i] = src[i];
    total += src[i];
    positive += src[i] > 0;
  }
  if (samples > 0 && total <= 0)
    fail(ErrorCode::InvalidArgument, "multinomial: row " + std::to_string(r) + " of " + what + " has no positive weight");
  if (!replacement && samples > positive)
    fail(ErrorCode::InvalidArgument, "multinomial: " + std::to_string(samples) + " samples without replacement, but row " +
                                         std::to_string(r) + " has only " + std::to_string(positive) + " positive weights");
  for (int64_t j = 0; j < samples; ++j) {
    // The first category whose running sum passes u·total; rounding can leave u·total past the
    // last sum, which then picks the last positive category.
    const double target = random::unit(seed, static_cast<uint64_t>(r * samples + j)) * total;
    double acc = 0;
    int64_t pick = -1;
    for (int64_t i = 0; i < n; ++i) {
      if (w[i] <= 0) continue;
      pick = i;
      acc += w[i];
      if (target < acc) break;
    }
    out[j] = pick;
    if (!replacement) {  // sequential draws without replacement, as torch's
      total -= w[pick];
      w[pick] = 0;
    }
  }
}

// Rows to draw for: with no categories, the draws' rows (none when no draws), so that an empty
// tensor with a huge axis is not walked.
inline int64_t multinomialRowCount(int64_t numel, int64_t n, int64_t out_numel, int64_t samples) {
  return n == 0 ? out_numel / (samples > 0 ? samples : 1) : numel / n;
}

}  // namespace fucina::backend::sampling
