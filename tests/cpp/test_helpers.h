// Shared helpers for the Catch2 tests: error-code matching, value extraction, and a test-only
// VJP record (LambdaRecord) for driving the engine through situations no built-in op produces.
#pragma once

#include <catch2/catch.hpp>

#include <atomic>
#include <cmath>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include <fucina/fucina.h>
#ifndef __EMSCRIPTEN__
#include <hwy/targets.h>
#endif
#include "fucina/ag/engine.h"

// Catch prints a caught fucina::Error as "<CodeName>: <what()>" when a matcher fails.
namespace Catch {
template <>
struct StringMaker<fucina::Error> {
  static std::string convert(const fucina::Error& e) {
    return "fucina::Error(" + std::string(fucina::name(e.code())) + ") \"" + e.what() + "\"";
  }
};
}  // namespace Catch

namespace test {

using fucina::internal::RawTensor;

class HasCode : public Catch::MatcherBase<fucina::Error> {
 public:
  explicit HasCode(fucina::ErrorCode code) : code_(code) {}
  bool match(const fucina::Error& e) const override { return e.code() == code_; }
  std::string describe() const override {
    return "has ErrorCode::" + std::string(fucina::name(code_));
  }

 private:
  fucina::ErrorCode code_;
};

// REQUIRE_FUCINA_ERROR(expr, ShapeMismatch): expr throws fucina::Error with that code.
#define REQUIRE_FUCINA_ERROR(expr, errcode) \
  REQUIRE_THROWS_MATCHES(expr, fucina::Error, ::test::HasCode(::fucina::ErrorCode::errcode))
#define CHECK_FUCINA_ERROR(expr, errcode) \
  CHECK_THROWS_MATCHES(expr, fucina::Error, ::test::HasCode(::fucina::ErrorCode::errcode))

inline std::vector<float> vec(std::span<const float> s) { return {s.begin(), s.end()}; }

// Smooth, distinct test values: scale * sin(freq * i + phase).
inline std::vector<float> wave(size_t n, float scale, float phase, float freq) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = scale * std::sin(freq * static_cast<float>(i) + phase);
  return v;
}

// The accumulated gradient of t as values; fails the test when t has none.
inline std::vector<float> gradOf(fucina::ExecContext& ctx, const fucina::Tensor& t) {
  std::optional<fucina::Tensor> g = t.grad(ctx);
  REQUIRE(g.has_value());
  return g->toVector();
}

inline RawTensor raw(fucina::ExecContext& ctx, fucina::Tags tags, fucina::Extents shape,
                     std::vector<float> values) {
  return RawTensor::fromSlice(ctx, std::move(tags), std::move(shape), values);
}

// A contiguous copy of t with every element multiplied by k, with t's tags and shape.
inline RawTensor scaledCopy(fucina::ExecContext& ctx, const RawTensor& t, float k) {
  std::vector<float> v = t.toVector();
  for (float& e : v) e *= k;
  return RawTensor::fromSlice(ctx, t.tags(), t.shape(), v);
}

// --- test-only VJP record ---------------------------------------------------------------------

using VjpFn = std::function<void(fucina::ExecContext& ctx, const RawTensor& gy,
                                 std::span<const bool> needs_grad,
                                 std::span<std::optional<RawTensor>> out)>;

// A BackwardFunction whose backward is a lambda. Counts its calls; may claim a large
// estimatedWork so that the engine considers running it on a pool thread.
class LambdaRecord final : public fucina::BackwardFunction {
 public:
  LambdaRecord(std::vector<std::shared_ptr<fucina::GradState>> operands, VjpFn fn, size_t work)
      : operands_(std::move(operands)), fn_(std::move(fn)), work_(work) {}

  std::span<const std::shared_ptr<fucina::GradState>> operands() const override {
    return operands_;
  }
  void backward(fucina::ExecContext& ctx, const RawTensor& gy, std::span<const bool> needs_grad,
                std::span<std::optional<RawTensor>> out) override {
    calls.fetch_add(1);
    fn_(ctx, gy, needs_grad, out);
  }
  std::string_view name() const override { return "TestLambdaRecord"; }
  size_t estimatedWork() const override { return work_; }

  std::atomic<int> calls{0};

 private:
  std::vector<std::shared_ptr<fucina::GradState>> operands_;
  VjpFn fn_;
  size_t work_;
};

// An op result with value `value` whose VJP is fn; one operand slot per tensor in `operands`
// (null for constants, as built-in ops do). *record (if given) observes the record.
inline fucina::Tensor makeNode(fucina::ExecContext& ctx, RawTensor value,
                               const std::vector<fucina::Tensor>& operands, VjpFn fn,
                               size_t work = 0, LambdaRecord** record = nullptr) {
  std::vector<std::shared_ptr<fucina::GradState>> slots;
  for (const fucina::Tensor& t : operands) slots.push_back(t.impl()->gradState());
  auto rec = std::make_unique<LambdaRecord>(std::move(slots), std::move(fn), work);
  if (record != nullptr) *record = rec.get();
  fucina::Tags tags = value.tags();
  fucina::Extents shape = value.shape();
  auto state = std::make_shared<fucina::GradState>(std::move(tags), std::move(shape), std::move(rec));
  return fucina::Tensor::make(ctx, std::move(value), std::move(state));
}

// VJP of y = k * x for a single operand.
inline VjpFn scaleVjp(float k) {
  return [k](fucina::ExecContext& ctx, const RawTensor& gy, std::span<const bool> needs_grad,
             std::span<std::optional<RawTensor>> out) {
    if (needs_grad[0]) out[0] = scaledCopy(ctx, gy, k);
  };
}

// Every GradState reachable from root (root included), found without recursion.
inline std::vector<fucina::GradState*> graphStates(const fucina::Tensor& root) {
  std::vector<fucina::GradState*> result;
  std::unordered_set<fucina::GradState*> seen;
  std::vector<fucina::GradState*> stack;
  if (root.gradState() != nullptr) stack.push_back(root.gradState());
  while (!stack.empty()) {
    fucina::GradState* s = stack.back();
    stack.pop_back();
    if (!seen.insert(s).second) continue;
    result.push_back(s);
    if (fucina::BackwardFunction* fn = s->gradFn()) {
      for (const auto& op : fn->operands())
        if (op) stack.push_back(op.get());
    }
  }
  return result;
}

// No scheduling debris: every state reachable from the roots is unclaimed with no pending count.
inline void checkNoPendingState(const std::vector<fucina::Tensor>& roots) {
  for (const fucina::Tensor& root : roots) {
    for (fucina::GradState* s : graphStates(root)) {
      CHECK(s->pending_grads.load() == 0u);
      CHECK(s->claimed_by.load() == 0u);
    }
  }
}

#ifndef __EMSCRIPTEN__
// Runs check once on each SIMD target this processor supports, the others disabled: the dispatcher
// picks the best target, and the rest (AVX2's and SSE4's kernels on an AVX-512 machine) run only
// here. INFO names the target.
inline void forEachSimdTarget(const std::function<void()>& check) {
  const int64_t supported = hwy::SupportedTargets();
  for (int64_t bit = 1; bit != 0 && bit <= supported; bit <<= 1) {
    if (!(supported & bit)) continue;
    hwy::DisableTargets(supported & ~bit);
    INFO("target " << hwy::TargetName(bit));
    check();
    hwy::DisableTargets(0);
  }
}
#endif

}  // namespace test
