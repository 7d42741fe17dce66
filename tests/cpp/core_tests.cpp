// Core and exec layers: errors, tags, shapes, dtypes, raw tensors, memory accounting, exec
// scopes, the work pool and the context's thread count.
#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <limits>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <type_traits>

#include "fucina/exec/claims.h"
#include "test_helpers.h"

using fucina::DType;
using fucina::ErrorCode;
using fucina::ExecContext;
using fucina::ExecOptions;
using fucina::ExecScope;
using fucina::Tag;
using fucina::Tensor;
using fucina::internal::RawTensor;
using test::raw;
using Floats = std::vector<float>;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

float fromBits(uint32_t bits) { return std::bit_cast<float>(bits); }

// Element-wise equality that treats NaN as equal to NaN.
bool sameFloats(const Floats& a, const Floats& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) && std::isnan(b[i])) continue;
    if (a[i] != b[i]) return false;
  }
  return true;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------

TEST_CASE("every ErrorCode has its reference name") {
  const std::vector<std::pair<ErrorCode, std::string_view>> names = {
      {ErrorCode::ShapeMismatch, "ShapeMismatch"},
      {ErrorCode::DTypeMismatch, "DTypeMismatch"},
      {ErrorCode::InvalidArgument, "InvalidArgument"},
      {ErrorCode::IndexOutOfRange, "IndexOutOfRange"},
      {ErrorCode::OutOfMemory, "OutOfMemory"},
      {ErrorCode::NoGradientGraph, "NoGradientGraph"},
      {ErrorCode::MissingOutputGradient, "MissingOutputGradient"},
      {ErrorCode::MissingBackwardGradient, "MissingBackwardGradient"},
      {ErrorCode::BackwardAlreadyRun, "BackwardAlreadyRun"},
      {ErrorCode::UnsupportedGradient, "UnsupportedGradient"},
      {ErrorCode::MutableDataRequiresNoGrad, "MutableDataRequiresNoGrad"},
      {ErrorCode::GradientCastUnsupported, "GradientCastUnsupported"},
      {ErrorCode::GradientPackedMatmulUnsupported, "GradientPackedMatmulUnsupported"},
      {ErrorCode::GradientQuantizedMatmulUnsupported, "GradientQuantizedMatmulUnsupported"},
      {ErrorCode::GradientPreparedConv2dUnsupported, "GradientPreparedConv2dUnsupported"},
      {ErrorCode::CheckpointOutputNotDifferentiable, "CheckpointOutputNotDifferentiable"},
      {ErrorCode::CheckpointMissingInputGradient, "CheckpointMissingInputGradient"},
      {ErrorCode::NestedCheckpointRecompute, "NestedCheckpointRecompute"},
      {ErrorCode::InvalidGradcheckOptions, "InvalidGradcheckOptions"},
      {ErrorCode::NoVariableInputs, "NoVariableInputs"},
      {ErrorCode::MissingAnalyticalGradient, "MissingAnalyticalGradient"},
      {ErrorCode::GradientShapeMismatch, "GradientShapeMismatch"},
      {ErrorCode::GradientMismatch, "GradientMismatch"},
      {ErrorCode::TensorReleased, "TensorReleased"},
      {ErrorCode::DeviceUnavailable, "DeviceUnavailable"},
      {ErrorCode::DeviceMismatch, "DeviceMismatch"},
      {ErrorCode::DeviceLost, "DeviceLost"},
      {ErrorCode::DeviceReadIsAsync, "DeviceReadIsAsync"},
      {ErrorCode::UnsupportedOnDevice, "UnsupportedOnDevice"},
  };
  for (const auto& [code, expected] : names) CHECK(fucina::name(code) == expected);
  CHECK(fucina::name(ErrorCode::BackwardAlreadyRun) == "BackwardAlreadyRun");
}

TEST_CASE("Error derives std::runtime_error and carries code and message") {
  static_assert(std::is_base_of_v<std::runtime_error, fucina::Error>);
  try {
    fucina::fail(ErrorCode::ShapeMismatch, "tags {a} vs {b}");
    FAIL("fail() returned");
  } catch (const std::runtime_error& e) {
    const auto* fe = dynamic_cast<const fucina::Error*>(&e);
    REQUIRE(fe != nullptr);
    CHECK(fe->code() == ErrorCode::ShapeMismatch);
    CHECK_THAT(e.what(), Catch::Contains("ShapeMismatch") && Catch::Contains("tags {a} vs {b}"));
  }
  fucina::Error direct(ErrorCode::OutOfMemory, "no room");
  CHECK(direct.code() == ErrorCode::OutOfMemory);
  CHECK_THAT(direct.what(), Catch::Contains("no room"));
}

TEST_CASE("library errors say what went wrong") {
  ExecContext ctx;
  try {
    Tensor::zeros(ctx, {"batch", "batch"}, {2, 3});
    FAIL("duplicate tags accepted");
  } catch (const fucina::Error& e) {
    CHECK_THAT(e.what(), Catch::Contains("batch"));
  }
  try {
    Tensor::fromSlice(ctx, {"d"}, {2}, {1, 2}).backward(ctx);
    FAIL("backward on a constant accepted");
  } catch (const fucina::Error& e) {
    CHECK(e.code() == ErrorCode::NoGradientGraph);
    CHECK_THAT(e.what(), Catch::Contains("NoGradientGraph"));
  }
}

// ---------------------------------------------------------------------------------------------
// Tags
// ---------------------------------------------------------------------------------------------

TEST_CASE("tags are interned by name") {
  Tag a("core_test_batch");
  Tag b(std::string("core_test_batch"));
  Tag c(std::string_view("core_test_in"));
  CHECK(a == b);
  CHECK(a.id() == b.id());
  CHECK_FALSE(a == c);
  CHECK(a.id() != c.id());
  CHECK(a.name() == "core_test_batch");
  CHECK(c.name() == "core_test_in");
  CHECK(std::hash<Tag>{}(a) == std::hash<Tag>{}(b));
  // Interning is thread-safe: tags made on other threads get the same ids.
  std::vector<uint32_t> ids(4);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < ids.size(); ++i)
    threads.emplace_back([&ids, i] { ids[i] = Tag("core_test_threaded").id(); });
  for (auto& t : threads) t.join();
  for (uint32_t id : ids) CHECK(id == Tag("core_test_threaded").id());
}

TEST_CASE("an empty tag name is rejected") {
  REQUIRE_FUCINA_ERROR(Tag(""), InvalidArgument);
  REQUIRE_FUCINA_ERROR(Tag(std::string()), InvalidArgument);
  REQUIRE_FUCINA_ERROR(Tag(static_cast<const char*>(nullptr)), InvalidArgument);
}

// ---------------------------------------------------------------------------------------------
// Shapes
// ---------------------------------------------------------------------------------------------

TEST_CASE("shape helpers") {
  CHECK(fucina::numelOf({2, 3, 4}) == 24);
  CHECK(fucina::numelOf({}) == 1);
  CHECK(fucina::numelOf({0, 5}) == 0);
  CHECK(fucina::contiguousStrides({2, 3, 4}) == std::vector<int64_t>{12, 4, 1});
  CHECK(fucina::describe({"a", "b"}, {2, 3}) == "{a=2, b=3}");
  CHECK(fucina::findTag({"a", "b"}, "b") == std::optional<size_t>(1));
  CHECK_FALSE(fucina::findTag({"a", "b"}, "c").has_value());
}

TEST_CASE("shape validation reports the right codes") {
  ExecContext ctx;
  SECTION("duplicate tags: ShapeMismatch") {
    REQUIRE_FUCINA_ERROR(fucina::validateShape({"a", "a"}, {1, 2}, "test"), ShapeMismatch);
    REQUIRE_FUCINA_ERROR(Tensor::zeros(ctx, {"a", "a"}, {1, 2}), ShapeMismatch);
    REQUIRE_FUCINA_ERROR(RawTensor::zeros(ctx, {"a", "b", "a"}, {1, 2, 3}), ShapeMismatch);
    REQUIRE_FUCINA_ERROR(Tensor::variableFromSlice(ctx, {"a", "a"}, {1, 1}, {1}), ShapeMismatch);
  }
  SECTION("negative extents: InvalidArgument") {
    REQUIRE_FUCINA_ERROR(fucina::validateShape({"a"}, {-1}, "test"), InvalidArgument);
    REQUIRE_FUCINA_ERROR(Tensor::zeros(ctx, {"a", "b"}, {2, -3}), InvalidArgument);
    REQUIRE_FUCINA_ERROR(RawTensor::full(ctx, {"a"}, {-1}, 1.0), InvalidArgument);
  }
  SECTION("tag/extent count mismatch: ShapeMismatch") {
    REQUIRE_FUCINA_ERROR(fucina::validateShape({"a", "b"}, {1}, "test"), ShapeMismatch);
    REQUIRE_FUCINA_ERROR(Tensor::ones(ctx, {"a"}, {1, 2}), ShapeMismatch);
    REQUIRE_FUCINA_ERROR(Tensor::fromSlice(ctx, {"a", "b"}, {2}, {1, 2}), ShapeMismatch);
  }
  SECTION("too many elements: InvalidArgument") {
    const int64_t big = int64_t{1} << 40;
    REQUIRE_FUCINA_ERROR(fucina::validateShape({"a", "b"}, {big, big}, "test"), InvalidArgument);
  }
  SECTION("value count differs from the shape") {
    try {
      Tensor::fromSlice(ctx, {"a"}, {3}, {1, 2});
      FAIL("two values accepted for three elements");
    } catch (const fucina::Error& e) {
      CHECK((e.code() == ErrorCode::ShapeMismatch || e.code() == ErrorCode::InvalidArgument));
    }
  }
  SECTION("valid shapes, including empty and zero-extent ones") {
    CHECK_NOTHROW(fucina::validateShape({}, {}, "test"));
    CHECK(Tensor::zeros(ctx, {"a"}, {0}).numel() == 0);
    CHECK(Tensor::scalar(ctx, 1).numel() == 1);
    CHECK(Tensor::scalar(ctx, 1).rank() == 0);
  }
}

// ---------------------------------------------------------------------------------------------
// DTypes and conversions
// ---------------------------------------------------------------------------------------------

TEST_CASE("dtype properties") {
  CHECK(fucina::elementSize(DType::f32) == 4);
  CHECK(fucina::elementSize(DType::f16) == 2);
  CHECK(fucina::elementSize(DType::bf16) == 2);
  CHECK(fucina::elementSize(DType::f64) == 8);
  CHECK(fucina::elementSize(DType::i32) == 4);
  CHECK(fucina::elementSize(DType::i64) == 8);
  CHECK(fucina::elementSize(DType::u8) == 1);
  CHECK(fucina::isFloat(DType::bf16));
  CHECK_FALSE(fucina::isFloat(DType::i32));
  CHECK(fucina::name(DType::bf16) == "bf16");
}

TEST_CASE("f32 <-> f16 conversion rounds to nearest even") {
  using fucina::f16ToF32;
  using fucina::f32ToF16;
  CHECK(f32ToF16(1.0f) == 0x3C00);
  CHECK(f32ToF16(-2.5f) == 0xC100);
  CHECK(f32ToF16(65504.0f) == 0x7BFF);                 // largest finite half
  CHECK(f32ToF16(65519.0f) == 0x7BFF);                 // below the midpoint: stays finite
  CHECK(f32ToF16(65520.0f) == 0x7C00);                 // midpoint rounds to inf
  CHECK(f32ToF16(0.1f) == 0x2E66);
  CHECK(f32ToF16(-0.0f) == 0x8000);
  CHECK(f32ToF16(1e-5f) == 0x00A8);                    // subnormal: 168 * 2^-24
  CHECK(f32ToF16(std::ldexp(1.0f, -24)) == 0x0001);    // smallest subnormal
  CHECK(f32ToF16(std::ldexp(1.0f, -25)) == 0x0000);    // tie -> even (zero)
  CHECK(f32ToF16(std::ldexp(3.0f, -25)) == 0x0002);    // tie -> even (2)
  CHECK(f32ToF16(1.0f + std::ldexp(1.0f, -11)) == 0x3C00);        // tie -> even
  CHECK(f32ToF16(1.0f + std::ldexp(3.0f, -11)) == 0x3C02);        // tie -> even
  CHECK(f32ToF16(kInf) == 0x7C00);
  CHECK(f32ToF16(-kInf) == 0xFC00);

  CHECK(f16ToF32(0x3C00) == 1.0f);
  CHECK(f16ToF32(0xC100) == -2.5f);
  CHECK(f16ToF32(0x7BFF) == 65504.0f);
  CHECK(f16ToF32(0x00A8) == 168.0f * std::ldexp(1.0f, -24));
  CHECK(f16ToF32(0x0400) == std::ldexp(1.0f, -14));   // smallest normal
  CHECK(f16ToF32(0x7C00) == kInf);
  CHECK(f16ToF32(0xFC00) == -kInf);
  CHECK(std::isnan(f16ToF32(f32ToF16(kNaN))));
  CHECK(std::signbit(f16ToF32(0x8000)));

  // Every finite half survives a round trip through f32 exactly.
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    const auto h = static_cast<uint16_t>(bits);
    if ((h & 0x7C00) == 0x7C00 && (h & 0x3FF) != 0) continue;  // NaN payloads
    if (f32ToF16(f16ToF32(h)) != h) {
      FAIL("half 0x" << std::hex << bits << " does not round-trip");
    }
  }
}

TEST_CASE("f32 <-> bf16 conversion rounds to nearest even") {
  using fucina::bf16ToF32;
  using fucina::f32ToBf16;
  CHECK(f32ToBf16(1.0f) == 0x3F80);
  CHECK(f32ToBf16(-2.5f) == 0xC020);
  CHECK(f32ToBf16(65504.0f) == 0x4780);  // 65536: bf16 keeps 8 significant bits
  CHECK(f32ToBf16(1e-5f) == 0x3728);     // normal in bf16 (f32 exponent range)
  CHECK(f32ToBf16(1.0f + std::ldexp(1.0f, -8)) == 0x3F80);  // tie -> even
  CHECK(f32ToBf16(1.0f + std::ldexp(3.0f, -8)) == 0x3F82);  // tie -> even
  CHECK(f32ToBf16(std::numeric_limits<float>::max()) == 0x7F80);  // rounds up to inf
  CHECK(f32ToBf16(kInf) == 0x7F80);
  CHECK(f32ToBf16(-kInf) == 0xFF80);
  CHECK(std::isnan(bf16ToF32(f32ToBf16(kNaN))));
  CHECK(std::isnan(bf16ToF32(f32ToBf16(fromBits(0x7F800001)))));  // low-payload NaN stays NaN

  CHECK(bf16ToF32(0x3F80) == 1.0f);
  CHECK(bf16ToF32(0xC020) == -2.5f);
  CHECK(bf16ToF32(0x3728) == fromBits(0x37280000));
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    const auto h = static_cast<uint16_t>(bits);
    if ((h & 0x7F80) == 0x7F80 && (h & 0x7F) != 0) continue;  // NaN payloads
    if (f32ToBf16(bf16ToF32(h)) != h) {
      FAIL("bf16 0x" << std::hex << bits << " does not round-trip");
    }
  }
}

TEST_CASE("tensor casts between f32, f16 and bf16") {
  ExecContext ctx;
  const Floats values = {1, -2.5f, 65504, 1e-5f, kInf, kNaN};

  Tensor zeros16 = Tensor::zeros(ctx, {"a"}, {3}, DType::f16);
  CHECK(zeros16.dtype() == DType::f16);
  Tensor zeros32 = zeros16.to(ctx, DType::f32);
  CHECK(zeros32.dtype() == DType::f32);
  CHECK(zeros32.toVector() == Floats{0, 0, 0});
  CHECK(zeros32.tags() == fucina::Tags{"a"});

  Tensor x = Tensor::fromSlice(ctx, {"a"}, {6}, values);
  SECTION("f16") {
    Tensor h = x.to(ctx, DType::f16);
    CHECK(h.dtype() == DType::f16);
    const Floats expected = {1, -2.5f, 65504, 168.0f * std::ldexp(1.0f, -24), kInf, kNaN};
    CHECK(sameFloats(h.toVector(), expected));
    Tensor back = h.to(ctx, DType::f32);
    CHECK(back.dtype() == DType::f32);
    CHECK(sameFloats(back.toVector(), expected));
  }
  SECTION("bf16") {
    Tensor b = x.to(ctx, DType::bf16);
    CHECK(b.dtype() == DType::bf16);
    const Floats expected = {1, -2.5f, 65536, fromBits(0x37280000), kInf, kNaN};
    CHECK(sameFloats(b.to(ctx, DType::f32).toVector(), expected));
    // bf16 -> f16 goes through the same rounding (65536 overflows half).
    CHECK(b.to(ctx, DType::f16).toVector()[2] == kInf);
  }
  SECTION("ones and full in 16-bit types") {
    CHECK(Tensor::ones(ctx, {"a"}, {2}, DType::bf16).toVector() == Floats{1, 1});
    CHECK(Tensor::full(ctx, {"a"}, {2}, 1.5, DType::f16).toVector() == Floats{1.5, 1.5});
    CHECK(Tensor::full(ctx, {"a"}, {1}, 0.1, DType::f16).toVector() ==
          Floats{fucina::f16ToF32(0x2E66)});
  }
}

TEST_CASE("f64, integer and u8 constants store and convert") {
  ExecContext ctx;
  SECTION("i32") {
    Tensor t = Tensor::full(ctx, {"a"}, {3}, -7, DType::i32);
    CHECK(t.dtype() == DType::i32);
    CHECK(t.toVector() == Floats{-7, -7, -7});
    CHECK(t.to(ctx, DType::f32).toVector() == Floats{-7, -7, -7});
    Tensor from = Tensor::fromSlice(ctx, {"a"}, {3}, {1, -2, 300}).to(ctx, DType::i32);
    CHECK(from.dtype() == DType::i32);
    CHECK(from.toVector() == Floats{1, -2, 300});
    CHECK(from.value().storage()->bytes() >= 3 * sizeof(int32_t));
  }
  SECTION("i64 keeps values beyond 2^32") {
    Tensor t = Tensor::full(ctx, {"a"}, {2}, 1099511627776.0, DType::i64);  // 2^40
    CHECK(t.dtype() == DType::i64);
    CHECK(t.value().data<int64_t>()[1] == int64_t{1} << 40);
    CHECK(t.toVector() == Floats{1099511627776.0f, 1099511627776.0f});
    CHECK(t.to(ctx, DType::f64).value().data<double>()[0] == 1099511627776.0);
  }
  SECTION("u8") {
    Tensor t = Tensor::full(ctx, {"a"}, {2}, 200, DType::u8);
    CHECK(t.value().data<uint8_t>()[0] == 200);
    CHECK(t.to(ctx, DType::f32).toVector() == Floats{200, 200});
    CHECK(Tensor::fromSlice(ctx, {"a"}, {3}, {0, 17, 255}).to(ctx, DType::u8).toVector() ==
          Floats{0, 17, 255});
  }
  SECTION("f64 keeps double precision") {
    Tensor t = Tensor::scalar(ctx, 0.1, DType::f64);
    CHECK(t.dtype() == DType::f64);
    CHECK(t.value().data<double>()[0] == 0.1);
    CHECK(t.to(ctx, DType::f32).item() == 0.1f);
  }
  SECTION("raw tensors from slices in every storable dtype") {
    for (DType dt : {DType::f32, DType::f16, DType::bf16, DType::f64, DType::i32, DType::i64,
                     DType::u8}) {
      INFO("dtype " << fucina::name(dt));
      RawTensor r = RawTensor::fromSlice(ctx, {"a"}, {3}, Floats{1, 2, 3}, dt);
      CHECK(r.dtype() == dt);
      CHECK(r.toVector() == Floats{1, 2, 3});
      CHECK(r.to(ctx, DType::f32).toVector() == Floats{1, 2, 3});
    }
  }
  SECTION("constants of other dtypes never require gradients") {
    CHECK_FALSE(Tensor::full(ctx, {"a"}, {2}, 1, DType::f64).requiresGrad());
    CHECK_FALSE(Tensor::full(ctx, {"a"}, {2}, 1, DType::i32).requiresGrad());
  }
}

// ---------------------------------------------------------------------------------------------
// Raw tensors and views
// ---------------------------------------------------------------------------------------------

TEST_CASE("RawTensor views share storage") {
  ExecContext ctx;
  RawTensor r = raw(ctx, {"a", "b"}, {2, 3}, {0, 1, 2, 3, 4, 5});
  CHECK(r.isContiguous());
  CHECK(r.isExclusive());
  CHECK(r.describe() == "{a=2, b=3}");
  CHECK(r.extent("b") == 3);
  CHECK(r.axis("b") == 1u);
  const size_t bytes = ctx.memory().live_bytes;
  {
    RawTensor p = r.permuted({"b", "a"});
    RawTensor n = r.narrowed("b", 1, 2);
    RawTensor t = r.withTags({"x", "y"});
    RawTensor bc = raw(ctx, {"b"}, {3}, {7, 8, 9});
    const size_t with_bc = ctx.memory().live_bytes;
    RawTensor bv = bc.broadcastView({"a", "b"}, {2, 3});
    CHECK(ctx.memory().live_bytes == with_bc);  // views make no new bytes
    CHECK(with_bc == bytes + 3 * sizeof(float));

    CHECK(p.storage() == r.storage());
    CHECK(n.storage() == r.storage());
    CHECK(t.storage() == r.storage());
    CHECK(bv.storage() == bc.storage());
    CHECK_FALSE(r.isExclusive());  // shared with its views

    CHECK(p.tags() == fucina::Tags{"b", "a"});
    CHECK(p.shape() == fucina::Extents{3, 2});
    CHECK_FALSE(p.isContiguous());
    CHECK(p.toVector() == Floats{0, 3, 1, 4, 2, 5});
    CHECK(n.shape() == fucina::Extents{2, 2});
    CHECK(n.toVector() == Floats{1, 2, 4, 5});
    CHECK(t.tags() == fucina::Tags{"x", "y"});
    CHECK(t.toVector() == Floats{0, 1, 2, 3, 4, 5});
    CHECK(bv.toVector() == Floats{7, 8, 9, 7, 8, 9});
    CHECK(bv.strides()[0] == 0);

    // A write through the storage is seen by every view.
    r.f32()[1] = 10;
    CHECK(p.toVector() == Floats{0, 3, 10, 4, 2, 5});
    CHECK(n.toVector() == Floats{10, 2, 4, 5});
  }
  CHECK(r.isExclusive());  // views gone
  CHECK(ctx.memory().live_bytes == bytes);
}

TEST_CASE("RawTensor copies own new storage") {
  ExecContext ctx;
  RawTensor r = raw(ctx, {"a", "b"}, {2, 3}, {0, 1, 2, 3, 4, 5});
  const size_t bytes = ctx.memory().live_bytes;
  RawTensor c = r.clone(ctx);
  CHECK(c.storage() != r.storage());
  CHECK(ctx.memory().live_bytes == bytes + 6 * sizeof(float));
  CHECK(c.toVector() == r.toVector());
  CHECK(r.contiguous(ctx).storage() == r.storage());  // already contiguous: no copy
  RawTensor pc = r.permuted({"b", "a"}).contiguous(ctx);
  CHECK(pc.storage() != r.storage());
  CHECK(pc.isContiguous());
  CHECK(pc.toVector() == Floats{0, 3, 1, 4, 2, 5});
  c.f32()[0] = 99;
  CHECK(r.toVector()[0] == 0);
}

TEST_CASE("RawTensor shape errors name the tags") {
  ExecContext ctx;
  RawTensor r = raw(ctx, {"a", "b"}, {2, 3}, {0, 1, 2, 3, 4, 5});
  REQUIRE_FUCINA_ERROR(r.extent("zzz_missing"), ShapeMismatch);
  try {
    r.axis("zzz_missing");
  } catch (const fucina::Error& e) {
    CHECK_THAT(e.what(), Catch::Contains("zzz_missing"));
  }
  REQUIRE_FUCINA_ERROR(r.permuted({"a", "zzz_missing"}), ShapeMismatch);
  REQUIRE_FUCINA_ERROR(r.narrowed("b", 2, 2), IndexOutOfRange);  // past the end
  REQUIRE_FUCINA_ERROR(r.narrowed("b", -1, 1), IndexOutOfRange);
}

TEST_CASE("Tensor views and detach share storage") {
  ExecContext ctx;
  Tensor x = Tensor::fromSlice(ctx, {"a", "b"}, {2, 3}, {0, 1, 2, 3, 4, 5});
  const size_t bytes = ctx.memory().live_bytes;
  Tensor p = x.permuteTo(ctx, {"b", "a"});
  Tensor n = x.narrow(ctx, "b", 1, 2);
  Tensor d = x.detach(ctx);
  CHECK(ctx.memory().live_bytes == bytes);
  CHECK(p.value().storage() == x.value().storage());
  CHECK(n.value().storage() == x.value().storage());
  CHECK(d.value().storage() == x.value().storage());
  CHECK(p.toVector() == Floats{0, 3, 1, 4, 2, 5});
  CHECK(n.toVector() == Floats{1, 2, 4, 5});
}

// ---------------------------------------------------------------------------------------------
// Memory accounting
// ---------------------------------------------------------------------------------------------

TEST_CASE("a fresh context has no live memory") {
  ExecContext ctx;
  CHECK(ctx.memory().live_bytes == 0u);
  CHECK(ctx.memory().live_tensors == 0u);
  CHECK(ctx.memory().peak_bytes == 0u);
}

TEST_CASE("live bytes follow tensor lifetimes") {
  ExecContext ctx;
  const fucina::MemoryStats base = ctx.memory();
  {
    Tensor t = Tensor::zeros(ctx, {"a"}, {1000});
    CHECK(ctx.memory().live_bytes >= base.live_bytes + 1000 * sizeof(float));
    CHECK(ctx.memory().live_tensors == base.live_tensors + 1);
    CHECK(ctx.memory().allocations > base.allocations);
    Tensor copy = t;  // a handle copy shares the tensor
    CHECK(ctx.memory().live_tensors == base.live_tensors + 1);
    Tensor h = Tensor::zeros(ctx, {"a"}, {1000}, DType::f16);
    CHECK(ctx.memory().live_tensors == base.live_tensors + 2);
  }
  CHECK(ctx.memory().live_bytes == base.live_bytes);
  CHECK(ctx.memory().live_tensors == base.live_tensors);
}

TEST_CASE("raw tensors account exactly their element bytes") {
  ExecContext ctx;
  for (DType dt : {DType::f32, DType::f16, DType::bf16, DType::f64, DType::i32, DType::i64,
                   DType::u8}) {
    INFO("dtype " << fucina::name(dt));
    const size_t before = ctx.memory().live_bytes;
    {
      RawTensor r = RawTensor::zeros(ctx, {"a"}, {3}, dt);
      CHECK(ctx.memory().live_bytes == before + 3 * fucina::elementSize(dt));
    }
    CHECK(ctx.memory().live_bytes == before);
  }
}

TEST_CASE("peak bytes track the high-water mark until resetPeak") {
  ExecContext ctx;
  const size_t base = ctx.memory().live_bytes;
  {
    Tensor big = Tensor::zeros(ctx, {"a"}, {4096});
    CHECK(ctx.memory().peak_bytes >= base + 4096 * sizeof(float));
  }
  CHECK(ctx.memory().live_bytes == base);
  CHECK(ctx.memory().peak_bytes >= base + 4096 * sizeof(float));  // remembered
  ctx.resetPeak();
  CHECK(ctx.memory().peak_bytes == ctx.memory().live_bytes);
  {
    Tensor small = Tensor::zeros(ctx, {"a"}, {16});
    CHECK(ctx.memory().peak_bytes >= base + 16 * sizeof(float));
    CHECK(ctx.memory().peak_bytes < base + 4096 * sizeof(float));
  }
}

TEST_CASE("dispose releases a tensor for every handle") {
  ExecContext ctx;
  const fucina::MemoryStats base = ctx.memory();
  Tensor t = Tensor::zeros(ctx, {"a"}, {100});
  Tensor copy = t;
  t.dispose();
  CHECK(ctx.memory().live_tensors == base.live_tensors);
  CHECK(ctx.memory().live_bytes == base.live_bytes);
  REQUIRE_FUCINA_ERROR(copy.toVector(), TensorReleased);
  REQUIRE_FUCINA_ERROR(t.value(), TensorReleased);
  CHECK_NOTHROW(t.dispose());  // idempotent
  CHECK(ctx.memory().live_tensors == base.live_tensors);

  Tensor v = Tensor::variableFromSlice(ctx, {"a"}, {2}, {1, 2});
  v.scale(ctx, 2).sumAll(ctx).backward(ctx);
  v.dispose();  // value and gradient both go
  CHECK(ctx.memory().live_bytes == base.live_bytes);
  CHECK(ctx.memory().live_tensors == base.live_tensors);
}

TEST_CASE("an empty Tensor handle throws InvalidArgument when used") {
  ExecContext ctx;
  Tensor empty;
  CHECK_FALSE(empty.defined());
  REQUIRE_FUCINA_ERROR(empty.toVector(), InvalidArgument);
  REQUIRE_FUCINA_ERROR(empty.backward(ctx), InvalidArgument);
}

// [std-bad-alloc]: ASan aborts when a throwing operator new fails, so scripts/sanitize skips it.
TEST_CASE("toVector of a view too large to copy is OutOfMemory, not std::bad_alloc", "[std-bad-alloc]") {
  // A broadcast view holds one element but reads as 2^44: its copy cannot be allocated.
  ExecContext ctx;
  Tensor huge = Tensor::scalar(ctx, 1).broadcastTo(ctx, {"a", "b"}, {int64_t{1} << 22, int64_t{1} << 22});
  REQUIRE_FUCINA_ERROR(huge.toVector(), OutOfMemory);
}

// ---------------------------------------------------------------------------------------------
// Exec scopes
// ---------------------------------------------------------------------------------------------

TEST_CASE("ExecScope releases tensors made inside it") {
  ExecContext ctx;
  const fucina::MemoryStats base = ctx.memory();
  Tensor before = Tensor::ones(ctx, {"a"}, {4});
  Tensor inside, op_result;
  {
    ExecScope scope(ctx);
    CHECK(scope.isOpen());
    inside = Tensor::ones(ctx, {"a"}, {4});
    op_result = before.scale(ctx, 2);
    CHECK(op_result.toVector() == Floats{2, 2, 2, 2});
    CHECK(ctx.memory().live_tensors == base.live_tensors + 3);
  }
  REQUIRE_FUCINA_ERROR(inside.toVector(), TensorReleased);
  REQUIRE_FUCINA_ERROR(op_result.toVector(), TensorReleased);
  CHECK(before.toVector() == Floats{1, 1, 1, 1});  // made outside: untouched
  CHECK(ctx.memory().live_tensors == base.live_tensors + 1);
  before = Tensor();
  CHECK(ctx.memory().live_bytes == base.live_bytes);
}

TEST_CASE("ExecScope keep lets one result outlive the scope") {
  ExecContext ctx;
  const fucina::MemoryStats base = ctx.memory();
  Tensor kept, dropped;
  {
    ExecScope scope(ctx);
    Tensor t = Tensor::full(ctx, {"a"}, {2}, 3);
    dropped = Tensor::zeros(ctx, {"a"}, {2});
    kept = scope.keep(t.scale(ctx, 2));
  }
  CHECK(kept.toVector() == Floats{6, 6});
  REQUIRE_FUCINA_ERROR(dropped.toVector(), TensorReleased);
  CHECK(ctx.memory().live_tensors == base.live_tensors + 1);
  kept = Tensor();
  dropped = Tensor();
  CHECK(ctx.memory().live_bytes == base.live_bytes);
}

TEST_CASE("nested ExecScopes") {
  ExecContext ctx;
  SECTION("a kept tensor moves to the enclosing scope") {
    Tensor a, kb;
    ExecScope outer(ctx);
    {
      ExecScope inner(ctx);
      a = Tensor::ones(ctx, {"a"}, {2});
      kb = inner.keep(Tensor::full(ctx, {"a"}, {2}, 5));
    }
    REQUIRE_FUCINA_ERROR(a.toVector(), TensorReleased);
    CHECK(kb.toVector() == Floats{5, 5});
    outer.close();
    REQUIRE_FUCINA_ERROR(kb.toVector(), TensorReleased);
  }
  SECTION("closing an outer scope closes the inner ones") {
    ExecScope outer(ctx);
    ExecScope inner(ctx);
    Tensor t = Tensor::ones(ctx, {"a"}, {2});
    outer.close();
    CHECK_FALSE(inner.isOpen());
    CHECK_FALSE(outer.isOpen());
    REQUIRE_FUCINA_ERROR(t.toVector(), TensorReleased);
    CHECK_NOTHROW(inner.close());
    // With every scope closed, new tensors belong to the caller again.
    Tensor free = Tensor::ones(ctx, {"a"}, {2});
    CHECK(free.toVector() == Floats{1, 1});
  }
}

TEST_CASE("ExecScope close is idempotent") {
  ExecContext ctx;
  Tensor t;
  ExecScope scope(ctx);
  t = Tensor::ones(ctx, {"a"}, {2});
  scope.close();
  CHECK_FALSE(scope.isOpen());
  CHECK_NOTHROW(scope.close());
  REQUIRE_FUCINA_ERROR(t.toVector(), TensorReleased);
  Tensor after = Tensor::ones(ctx, {"a"}, {2});  // not owned by the closed scope
  scope.close();
  CHECK(after.toVector() == Floats{1, 1});
}

TEST_CASE("ExecScope closes during exception unwinding") {
  ExecContext ctx;
  const size_t base = ctx.memory().live_tensors;
  Tensor t;
  try {
    ExecScope scope(ctx);
    t = Tensor::ones(ctx, {"a"}, {2});
    throw std::runtime_error("unwind");
  } catch (const std::runtime_error&) {
  }
  REQUIRE_FUCINA_ERROR(t.toVector(), TensorReleased);
  CHECK(ctx.memory().live_tensors == base);
}

TEST_CASE("closing an exec scope keeps the graph a kept result needs") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"d"}, {3}, {1, 2, 3});
  Tensor loss;
  {
    ExecScope scope(ctx);
    Tensor c = Tensor::fromSlice(ctx, {"d"}, {3}, {10, 20, 30});
    Tensor y = x.mul(ctx, c);
    loss = scope.keep(y.sumAll(ctx));
  }
  loss.backward(ctx);
  CHECK(test::gradOf(ctx, x) == Floats{10, 20, 30});
}

// ---------------------------------------------------------------------------------------------
// WorkPool and context threads
// ---------------------------------------------------------------------------------------------

TEST_CASE("WorkPool parallelFor covers every index exactly once") {
  for (int threads : {1, 2, 4}) {
    fucina::WorkPool pool(threads);
    REQUIRE(pool.size() == threads);
    for (int64_t n : {0, 1, 2, 3, 5, 7, 8, 63, 64, 65, 1000, 4097}) {
      for (int64_t grain : {1, 2, 3, 7, 64, 1000, 100000}) {
        INFO("threads " << threads << ", n " << n << ", grain " << grain);
        std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
        std::atomic<int> bad_ranges{0};
        pool.parallelFor(n, grain, [&](int64_t begin, int64_t end) {
          if (begin < 0 || end > n || begin >= end) {
            bad_ranges.fetch_add(1);
            return;
          }
          for (int64_t i = begin; i < end; ++i) hits[static_cast<size_t>(i)].fetch_add(1);
        });
        CHECK(bad_ranges.load() == 0);
        int wrong = 0;
        for (auto& h : hits) wrong += h.load() != 1;
        CHECK(wrong == 0);
      }
    }
  }
}

TEST_CASE("WorkPool parallelFor chunks are at least grain long") {
  // work_pool.h: "Runs fn(begin, end) over [0, n) in chunks of at least `grain`".
  for (int threads : {2, 4}) {
    fucina::WorkPool pool(threads);
    for (int64_t n : {3, 5, 7, 9, 100, 1001}) {
      for (int64_t grain : {2, 3, 4, 64}) {
        INFO("threads " << threads << ", n " << n << ", grain " << grain);
        std::mutex m;
        std::vector<int64_t> sizes;
        pool.parallelFor(n, grain, [&](int64_t begin, int64_t end) {
          std::lock_guard lock(m);
          sizes.push_back(end - begin);
        });
        for (int64_t s : sizes) CHECK(s >= std::min(grain, n));
      }
    }
  }
}

TEST_CASE("WorkPool parallelFor rethrows a chunk's exception after every chunk finished") {
  fucina::WorkPool pool(4);
  constexpr int64_t n = 1000;
  std::vector<std::atomic<int>> hits(n);
  REQUIRE_THROWS_WITH(pool.parallelFor(n, 10,
                                       [&](int64_t begin, int64_t end) {
                                         if (begin == 0) throw std::runtime_error("chunk at 0");
                                         std::this_thread::sleep_for(std::chrono::milliseconds(20));
                                         for (int64_t i = begin; i < end; ++i) hits[i].fetch_add(1);
                                       }),
                      "chunk at 0");
  // No chunk was still running when parallelFor returned.
  int64_t done = 0;
  for (auto& h : hits) done += h.load();
  int64_t first_chunk_end = n;
  for (int64_t i = 0; i < n; ++i)
    if (hits[i].load() == 1) {
      first_chunk_end = i;
      break;
    }
  CHECK(done == n - first_chunk_end);
  CHECK(first_chunk_end < n);

  SECTION("every chunk throws: one of their errors comes back") {
    REQUIRE_THROWS_MATCHES(pool.parallelFor(n, 10,
                                            [](int64_t begin, int64_t) {
                                              throw fucina::Error(ErrorCode::IndexOutOfRange,
                                                                  "chunk " + std::to_string(begin));
                                            }),
                           fucina::Error, test::HasCode(ErrorCode::IndexOutOfRange));
  }
  SECTION("the pool stays usable") {
    std::atomic<int64_t> sum{0};
    pool.parallelFor(n, 10, [&](int64_t b, int64_t e) { sum.fetch_add(e - b); });
    CHECK(sum.load() == n);
  }
}

TEST_CASE("WorkPool nested parallelFor does not deadlock") {
  fucina::WorkPool pool(2);
  std::atomic<int64_t> total{0};
  pool.parallelFor(8, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      pool.parallelFor(100, 1, [&](int64_t ib, int64_t ie) { total.fetch_add(ie - ib); });
  });
  CHECK(total.load() == 800);
}

TEST_CASE("WorkPool parallelFor waits by running only its own chunks, so a lock may be held across it") {
  fucina::WorkPool pool(2);
  // The worker is held busy; a foreign task queues behind it; then the caller's parallelFor
  // queues its second chunk behind the foreign task. The caller must run that chunk itself and
  // return without touching the foreign task (which, in the engine, could take a lock the
  // caller holds).
  std::atomic<bool> release{false}, foreign_ran{false}, worker_busy{false};
  std::atomic<int> waits_done{0};
  pool.submit([&] {
    worker_busy = true;
    while (!release) std::this_thread::yield();
    waits_done.fetch_add(1);
    pool.notifyAll();
  });
  while (!worker_busy) std::this_thread::yield();
  const auto caller = std::this_thread::get_id();
  pool.submit([&] {
    foreign_ran = true;
    waits_done.fetch_add(1);
    pool.notifyAll();
  });
  std::mutex held;
  std::set<std::thread::id> chunk_threads;
  {
    std::lock_guard lock(held);
    pool.parallelFor(2, 1, [&](int64_t, int64_t) { chunk_threads.insert(std::this_thread::get_id()); });
  }
  CHECK(chunk_threads == std::set<std::thread::id>{caller});
  CHECK_FALSE(foreign_ran.load());
  release = true;
  pool.helpUntil([&] { return waits_done.load() == 2; });
  CHECK(foreign_ran.load());
}

TEST_CASE("WorkPool submit and helpUntil run every task") {
  fucina::WorkPool pool(3);
  std::atomic<int> done{0};
  for (int i = 0; i < 100; ++i) {
    pool.submit([&] {
      done.fetch_add(1);
      pool.notifyAll();
    });
  }
  pool.helpUntil([&] { return done.load() == 100; });
  CHECK(done.load() == 100);
}

TEST_CASE("WorkPool wakes workers that went to sleep after spinning, and stops them sleeping") {
  // Workers spin ~200 us before sleeping (Note [Spin before sleeping]): idle past that, then give
  // work whose chunks block until a second thread takes one, so a sleeper must be woken.
  for (int round = 0; round < 5; ++round) {
    fucina::WorkPool pool(2);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    std::atomic<int> entered{0};
    pool.parallelFor(2, 1, [&](int64_t, int64_t) {
      entered.fetch_add(1);
      while (entered.load() < 2) std::this_thread::yield();  // needs the woken worker
    });
    CHECK(entered.load() == 2);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    std::atomic<int> done{0};
    pool.submit([&] {
      done.fetch_add(1);
      pool.notifyAll();
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    pool.helpUntil([&] { return done.load() == 1; });
    CHECK(done.load() == 1);
  }  // the destructor stops workers asleep or spinning
}

TEST_CASE("WorkPool parallelFor runs the chunk of the caller's own pool index first, on the caller") {
  // Note [Chunk c on thread c]: called from outside the pool the caller runs chunk 0 itself;
  // called from worker 1 (the main thread does not help here) it runs chunk 1 first, then the
  // other chunk, still queued.
  fucina::WorkPool pool(2);
  auto order = [&](bool from_worker) {
    std::mutex m;
    std::vector<std::pair<int64_t, std::thread::id>> ran;
    auto body = [&] {
      pool.parallelFor(2, 1, [&](int64_t b, int64_t) {
        std::lock_guard l(m);
        ran.emplace_back(b, std::this_thread::get_id());
      });
    };
    if (!from_worker) {
      body();
    } else {
      std::atomic<bool> done{false};
      pool.submit([&] {
        body();
        done.store(true);
      });
      while (!done.load()) std::this_thread::yield();  // not helping: the worker runs the task
    }
    return ran;
  };
  const auto outside = order(false);  // chunk 1 may run on either thread, at any time
  REQUIRE(outside.size() == 2);
  for (const auto& [chunk, thread] : outside)
    if (chunk == 0) CHECK(thread == std::this_thread::get_id());
  const auto inside = order(true);
  REQUIRE(inside.size() == 2);
  CHECK(inside[0].first == 1);
  CHECK(inside[0].second != std::this_thread::get_id());
  CHECK(inside[1].first == 0);
}

TEST_CASE("WorkPool under heavy lock contention still runs every task") {
  // More threads than cores submitting and notifying in tight loops: some find the pool's lock
  // held past its spins (Note [Spin for the pool's lock]) and must block on it.
  fucina::WorkPool pool(3);
  std::atomic<int> done{0};
  constexpr int kThreads = 6, kTasks = 3000;
  std::vector<std::thread> producers;
  for (int t = 0; t < kThreads; ++t)
    producers.emplace_back([&] {
      for (int i = 0; i < kTasks; ++i) {
        pool.submit([&] {
          done.fetch_add(1);
          pool.notifyAll();  // what helpUntil's predicate reads changed
        });
        pool.notifyAll();
      }
    });
  for (auto& p : producers) p.join();
  pool.helpUntil([&] { return done.load() == kThreads * kTasks; });
  CHECK(done.load() == kThreads * kTasks);
}

TEST_CASE("ExecContext threads honour ExecOptions") {
  ExecContext one(ExecOptions{.threads = 1});
  CHECK(one.threads() == 1);
  CHECK(one.workPool() == nullptr);

  ExecContext three(ExecOptions{.threads = 3});
  CHECK(three.threads() == 3);
  REQUIRE(three.workPool() != nullptr);
  CHECK(three.workPool()->size() == 3);

  ExecContext dflt;
  const int hw = static_cast<int>(std::thread::hardware_concurrency());
  CHECK(dflt.threads() == std::max(1, hw));

  REQUIRE_FUCINA_ERROR(ExecContext(ExecOptions{.threads = -1}), InvalidArgument);
}

// Note [Owner-first claims] (exec/claims.h).
TEST_CASE("OwnerFirstClaims: one thread running every owner in turn gets every index once, its own range first") {
  for (int owners : {1, 2, 3, 16}) {
    for (int64_t n : {0, 1, 2, 5, 31, 64, 1000}) {
      for (int64_t step : {1, 3, 64}) {
        INFO("owners " << owners << ", n " << n << ", step " << step);
        fucina::OwnerFirstClaims claims(n, owners, step);
        std::vector<int> hits(static_cast<size_t>(n));
        int64_t b = 0, e = 0;
        // Owner 0's first claim is the front of its fixed range [0, n/owners), then its own
        // range continues from where the last claim ended.
        if (n / owners > 0) {
          REQUIRE(claims.next(0, &b, &e));
          CHECK(b == 0);
          CHECK(e == std::min(step, n / owners));
          for (int64_t i = b; i < e; ++i) ++hits[static_cast<size_t>(i)];
        }
        for (int owner = 0; owner < owners; ++owner)
          while (claims.next(owner, &b, &e)) {
            REQUIRE(0 <= b);
            REQUIRE(b < e);
            REQUIRE(e <= n);
            REQUIRE(e - b <= step);
            for (int64_t i = b; i < e; ++i) ++hits[static_cast<size_t>(i)];
          }
        int wrong = 0;
        for (int h : hits) wrong += h != 1;
        CHECK(wrong == 0);
        CHECK_FALSE(claims.next(owners - 1, &b, &e));
      }
    }
  }
}

TEST_CASE("OwnerFirstClaims: a slow owner's last indices move to a fast one, each handed out once") {
  constexpr int64_t kN = 4000;
  for (int round = 0; round < 20; ++round) {
    fucina::OwnerFirstClaims claims(kN, 2, 10);
    std::vector<std::atomic<int>> hits(kN);
    std::atomic<int64_t> taken_from_other{0};
    auto run = [&](int owner, std::chrono::microseconds per_claim) {
      for (int64_t b, e; claims.next(owner, &b, &e);) {
        const bool own = owner == 0 ? e <= kN / 2 : b >= kN / 2;
        if (!own) taken_from_other.fetch_add(e - b);
        for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)].fetch_add(1);
        std::this_thread::sleep_for(per_claim);
      }
    };
    std::thread slow(run, 1, std::chrono::microseconds(200));
    run(0, std::chrono::microseconds(0));
    slow.join();
    int wrong = 0;
    for (auto& h : hits) wrong += h.load() != 1;
    REQUIRE(wrong == 0);
    CHECK(taken_from_other.load() > 0);  // the fast owner finished its range long before
  }
}

TEST_CASE("ExecContext parallelFor runs small ranges inline and covers large ones") {
  ExecContext ctx(ExecOptions{.threads = 2});
  SECTION("n < 2 * grain: one inline call") {
    std::vector<std::pair<int64_t, int64_t>> calls;
    std::thread::id caller = std::this_thread::get_id(), ran_on;
    ctx.parallelFor(10, 8, [&](int64_t b, int64_t e) {
      calls.emplace_back(b, e);
      ran_on = std::this_thread::get_id();
    });
    REQUIRE(calls.size() == 1);
    CHECK(calls[0] == std::pair<int64_t, int64_t>(0, 10));
    CHECK(ran_on == caller);
  }
  SECTION("large ranges are covered exactly once") {
    std::vector<std::atomic<int>> hits(10000);
    ctx.parallelFor(10000, 16, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) hits[i].fetch_add(1);
    });
    int wrong = 0;
    for (auto& h : hits) wrong += h.load() != 1;
    CHECK(wrong == 0);
  }
  SECTION("a single-threaded context always runs inline") {
    ExecContext one(ExecOptions{.threads = 1});
    int calls = 0;
    one.parallelFor(10000, 1, [&](int64_t b, int64_t e) {
      ++calls;
      CHECK(b == 0);
      CHECK(e == 10000);
    });
    CHECK(calls == 1);
  }
}
