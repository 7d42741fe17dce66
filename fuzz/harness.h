// What the harnesses share: a failed check aborts (a crash to libFuzzer) naming the harness, and
// the context files are decoded into carries a live-byte budget, as for any untrusted input.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string_view>

#include <fucina/fucina.h>

namespace fuzz {

inline void require(bool ok, const char* harness, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "%s: %s\n", harness, what);
  std::abort();
}

/// The process's one single-threaded context, made on first use with that budget.
inline fucina::ExecContext& budgetedContext(size_t live_limit) {
  static auto* ctx = [live_limit] {
    auto* c = new fucina::ExecContext(fucina::ExecOptions{.threads = 1});
    c->account()->setLiveLimit(live_limit);
    return c;
  }();
  return *ctx;
}

/// The model harnesses' input, run by exercise(ctx, file, config, options): one option byte, a
/// 2-byte little-endian length L, L bytes of config.json, then the safetensors file. A
/// fucina::Error is a fine answer; a tensor or byte left live afterwards is a bug.
template <class Exercise>
int runModelInput(const char* harness, const uint8_t* data, size_t size, size_t live_limit, Exercise exercise) {
  if (size < 3) return 0;
  fucina::ExecContext& ctx = budgetedContext(live_limit);
  const fucina::MemoryStats before = ctx.memory();
  const size_t length = std::min<size_t>(size - 3, data[1] | (size_t{data[2]} << 8));
  const std::string_view config(reinterpret_cast<const char*>(data + 3), length);
  try {
    exercise(ctx, std::span<const uint8_t>(data + 3 + length, size - 3 - length), config, data[0]);
  } catch (const fucina::Error&) {
  }
  require(ctx.memory().live_tensors == before.live_tensors, harness, "a tensor is still live");
  require(ctx.memory().live_bytes == before.live_bytes, harness, "bytes are still live");
  return 0;
}

}  // namespace fuzz
