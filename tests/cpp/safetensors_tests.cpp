// safetensors: round trips of every storable dtype with axis names, a file in the exact byte
// layout the format specifies (written by hand here), malformed files, and a model's parameters
// saved and loaded in place.
#include "test_helpers.h"

#include <cstring>
#include <filesystem>

using fucina::DType;
using fucina::ExecContext;
using fucina::Tensor;
namespace io = fucina::io;
namespace nn = fucina::nn;

namespace {

std::vector<uint8_t> withHeader(const std::string& json, const std::vector<uint8_t>& body) {
  std::vector<uint8_t> out(8);
  for (int i = 0; i < 8; ++i) out[static_cast<size_t>(i)] = static_cast<uint8_t>(json.size() >> (8 * i));
  out.insert(out.end(), json.begin(), json.end());
  out.insert(out.end(), body.begin(), body.end());
  return out;
}

std::vector<uint8_t> floatBytes(std::initializer_list<float> v) {
  std::vector<uint8_t> out(v.size() * 4);
  std::memcpy(out.data(), std::data(v), out.size());
  return out;
}

}  // namespace

TEST_CASE("safetensors round-trips dtypes, axis names, views and metadata", "[io]") {
  ExecContext ctx;
  const Tensor w = Tensor::fromSlice(ctx, {"out", "in"}, {2, 3}, {1, 2, 3, 4, 5, 6});
  const io::NamedTensors tensors = {
      {"w", w},
      {"w.t", w.permuteTo(ctx, {"in", "out"})},  // a strided view is written row-major in its order
      {"ids", Tensor::fromInts(ctx, {"batch"}, {3}, {7, -1, 300000})},
      {"big", Tensor::fromInts(ctx, {"n"}, {2}, {1, 2}, DType::i64)},
      {"half", w.to(ctx, DType::f16)},
      {"brain", w.to(ctx, DType::bf16)},
      {"bytes", Tensor::fromInts(ctx, {"n"}, {2}, {0, 255}, DType::u8)},
      {"scalar", Tensor::scalar(ctx, 2.5)},
      {"empty", Tensor::zeros(ctx, {"e"}, {0})}};
  io::Metadata meta;
  const auto decoded = io::decodeSafetensors(ctx, io::encodeSafetensors(ctx, tensors, {{"format", "pt"}}), &meta);
  CHECK(meta == io::Metadata{{"format", "pt"}});
  REQUIRE(decoded.size() == tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    INFO(tensors[i].first);
    CHECK(decoded[i].first == tensors[i].first);
    CHECK(decoded[i].second.dtype() == tensors[i].second.dtype());
    CHECK(decoded[i].second.tags() == tensors[i].second.tags());
    CHECK(decoded[i].second.shape() == tensors[i].second.shape());
    CHECK(decoded[i].second.toVector() == tensors[i].second.toVector());
  }
  REQUIRE_FUCINA_ERROR(io::encodeSafetensors(ctx, {{"a", w}, {"a", w}}), InvalidArgument);
  REQUIRE_FUCINA_ERROR(io::encodeSafetensors(ctx, {{"a", w}}, {{"axes.a", "x"}}), InvalidArgument);
}

TEST_CASE("safetensors reads a file written by another tool", "[io]") {
  ExecContext ctx;
  // As torch/safetensors writes it: no axis names, so axes are d0, d1, ...
  const auto bytes = withHeader(R"({"b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                R"("a":{"dtype":"F32","shape":[1,2],"data_offsets":[8,16]}})",
                                floatBytes({1.5f, -2, 3, 4}));
  const auto t = io::decodeSafetensors(ctx, bytes);
  REQUIRE(t.size() == 2);
  CHECK(t[0].first == "b");
  CHECK(t[0].second.toVector() == std::vector<float>{1.5f, -2});
  CHECK(t[1].second.tags() == fucina::Tags{"d0", "d1"});
  CHECK(t[1].second.toVector() == std::vector<float>{3, 4});
}

TEST_CASE("safetensors rejects malformed files", "[io]") {
  ExecContext ctx;
  const auto body = floatBytes({1, 2});
  const auto entry = [](const std::string& e) { return withHeader("{\"a\":" + e + "}", floatBytes({1, 2})); };
  REQUIRE_FUCINA_ERROR(io::decodeSafetensors(ctx, std::vector<uint8_t>{1, 2}), InvalidArgument);
  REQUIRE_FUCINA_ERROR(io::decodeSafetensors(ctx, withHeader("{\"a\":", body)), InvalidArgument);
  REQUIRE_FUCINA_ERROR(io::decodeSafetensors(ctx, entry(R"({"dtype":"F32","shape":[3],"data_offsets":[0,8]})")), InvalidArgument);
  REQUIRE_FUCINA_ERROR(io::decodeSafetensors(ctx, entry(R"({"dtype":"F32","shape":[2],"data_offsets":[0,12]})")), InvalidArgument);
  REQUIRE_FUCINA_ERROR(io::decodeSafetensors(ctx, entry(R"({"dtype":"F32","shape":[1],"data_offsets":[0,4]})")), InvalidArgument);  // a gap
  REQUIRE_FUCINA_ERROR(io::decodeSafetensors(ctx, entry(R"({"dtype":"C64","shape":[1],"data_offsets":[0,8]})")), InvalidArgument);
  REQUIRE_FUCINA_ERROR(io::decodeSafetensors(ctx, entry(R"({"shape":[2],"data_offsets":[0,8]})")), InvalidArgument);
  auto huge = withHeader("{}", {});
  huge[7] = 0x10;  // a header length past the end
  REQUIRE_FUCINA_ERROR(io::decodeSafetensors(ctx, huge), InvalidArgument);
}

TEST_CASE("a model's parameters save and load in place", "[io]") {
  ExecContext ctx;
  const auto path = (std::filesystem::temp_directory_path() / "fucina_mlp.safetensors").string();
  const nn::Mlp a(ctx, nn::MlpConfig{.sizes = {6, 5, 3}}, 1), b(ctx, nn::MlpConfig{.sizes = {6, 5, 3}}, 2);
  nn::saveParameters(ctx, path, a.parameters());
  const Tensor x = Tensor::normal(ctx, {"batch", "in"}, {4, 6}, 0, 1, 3);
  CHECK(b(ctx, x).toVector() != a(ctx, x).toVector());
  nn::loadParameters(ctx, path, b.parameters());
  CHECK(b(ctx, x).toVector() == a(ctx, x).toVector());
  const nn::Mlp wider(ctx, nn::MlpConfig{.sizes = {6, 7, 3}}, 1), deeper(ctx, nn::MlpConfig{.sizes = {6, 5, 5, 3}}, 1);
  REQUIRE_FUCINA_ERROR(nn::loadParameters(ctx, path, wider.parameters()), ShapeMismatch);
  REQUIRE_FUCINA_ERROR(nn::loadParameters(ctx, path, deeper.parameters()), InvalidArgument);
  REQUIRE_FUCINA_ERROR(nn::loadParameters(ctx, path + ".missing", b.parameters()), InvalidArgument);
  std::filesystem::remove(path);
}

// Hostile headers: each fails with InvalidArgument, the decoder's code for a corrupt
// file, before it allocates anything the file does not hold.
TEST_CASE("safetensors: a deeply nested header is InvalidArgument, not a stack overflow", "[io]") {
  ExecContext ctx;
  // 1,000,000 levels (2 MB): deep enough to overflow any thread's stack without the bound.
  const std::string deep = std::string(1000000, '[') + std::string(1000000, ']');
  REQUIRE_FUCINA_ERROR(io::decodeSafetensors(ctx, withHeader("{\"a\":" + deep + "}", {})), InvalidArgument);
  std::string objects;
  for (int i = 0; i < 1000000; ++i) objects += "{\"a\":";
  REQUIRE_FUCINA_ERROR(io::decodeSafetensors(ctx, withHeader(objects, {})), InvalidArgument);
}

TEST_CASE("safetensors: sizes and offsets are checked against the file before allocating", "[io]") {
  ExecContext ctx;
  const auto entry = [](const std::string& e, const std::vector<uint8_t>& body = {}) {
    return withHeader("{\"a\":" + e + "}", body);
  };
  // 1 GiB claimed, nothing stored: no allocation at all.
  REQUIRE_FUCINA_ERROR(io::decodeSafetensors(ctx, entry(R"({"dtype":"F32","shape":[268435456],"data_offsets":[0,0]})")), InvalidArgument);
  REQUIRE_FUCINA_ERROR(io::decodeSafetensors(ctx, entry(R"({"dtype":"F32","shape":[65536,4096],"data_offsets":[0,8]})", floatBytes({1, 2}))), InvalidArgument);
  // Extents whose product overflows int64, and a byte count that overflows after the dtype size.
  REQUIRE_FUCINA_ERROR(io::decodeSafetensors(ctx, entry(R"({"dtype":"F32","shape":[4294967296,4294967296,2],"data_offsets":[0,8]})", floatBytes({1, 2}))), InvalidArgument);
  REQUIRE_FUCINA_ERROR(io::decodeSafetensors(ctx, entry(R"({"dtype":"F64","shape":[2305843009213693952],"data_offsets":[0,8]})", floatBytes({1, 2}))), InvalidArgument);
  // A zero-extent axis holds no bytes, whatever the others; but their product must still fit.
  REQUIRE_FUCINA_ERROR(io::decodeSafetensors(ctx, entry(R"({"dtype":"F32","shape":[0,9223372036854775807,2],"data_offsets":[0,0]})")), InvalidArgument);
  CHECK(io::decodeSafetensors(ctx, entry(R"({"dtype":"F32","shape":[0,4096],"data_offsets":[0,0]})"))[0].second.numel() == 0);
  // Overlapping ranges of the right sizes.
  REQUIRE_FUCINA_ERROR(io::decodeSafetensors(ctx, withHeader(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                                             R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                                                             floatBytes({1, 2}))), InvalidArgument);
  // Repeated tensor names and a repeated axis name.
  REQUIRE_FUCINA_ERROR(io::decodeSafetensors(ctx, withHeader(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                                                             R"("a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                                                             floatBytes({1, 2}))), InvalidArgument);
  REQUIRE_FUCINA_ERROR(io::decodeSafetensors(ctx, withHeader(R"({"a":{"dtype":"F32","shape":[1,2],"data_offsets":[0,8]},)"
                                                             R"("__metadata__":{"axes.a":"x,x"}})",
                                                             floatBytes({1, 2}))), InvalidArgument);
  CHECK(ctx.memory().peak_bytes == 0);
}

TEST_CASE("safetensors: any axis name round-trips, and the comma-joined form still reads", "[io]") {
  ExecContext ctx;
  const fucina::Tags odd = {"a,b", " ", "[x]", "quote\"back\\slash", "new\nline", "\xc3\xa9t\xc3\xa9"};
  const Tensor t = Tensor::zeros(ctx, odd, {1, 2, 1, 1, 1, 1});
  const auto back = io::decodeSafetensors(ctx, io::encodeSafetensors(ctx, {{"t", t}, {"s", Tensor::scalar(ctx, 1)}}));
  CHECK(back[0].second.tags() == odd);
  CHECK(back[1].second.tags().empty());
  const fucina::Tags bracket = {"[x]", "y"};
  CHECK(io::decodeSafetensors(ctx, io::encodeSafetensors(ctx, {{"t", Tensor::zeros(ctx, bracket, {1, 1})}}))[0].second.tags() == bracket);
  // Plain names are written comma-joined, as before (other tools read them so).
  const auto legacy = withHeader(R"({"a":{"dtype":"F32","shape":[1,2],"data_offsets":[0,8]},)"
                                 R"("__metadata__":{"axes.a":"batch,in"}})",
                                 floatBytes({1, 2}));
  CHECK(io::decodeSafetensors(ctx, legacy)[0].second.tags() == fucina::Tags{"batch", "in"});
}

TEST_CASE("safetensors: malformed strings and numbers are fucina errors", "[io]") {
  ExecContext ctx;
  const auto header = [](const std::string& key) {
    return withHeader("{\"__metadata__\":{\"" + key + "\":\"v\"}}", {});
  };
  for (const char* key : {"\\uZZZZ", "\\u12", "\\u-123", "\\u 123", "\\u+abc", "\\q", "\\"}) {
    INFO(key);
    CHECK_FUCINA_ERROR(io::decodeSafetensors(ctx, header(key)), InvalidArgument);
  }
  CHECK(io::decodeSafetensors(ctx, header("\\u0041\\u00e9")).empty());
  REQUIRE_FUCINA_ERROR(io::decodeSafetensors(ctx, withHeader(R"({"a":{"dtype":"F32","shape":[99999999999999999999],"data_offsets":[0,0]}})", {})), InvalidArgument);
}

TEST_CASE("safetensors: empty views of empty buffers encode and decode (no offset on a null buffer)", "[io]") {
  // Under UBSan, encoding a narrowed view of an empty tensor applied its offset to the empty
  // storage's null pointer; RawTensor::bytes() is null there instead.
  ExecContext ctx;
  const Tensor empty = Tensor::zeros(ctx, {"a", "b"}, {0, 4});
  const io::NamedTensors tensors = {
      {"x", empty.narrow(ctx, "b", 1, 2)},
      {"h", empty.to(ctx, DType::f16).narrow(ctx, "b", 2, 2)},
      {"q", Tensor::zeros(ctx, {"a", "k"}, {0, 64}).quantize(ctx, DType::q8_0, "k")}};
  const auto decoded = io::decodeSafetensors(ctx, io::encodeSafetensors(ctx, tensors));
  REQUIRE(decoded.size() == tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    INFO(tensors[i].first);
    CHECK(decoded[i].second.dtype() == tensors[i].second.dtype());
    CHECK(decoded[i].second.shape() == tensors[i].second.shape());
    CHECK(decoded[i].second.numel() == 0);
  }
  CHECK(empty.narrow(ctx, "b", 1, 2).value().bytes() == nullptr);
}
