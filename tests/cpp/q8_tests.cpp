// q8_0 (Note [q8_0 layout], core/q8.h): quantize's error bound and exact values, its errors,
// views and copies of q8_0 tensors, thread independence, safetensors, attention over 16-bit and
// q8_0 KV caches, and the per-dtype memory counters.
#include "test_helpers.h"

#include <cstring>

#include "fucina/core/q8.h"
#include "fucina/backend/cpu/copy.h"

using fucina::DType;
using fucina::ExecContext;
using fucina::Tag;
using fucina::Tags;
using fucina::Tensor;
namespace io = fucina::io;
namespace q8 = fucina::q8;
using fucina::internal::blockAxisOf;

namespace {

std::vector<float> noise(size_t n, uint64_t seed) {
  ExecContext ctx(fucina::ExecOptions{.threads = 1});
  return Tensor::normal(ctx, {"n"}, {static_cast<int64_t>(n)}, 0, 2, seed).toVector();
}

// The other axes of t in tag order, then block: the order of t's blocks.
Tags blockOrder(const Tensor& t, Tag block) {
  Tags order;
  for (Tag g : t.tags())
    if (!(g == block)) order.push_back(g);
  order.push_back(block);
  return order;
}

// Quantizes x along block and checks every dequantized value against its block's scale: the stored
// d is f16(max|x| / 127) and |x - d·q| <= d/2.
void checkRoundTrip(ExecContext& ctx, const Tensor& x, Tag block) {
  const Tensor q = x.quantize(ctx, DType::q8_0, block);
  REQUIRE(q.dtype() == DType::q8_0);
  CHECK(q.tags() == x.tags());
  CHECK(q.shape() == x.shape());
  CHECK_FALSE(q.requiresGrad());
  CHECK(blockAxisOf(q.value()) == block);
  CHECK(q.value().storage()->bytes() == q8::bytesFor(x.numel()));
  const Tags order = blockOrder(x, block);
  const std::vector<float> want = x.permuteTo(ctx, order).toVector();  // blocks of 32 in a row
  const std::vector<float> got = q.to(ctx, DType::f32).permuteTo(ctx, order).toVector();
  REQUIRE(got.size() == want.size());
  const std::byte* bytes = q.value().storage()->data();
  for (size_t b = 0; b * 32 < want.size(); ++b) {
    float amax = 0;
    for (size_t i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(want[b * 32 + i]));
    const float d = q8::scaleOf(bytes + b * q8::kBlockBytes);
    REQUIRE(d == fucina::f16ToF32(fucina::f32ToF16(amax / 127)));
    for (size_t i = 0; i < 32; ++i) {
      const size_t e = b * 32 + i;
      INFO("block " << b << " element " << i << ": " << want[e] << " became " << got[e] << ", d " << d);
      REQUIRE(std::fabs(want[e] - got[e]) <= d / 2 * (1 + 1e-5f) + 1e-30f);
    }
  }
}

}  // namespace

TEST_CASE("quantize to q8_0 round-trips within half a step per element", "[q8]") {
  ExecContext ctx(fucina::ExecOptions{.threads = 2});
  SECTION("odd block counts, block axis last") {
    checkRoundTrip(ctx, Tensor::fromSlice(ctx, {"r", "c"}, {3, 96}, noise(288, 1)), "c");
  }
  SECTION("block axis first") {
    checkRoundTrip(ctx, Tensor::fromSlice(ctx, {"c", "r"}, {160, 5}, noise(800, 2)), "c");
  }
  SECTION("a size-1 other axis and a rank-3 middle block axis") {
    checkRoundTrip(ctx, Tensor::fromSlice(ctx, {"one", "c"}, {1, 160}, noise(160, 3)), "c");
    checkRoundTrip(ctx, Tensor::fromSlice(ctx, {"a", "t", "b"}, {2, 64, 3}, noise(384, 4)), "t");
  }
  SECTION("an empty other axis") {
    const Tensor x = Tensor::zeros(ctx, {"e", "c"}, {0, 64});
    const Tensor q = x.quantize(ctx, DType::q8_0, "c");
    CHECK(q.dtype() == DType::q8_0);
    CHECK(q.shape() == fucina::Extents{0, 64});
    CHECK(q.to(ctx, DType::f32).toVector().empty());
  }
  SECTION("non-contiguous input: a permuted, narrowed view") {
    const Tensor base = Tensor::fromSlice(ctx, {"a", "b"}, {70, 9}, noise(630, 5));
    checkRoundTrip(ctx, base.narrow(ctx, "a", 3, 64).permuteTo(ctx, {"b", "a"}), "a");
    checkRoundTrip(ctx, base.narrow(ctx, "a", 3, 64).narrow(ctx, "b", 1, 4), "a");
  }
  SECTION("f16 and bf16 inputs") {
    const Tensor x = Tensor::fromSlice(ctx, {"r", "c"}, {4, 64}, noise(256, 6));
    checkRoundTrip(ctx, x.to(ctx, DType::f16), "c");
    checkRoundTrip(ctx, x.to(ctx, DType::bf16).permuteTo(ctx, {"c", "r"}), "c");
  }
  SECTION("a variable quantizes to a constant") {
    const Tensor x = Tensor::variableFromSlice(ctx, {"c"}, {32}, noise(32, 7));
    CHECK_FALSE(x.quantize(ctx, DType::q8_0, "c").requiresGrad());
  }
}

TEST_CASE("quantize: exact values on hand-made blocks, ties away from zero, a zero block", "[q8]") {
  ExecContext ctx;
  // Block 0: max |x| = 127, so d = 1 exactly and q = round(x). Block 1: max 254, d = 2. Block 2: zeros.
  std::vector<float> x(96, 0.0f);
  const float b0[] = {127, -127, 0.5f, -0.5f, 1.5f, 2.49f, -2.5f, 100.4f, 3, -0.49f};
  std::copy(std::begin(b0), std::end(b0), x.begin());
  const float b1[] = {254, 3, -1, 1, 5.2f};
  std::copy(std::begin(b1), std::end(b1), x.begin() + 32);
  const Tensor q = Tensor::fromSlice(ctx, {"c"}, {96}, x).quantize(ctx, DType::q8_0, "c");
  const std::byte* bytes = q.value().storage()->data();
  auto bits = [&](size_t block) {
    uint16_t v;
    std::memcpy(&v, bytes + block * q8::kBlockBytes, 2);
    return v;
  };
  auto values = [&](size_t block) {
    const int8_t* v = q8::valuesOf(bytes + block * q8::kBlockBytes);
    return std::vector<int>(v, v + 32);
  };
  CHECK(bits(0) == 0x3C00);  // 1.0 in f16
  CHECK(bits(1) == 0x4000);  // 2.0
  CHECK(bits(2) == 0);       // d == 0
  std::vector<int> want0 = {127, -127, 1, -1, 2, 2, -3, 100, 3, 0};
  want0.resize(32, 0);
  CHECK(values(0) == want0);
  std::vector<int> want1 = {127, 2, -1, 1, 3};  // 1.5 -> 2, -0.5 -> -1, 0.5 -> 1, 2.6 -> 3
  want1.resize(32, 0);
  CHECK(values(1) == want1);
  CHECK(values(2) == std::vector<int>(32, 0));
  const std::vector<float> back = q.toVector();
  CHECK(back[6] == -3.0f);
  CHECK(back[33] == 4.0f);
  CHECK(std::all_of(back.begin() + 64, back.end(), [](float v) { return v == 0; }));
  CHECK(q.dataConst()[0] == 127.0f);  // dataConst dequantizes too
}

TEST_CASE("quantize and q8_0 operands: bad inputs and their codes", "[q8]") {
  ExecContext ctx;
  const Tensor x = Tensor::fromSlice(ctx, {"r", "c"}, {2, 64}, noise(128, 8));
  CHECK_FUCINA_ERROR(x.quantize(ctx, DType::f16, "c"), InvalidArgument);
  CHECK_FUCINA_ERROR(x.quantize(ctx, DType::q8_0, "zz"), ShapeMismatch);
  CHECK_FUCINA_ERROR(x.narrow(ctx, "c", 0, 33).quantize(ctx, DType::q8_0, "c"), InvalidArgument);
  CHECK_FUCINA_ERROR(x.quantize(ctx, DType::q8_0, "r"), InvalidArgument);  // extent 2
  CHECK_FUCINA_ERROR(Tensor::fromInts(ctx, {"c"}, {32}, std::vector<int64_t>(32, 1)).quantize(ctx, DType::q8_0, "c"),
                     DTypeMismatch);
  CHECK_FUCINA_ERROR(x.to(ctx, DType::f64).quantize(ctx, DType::q8_0, "c"), DTypeMismatch);
  CHECK_FUCINA_ERROR(x.to(ctx, DType::q8_0), DTypeMismatch);
  try {
    (void)x.to(ctx, DType::q8_0);
  } catch (const fucina::Error& e) {
    CHECK(std::string(e.what()).find("quantize") != std::string::npos);
  }
  const Tensor q = x.quantize(ctx, DType::q8_0, "c");
  CHECK_FUCINA_ERROR(q.quantize(ctx, DType::q8_0, "c"), DTypeMismatch);
  CHECK_FUCINA_ERROR(Tensor::zeros(ctx, {"c"}, {32}, DType::q8_0), DTypeMismatch);
  for (auto op : std::initializer_list<std::function<Tensor()>>{
           [&] { return q.exp(ctx); }, [&] { return q.add(ctx, x); }, [&] { return x.mul(ctx, q); },
           [&] { return q.sum(ctx, "c"); }, [&] { return q.softmax(ctx, "c"); },
           [&] { return q.reshape(ctx, {"n"}, {128}); }, [&] { return q.merge(ctx, {"r", "c"}, "n"); },
           [&] { return q.slice(ctx, "c", 0, 64, 2); }}) {
    try {
      op();
      FAIL("no error");
    } catch (const fucina::Error& e) {
      INFO(e.what());
      CHECK(e.code() == fucina::ErrorCode::DTypeMismatch);
      CHECK(std::string(e.what()).find("dequantize") != std::string::npos);
    }
  }
  // Writing into q8_0 element by element stays refused.
  CHECK_FUCINA_ERROR(fucina::kernels::copyConvert(x.value(), q.value()), DTypeMismatch);
}

TEST_CASE("q8_0 views: permute, narrow by whole blocks, clone and contiguous", "[q8]") {
  ExecContext ctx(fucina::ExecOptions{.threads = 2});
  const Tensor x = Tensor::fromSlice(ctx, {"r", "c"}, {3, 128}, noise(384, 9));
  const Tensor q = x.quantize(ctx, DType::q8_0, "c");
  const Tensor deq = q.to(ctx, DType::f32);
  // A permuted view dequantizes to the permuted values.
  const Tensor qt = q.permuteTo(ctx, {"c", "r"});
  CHECK(qt.dtype() == DType::q8_0);
  CHECK(blockAxisOf(qt.value()) == Tag("c"));
  CHECK(qt.to(ctx, DType::f32).toVector() == deq.permuteTo(ctx, {"c", "r"}).toVector());
  CHECK(qt.toVector() == deq.permuteTo(ctx, {"c", "r"}).toVector());
  CHECK(qt.to(ctx, DType::f16).toVector() == deq.permuteTo(ctx, {"c", "r"}).to(ctx, DType::f16).toVector());
  // Narrowing: the block axis by whole blocks only, other axes freely.
  CHECK(q.narrow(ctx, "c", 32, 64).toVector() == deq.narrow(ctx, "c", 32, 64).toVector());
  CHECK(q.narrow(ctx, "r", 1, 2).toVector() == deq.narrow(ctx, "r", 1, 2).toVector());
  CHECK(q.select(ctx, "r", 2).toVector() == deq.select(ctx, "r", 2).toVector());
  CHECK(q.slice(ctx, "c", 64, 128).toVector() == deq.slice(ctx, "c", 64, 128).toVector());
  CHECK_FUCINA_ERROR(q.narrow(ctx, "c", 16, 32), InvalidArgument);
  CHECK_FUCINA_ERROR(q.narrow(ctx, "c", 0, 40), InvalidArgument);
  CHECK_FUCINA_ERROR(q.select(ctx, "c", 0), InvalidArgument);
  CHECK(q.withTags(ctx, {"a", "b"}).toVector() == deq.toVector());
  // Copies: block copies into the canonical layout (other axes in tag order, block axis last).
  const Tensor view = q.narrow(ctx, "c", 32, 96).narrow(ctx, "r", 1, 2).permuteTo(ctx, {"c", "r"});
  const Tensor copy = view.contiguous(ctx);
  CHECK(copy.dtype() == DType::q8_0);
  CHECK(copy.tags() == view.tags());
  CHECK(copy.value().strides() == std::vector<int64_t>{1, 96});
  CHECK(copy.toVector() == view.toVector());
  CHECK(copy.contiguous(ctx).value().storage() == copy.value().storage());  // already canonical
  const auto clone = view.value().clone(ctx);
  CHECK(clone.storage() != view.value().storage());
  CHECK(clone.toVector() == view.toVector());
  CHECK(view.to(ctx, DType::q8_0).toVector() == view.toVector());
  // A broadcast q8_0 view reads like its source, and copies too.
  const Tensor wide = q.broadcastTo(ctx, {"b", "r", "c"}, {2, 3, 128});
  CHECK(wide.contiguous(ctx).toVector() == deq.broadcastTo(ctx, {"b", "r", "c"}, {2, 3, 128}).toVector());
  CHECK_FUCINA_ERROR(blockAxisOf(x.value()), DTypeMismatch);
}

TEST_CASE("quantize gives the same bytes on 1 and 2 threads", "[q8]") {
  ExecContext one(fucina::ExecOptions{.threads = 1}), two(fucina::ExecOptions{.threads = 2});
  const std::vector<float> values = noise(64 * 4096, 10);
  auto bytes = [&](ExecContext& ctx) {
    const Tensor q = Tensor::fromSlice(ctx, {"r", "c"}, {4096, 64}, values).quantize(ctx, DType::q8_0, "r");
    const auto* p = reinterpret_cast<const uint8_t*>(q.value().storage()->data());
    return std::make_pair(std::vector<uint8_t>(p, p + q.value().storage()->bytes()), q.to(ctx, DType::f32).toVector());
  };
  const auto a = bytes(one), b = bytes(two);
  CHECK(a.first == b.first);
  CHECK(a.second == b.second);
}

TEST_CASE("safetensors stores q8_0 as U8 blocks with a note and restores it", "[q8][io]") {
  ExecContext ctx;
  const Tensor x = Tensor::fromSlice(ctx, {"in", "out"}, {64, 3}, noise(192, 11));
  const Tensor q = x.quantize(ctx, DType::q8_0, "in");  // block axis first: canonical is not row-major
  const Tensor qv = q.permuteTo(ctx, {"out", "in"}).narrow(ctx, "out", 1, 2);  // a view
  const io::NamedTensors tensors = {{"q", q}, {"w", x}, {"qv", qv}};
  const auto bytes = io::encodeSafetensors(ctx, tensors, {{"format", "pt"}});
  const std::string header(bytes.begin() + 8, bytes.begin() + 8 + static_cast<long>(bytes[0] + 256 * bytes[1]));
  CHECK(header.find("\"q\":{\"dtype\":\"U8\",\"shape\":[6,34]") != std::string::npos);
  CHECK(header.find("\"q8_0.q\":") != std::string::npos);
  io::Metadata meta;
  const io::NamedTensors back = io::decodeSafetensors(ctx, bytes, &meta);
  CHECK(meta == io::Metadata{{"format", "pt"}});
  REQUIRE(back.size() == 3);
  for (size_t i : {0u, 2u}) {
    const Tensor& a = tensors[i].second;
    const Tensor& b = back[i].second;
    INFO(tensors[i].first);
    CHECK(b.dtype() == DType::q8_0);
    CHECK(b.tags() == a.tags());
    CHECK(b.shape() == a.shape());
    CHECK(blockAxisOf(b.value()) == blockAxisOf(a.value()));
    CHECK(b.toVector() == a.toVector());
    // The stored blocks are the canonical copy's bytes.
    const auto canon = a.value().contiguous(ctx);
    CHECK(std::memcmp(b.value().storage()->data(), canon.storage()->data() + q8::bytesFor(canon.offset()),
                      q8::bytesFor(a.numel())) == 0);
  }
  CHECK(back[1].second.toVector() == x.toVector());
  CHECK(io::encodeSafetensors(ctx, back, meta) == bytes);
  CHECK_FUCINA_ERROR(io::encodeSafetensors(ctx, tensors, {{"q8_0.w", "{}"}}), InvalidArgument);
}

TEST_CASE("safetensors: q8_0 notes that do not fit, and U8 without a note", "[q8][io]") {
  ExecContext ctx;
  auto file = [](const std::string& entry_shape, size_t body, const std::string& note) {
    std::string json = "{\"q\":{\"dtype\":\"U8\",\"shape\":" + entry_shape + ",\"data_offsets\":[0," +
                       std::to_string(body) + "]}";
    if (!note.empty()) json += ",\"__metadata__\":{\"q8_0.q\":\"" + note + "\"}";
    json += "}";
    std::vector<uint8_t> out(8);
    for (int i = 0; i < 8; ++i) out[static_cast<size_t>(i)] = static_cast<uint8_t>(json.size() >> (8 * i));
    out.insert(out.end(), json.begin(), json.end());
    out.resize(out.size() + body, 0);
    return out;
  };
  const std::string good = R"({\"tags\":[\"r\",\"c\"],\"shape\":[2,32],\"block_axis\":\"c\"})";
  const auto ok = io::decodeSafetensors(ctx, file("[2,34]", 68, good));
  CHECK(ok[0].second.dtype() == DType::q8_0);
  CHECK(ok[0].second.shape() == fucina::Extents{2, 32});
  // Without the note: plain U8.
  const auto plain = io::decodeSafetensors(ctx, file("[2,34]", 68, ""));
  CHECK(plain[0].second.dtype() == DType::u8);
  CHECK(plain[0].second.shape() == fucina::Extents{2, 34});
  const std::pair<std::string, std::vector<uint8_t>> bad[] = {
      {"wrong byte count", file("[1,34]", 34, good)},
      {"block axis not in the tags", file("[2,34]", 68, R"({\"tags\":[\"r\",\"c\"],\"shape\":[2,32],\"block_axis\":\"x\"})")},
      {"extent not a multiple of 32", file("[3,34]", 102, R"({\"tags\":[\"r\",\"c\"],\"shape\":[2,48],\"block_axis\":\"c\"})")},
      {"tags and shape disagree", file("[2,34]", 68, R"({\"tags\":[\"c\"],\"shape\":[2,32],\"block_axis\":\"c\"})")},
      {"not JSON", file("[2,34]", 68, "r,c")},
      {"no block axis", file("[2,34]", 68, R"({\"tags\":[\"r\",\"c\"],\"shape\":[2,32]})")},
      {"duplicate tags", file("[2,34]", 68, R"({\"tags\":[\"c\",\"c\"],\"shape\":[2,32],\"block_axis\":\"c\"})")},
  };
  for (const auto& [what, bytes] : bad) {
    INFO(what);
    CHECK_FUCINA_ERROR(io::decodeSafetensors(ctx, bytes), InvalidArgument);
  }
  // A note for a tensor the file lacks.
  std::string json = R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"__metadata__":{"q8_0.q":"{}"}})";
  std::vector<uint8_t> lone(8);
  lone[0] = static_cast<uint8_t>(json.size());
  lone.insert(lone.end(), json.begin(), json.end());
  lone.push_back(0);
  CHECK_FUCINA_ERROR(io::decodeSafetensors(ctx, lone), InvalidArgument);
}

TEST_CASE("groupedAttention over f16 and q8_0 KV constants: gradient to q only", "[q8]") {
  ExecContext ctx(fucina::ExecOptions{.threads = 2});
  const Tags qt = {"b", "head", "t", "d"}, kt = {"b", "head", "t", "d"};
  const std::vector<float> qv = noise(2 * 4 * 3 * 32, 12), kv = noise(2 * 2 * 5 * 32, 13), vv = noise(2 * 2 * 5 * 32, 14);
  const Tensor k = Tensor::fromSlice(ctx, kt, {2, 2, 5, 32}, kv), v = Tensor::fromSlice(ctx, kt, {2, 2, 5, 32}, vv);
  const Tensor w = Tensor::fromSlice(ctx, qt, {2, 4, 3, 32}, noise(2 * 4 * 3 * 32, 15));
  struct Cache {
    const char* name;
    Tensor k, v;
  };
  const Cache caches[] = {
      {"f16", k.to(ctx, DType::f16), v.to(ctx, DType::f16)},
      {"bf16 k, q8_0 v", k.to(ctx, DType::bf16), v.quantize(ctx, DType::q8_0, "d")},
      {"q8_0", k.quantize(ctx, DType::q8_0, "d"), v.permuteTo(ctx, {"d", "t", "head", "b"}).quantize(ctx, DType::q8_0, "d")},
  };
  for (const Cache& c : caches) {
    INFO(c.name);
    const Tensor q1 = Tensor::variableFromSlice(ctx, qt, {2, 4, 3, 32}, qv);
    const Tensor got = Tensor::groupedAttention(ctx, q1, c.k, c.v);
    CHECK(got.dtype() == DType::f32);
    got.mul(ctx, w).sumAll(ctx).backward(ctx);
    const Tensor q2 = Tensor::variableFromSlice(ctx, qt, {2, 4, 3, 32}, qv);
    const Tensor want = Tensor::groupedAttention(ctx, q2, c.k.to(ctx, DType::f32), c.v.to(ctx, DType::f32));
    want.mul(ctx, w).sumAll(ctx).backward(ctx);
    CHECK(got.toVector() == want.toVector());
    CHECK(test::gradOf(ctx, q1) == test::gradOf(ctx, q2));
  }
  // A 16-bit constant q follows the dtype rule: f16 when every float operand is f16 (q8_0 aside).
  const Tensor qh = Tensor::fromSlice(ctx, qt, {2, 4, 3, 32}, qv).to(ctx, DType::f16);
  CHECK(Tensor::groupedAttention(ctx, qh, caches[0].k, caches[0].v).dtype() == DType::f16);
  CHECK(Tensor::groupedAttention(ctx, qh, caches[2].k, caches[2].v).dtype() == DType::f16);
  CHECK(Tensor::groupedAttention(ctx, qh, k, caches[2].v).dtype() == DType::f32);
  const Tensor r = Tensor::groupedAttention(ctx, qh, caches[2].k, caches[2].v);
  const Tensor r32 = Tensor::groupedAttention(ctx, qh.to(ctx, DType::f32), caches[2].k.to(ctx, DType::f32),
                                              caches[2].v.to(ctx, DType::f32));
  CHECK(r.toVector() == r32.to(ctx, DType::f16).toVector());
  // Grad-requiring 16-bit operands are refused; a q8_0 q is not an f32 q.
  const Tensor kvar = Tensor::variableFromSlice(ctx, kt, {2, 2, 5, 32}, kv).to(ctx, DType::f16);
  REQUIRE(kvar.requiresGrad());
  const Tensor q1 = Tensor::variableFromSlice(ctx, qt, {2, 4, 3, 32}, qv);
  CHECK_FUCINA_ERROR(Tensor::groupedAttention(ctx, q1, kvar, caches[0].v), UnsupportedGradient);
  CHECK_FUCINA_ERROR(Tensor::groupedAttention(ctx, q1, k, kvar.withTags(ctx, kt)), UnsupportedGradient);
  CHECK_FUCINA_ERROR(Tensor::groupedAttention(ctx, q1.to(ctx, DType::f16), k, v), UnsupportedGradient);
  CHECK_FUCINA_ERROR(Tensor::groupedAttention(ctx, q1.quantize(ctx, DType::q8_0, "d"), k, v), DTypeMismatch);
  {
    fucina::NoGradScope off = fucina::noGrad();  // without recording, the cast variable is a value
    CHECK(Tensor::groupedAttention(ctx, q1, kvar, caches[0].v).toVector() ==
          Tensor::groupedAttention(ctx, q1, caches[0].k, caches[0].v).toVector());
  }
}

TEST_CASE("memory counts live bytes by dtype", "[q8]") {
  ExecContext ctx(fucina::ExecOptions{.threads = 1});
  auto sum = [](const fucina::MemoryStats& m) {
    size_t s = 0;
    for (size_t b : m.bytes_by_dtype) s += b;
    return s;
  };
  const auto at = [](const fucina::MemoryStats& m, DType d) { return m.bytes_by_dtype[static_cast<size_t>(d)]; };
  Tensor w = Tensor::uniform(ctx, {"out", "in"}, {64, 256}, -1, 1, 1);
  Tensor q = w.quantize(ctx, DType::q8_0, "in");
  auto m = ctx.memory();
  CHECK(at(m, DType::q8_0) == 64 * 256 / 32 * 34);  // 17408 bytes, 1.0625 per parameter
  CHECK(at(m, DType::f32) == 65536);
  CHECK(sum(m) == m.live_bytes);
  Tensor h = w.to(ctx, DType::f16);
  Tensor i = Tensor::fromInts(ctx, {"n"}, {3}, {1, 2, 3}, DType::i64);
  m = ctx.memory();
  CHECK(at(m, DType::f16) == 32768);
  CHECK(at(m, DType::i64) == 24);
  CHECK(sum(m) == m.live_bytes);
  {
    fucina::Scratch<double> s(ctx.account(), 4);
    fucina::Scratch<int32_t> t(ctx.account(), 4);
    fucina::Scratch<uint16_t> u(ctx.account(), 4);
    CHECK(at(ctx.memory(), DType::f64) == 32);
    CHECK(at(ctx.memory(), DType::i32) == 16);
    CHECK(at(ctx.memory(), DType::u8) == 8);
  }
  q.dispose();
  h.dispose();
  m = ctx.memory();
  CHECK(at(m, DType::q8_0) == 0);  // freed buffers sit in the cache, not live
  CHECK(at(m, DType::f16) == 0);
  CHECK(at(m, DType::u8) == 0);
  CHECK(m.cached_bytes > 0);
  CHECK(sum(m) == m.live_bytes);
}
