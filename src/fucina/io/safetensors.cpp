#include "fucina/io/safetensors.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <set>

#include "fucina/core/error.h"

namespace fucina::io {

using internal::RawTensor;

namespace {

[[noreturn]] void bad(const std::string& message) { fail(ErrorCode::InvalidArgument, "safetensors: " + message); }

constexpr std::pair<DType, const char*> kDTypes[] = {
    {DType::f32, "F32"}, {DType::f16, "F16"}, {DType::bf16, "BF16"}, {DType::f64, "F64"},
    {DType::i32, "I32"}, {DType::i64, "I64"}, {DType::u8, "U8"}};

const char* dtypeName(DType d) {
  for (auto [dt, n] : kDTypes)
    if (dt == d) return n;
  bad(std::string("cannot store dtype ") + std::string(name(d)));
}

DType dtypeOf(const std::string& s) {
  for (auto [dt, n] : kDTypes)
    if (s == n) return dt;
  bad("unsupported dtype '" + s + "'");
}

// ---- the JSON subset a header uses: objects, arrays, strings, non-negative integers

std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\', out += c;
    else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else out += c;
  }
  return out + "\"";
}

struct Json {
  enum Kind { kString, kNumber, kArray, kObject } kind = kString;
  std::string text;
  int64_t number = 0;
  std::vector<Json> items;
  std::vector<std::pair<std::string, Json>> members;
};

class Parser {
 public:
  explicit Parser(std::string_view s) : s_(s) {}
  Json document() {
    Json v = value();
    space();
    if (i_ != s_.size()) bad("trailing characters after the header's JSON");
    return v;
  }

 private:
  void space() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\r' || s_[i_] == '\t')) ++i_;
  }
  char peek() {
    space();
    if (i_ >= s_.size()) bad("the header's JSON ends early");
    return s_[i_];
  }
  void expect(char c) {
    if (peek() != c) bad(std::string("malformed header JSON: expected '") + c + "' at byte " + std::to_string(i_));
    ++i_;
  }
  Json value() {
    const char c = peek();
    if (c == '{') return object();
    if (c == '[') return array();
    if (c == '"') return Json{Json::kString, string()};
    if (c >= '0' && c <= '9') return number();
    bad("unsupported JSON value at byte " + std::to_string(i_));
  }
  Json number() {
    Json v{Json::kNumber};
    while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') {
      if (v.number > (INT64_MAX - 9) / 10) bad("a number in the header is too large");
      v.number = v.number * 10 + (s_[i_++] - '0');
    }
    return v;
  }
  std::string string() {
    expect('"');
    std::string out;
    while (true) {
      if (i_ >= s_.size()) bad("unterminated string in the header");
      const char c = s_[i_++];
      if (c == '"') return out;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (i_ >= s_.size()) bad("unterminated escape in the header");
      const char e = s_[i_++];
      if (e == 'u') {
        if (i_ + 4 > s_.size()) bad("short \\u escape in the header");
        const unsigned code = static_cast<unsigned>(std::stoul(std::string(s_.substr(i_, 4)), nullptr, 16));
        i_ += 4;
        if (code < 0x80) out += static_cast<char>(code);  // names are ASCII in practice
        else if (code < 0x800) out += static_cast<char>(0xC0 | (code >> 6)), out += static_cast<char>(0x80 | (code & 0x3F));
        else out += static_cast<char>(0xE0 | (code >> 12)), out += static_cast<char>(0x80 | ((code >> 6) & 0x3F)),
             out += static_cast<char>(0x80 | (code & 0x3F));
      } else {
        const char* from = "\"\\/bfnrt";
        const char* to = "\"\\/\b\f\n\r\t";
        const char* at = std::strchr(from, e);
        if (!at) bad("bad escape in the header");
        out += to[at - from];
      }
    }
  }
  Json array() {
    Json v{Json::kArray};
    expect('[');
    if (peek() == ']') return ++i_, v;
    while (true) {
      v.items.push_back(value());
      if (peek() == ']') return ++i_, v;
      expect(',');
    }
  }
  Json object() {
    Json v{Json::kObject};
    expect('{');
    if (peek() == '}') return ++i_, v;
    while (true) {
      std::string key = string();
      expect(':');
      v.members.emplace_back(std::move(key), value());
      if (peek() == '}') return ++i_, v;
      expect(',');
    }
  }
  std::string_view s_;
  size_t i_ = 0;
};

const Json& member(const Json& object, const std::string& key, Json::Kind kind, const std::string& tensor) {
  for (const auto& [k, v] : object.members)
    if (k == key) {
      if (v.kind != kind) bad("'" + key + "' of tensor '" + tensor + "' has the wrong JSON type");
      return v;
    }
  bad("tensor '" + tensor + "' has no '" + key + "'");
}

std::byte* bytesOf(const RawTensor& v) { return v.storage()->data() + v.offset() * static_cast<int64_t>(elementSize(v.dtype())); }

std::vector<std::string> splitTags(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t comma = s.find(',', start);
    out.push_back(s.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

}  // namespace

std::vector<uint8_t> encodeSafetensors(ExecContext& ctx, const NamedTensors& tensors, const Metadata& metadata) {
  std::set<std::string> names;
  std::string header = "{";
  Metadata meta = metadata;
  std::vector<RawTensor> bodies;
  uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    if (name == "__metadata__" || !names.insert(name).second) bad("tensor name '" + name + "' is reserved or repeated");
    RawTensor v = t.value().contiguous(ctx);
    const uint64_t bytes = static_cast<uint64_t>(v.numel()) * elementSize(v.dtype());
    header += quote(name) + ":{\"dtype\":\"" + dtypeName(v.dtype()) + "\",\"shape\":[";
    std::string tags;
    for (size_t i = 0; i < v.rank(); ++i) {
      header += (i ? "," : "") + std::to_string(v.shape()[i]);
      tags += (i ? "," : "") + std::string(v.tags()[i].name());
    }
    header += "],\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(offset + bytes) + "]},";
    meta["axes." + name] = tags;
    offset += bytes;
    bodies.push_back(std::move(v));
  }
  for (const auto& [k, _] : metadata)
    if (k.rfind("axes.", 0) == 0) bad("metadata key '" + k + "' is reserved for axis names");
  header += "\"__metadata__\":{";
  bool first = true;
  for (const auto& [k, v] : meta) header += (first ? "" : ",") + quote(k) + ":" + quote(v), first = false;
  header += "}}";
  while ((8 + header.size()) % 8) header += ' ';  // the spec's alignment padding
  std::vector<uint8_t> out(8 + header.size() + offset);
  const uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[static_cast<size_t>(i)] = static_cast<uint8_t>(n >> (8 * i));
  std::memcpy(out.data() + 8, header.data(), header.size());
  uint8_t* body = out.data() + 8 + header.size();
  for (const RawTensor& v : bodies) {
    const size_t bytes = static_cast<size_t>(v.numel()) * elementSize(v.dtype());
    if (bytes) std::memcpy(body, bytesOf(v), bytes);
    body += bytes;
  }
  return out;
}

NamedTensors decodeSafetensors(ExecContext& ctx, std::span<const uint8_t> bytes, Metadata* metadata) {
  if (bytes.size() < 8) bad("shorter than the 8-byte header length");
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | bytes[static_cast<size_t>(i)];
  if (n > bytes.size() - 8 || n > (100u << 20)) bad("header length " + std::to_string(n) + " exceeds the file");
  const Json doc = Parser(std::string_view(reinterpret_cast<const char*>(bytes.data() + 8), n)).document();
  if (doc.kind != Json::kObject) bad("the header is not a JSON object");
  const std::span<const uint8_t> body = bytes.subspan(8 + n);
  Metadata meta;
  for (const auto& [k, v] : doc.members)
    if (k == "__metadata__") {
      if (v.kind != Json::kObject) bad("__metadata__ is not an object");
      for (const auto& [mk, mv] : v.members) {
        if (mv.kind != Json::kString) bad("__metadata__ values must be strings");
        meta[mk] = mv.text;
      }
    }
  NamedTensors out;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (const auto& [name, entry] : doc.members) {
    if (name == "__metadata__") continue;
    if (entry.kind != Json::kObject) bad("entry '" + name + "' is not an object");
    const DType dtype = dtypeOf(member(entry, "dtype", Json::kString, name).text);
    Extents shape;
    for (const Json& e : member(entry, "shape", Json::kArray, name).items) {
      if (e.kind != Json::kNumber) bad("shape of '" + name + "' holds a non-integer");
      shape.push_back(e.number);
    }
    const auto& offsets = member(entry, "data_offsets", Json::kArray, name).items;
    if (offsets.size() != 2 || offsets[0].kind != Json::kNumber || offsets[1].kind != Json::kNumber)
      bad("data_offsets of '" + name + "' must be two integers");
    const auto begin = static_cast<uint64_t>(offsets[0].number), end = static_cast<uint64_t>(offsets[1].number);
    if (begin > end || end > body.size()) bad("data_offsets of '" + name + "' lie outside the data");
    Tags tags;
    const auto axes = meta.find("axes." + name);
    if (axes != meta.end() && !shape.empty()) {
      for (const auto& t : splitTags(axes->second)) tags.emplace_back(t);
      if (tags.size() != shape.size()) bad("axes of '" + name + "' do not match its shape");
    } else {
      for (size_t i = 0; i < shape.size(); ++i) tags.emplace_back("d" + std::to_string(i));
    }
    RawTensor v = RawTensor::empty(ctx, tags, shape, dtype);
    const uint64_t want = static_cast<uint64_t>(v.numel()) * elementSize(dtype);
    if (end - begin != want)
      bad("'" + name + "' holds " + std::to_string(end - begin) + " bytes, its shape needs " + std::to_string(want));
    if (want) std::memcpy(bytesOf(v), body.data() + begin, want);
    ranges.emplace_back(begin, end);
    out.emplace_back(name, Tensor::fromRaw(ctx, std::move(v)));
  }
  // The spec: the byte ranges tile the data exactly, without gaps or overlaps.
  std::sort(ranges.begin(), ranges.end());
  uint64_t covered = 0;
  for (auto [b, e] : ranges) {
    if (b != covered) bad("the tensors' byte ranges overlap or leave gaps");
    covered = e;
  }
  if (covered != body.size()) bad("the data holds bytes no tensor names");
  std::erase_if(meta, [](const auto& kv) { return kv.first.rfind("axes.", 0) == 0; });
  if (metadata) *metadata = std::move(meta);
  return out;
}

void saveSafetensors(ExecContext& ctx, const std::string& path, const NamedTensors& tensors, const Metadata& metadata) {
  const auto bytes = encodeSafetensors(ctx, tensors, metadata);
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!f) bad("cannot write " + path);
}

NamedTensors loadSafetensors(ExecContext& ctx, const std::string& path, Metadata* metadata) {
  std::ifstream f(path, std::ios::binary);
  if (!f) bad("cannot open " + path);
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  return decodeSafetensors(ctx, bytes, metadata);
}

}  // namespace fucina::io
