#include "fucina/io/safetensors.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>
#include <set>

#include "fucina/core/error.h"
#include "fucina/core/q8.h"
#include "fucina/io/json.h"

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

const json::Value& member(const json::Value& object, const std::string& key, json::Value::Kind kind, const std::string& tensor) {
  for (const auto& [k, v] : object.members)
    if (k == key) {
      if (v.kind != kind) bad("'" + key + "' of tensor '" + tensor + "' has the wrong JSON type");
      return v;
    }
  bad("tensor '" + tensor + "' has no '" + key + "'");
}


// Axis names are stored comma-joined ("axes.w" = "out,in", what other tools and older files
// expect), unless a name holds a comma or the first starts with '[': then as a JSON array of
// strings ("[\"a,b\",\"in\"]"), so any name round-trips. A value that parses as such an array
// is read as one; anything else is split at commas.
std::string encodeTags(const Tags& tags) {
  bool plain = tags.empty() || tags[0].name()[0] != '[';
  for (Tag t : tags) plain = plain && t.name().find(',') == std::string_view::npos;
  std::string out;
  for (size_t i = 0; i < tags.size(); ++i)
    out += (i ? "," : "") + (plain ? std::string(tags[i].name()) : json::quote(std::string(tags[i].name())));
  return plain ? out : "[" + out + "]";
}

std::vector<std::string> decodeTags(const std::string& s) {
  std::vector<std::string> out;
  if (!s.empty() && s[0] == '[') {
    try {
      const json::Value doc = json::parse(s, "safetensors");
      bool strings = doc.kind == json::Value::kArray;
      for (const json::Value& item : doc.items) strings = strings && item.kind == json::Value::kString;
      if (strings) {
        for (const json::Value& item : doc.items) out.push_back(item.text);
        return out;
      }
    } catch (const Error&) {  // not an array: the comma-joined form
    }
  }
  size_t start = 0;
  while (start <= s.size()) {
    const size_t comma = s.find(',', start);
    out.push_back(s.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

using Entry = SafetensorsEntry;

std::string jsonArray(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) out += (i ? "," : "") + items[i];
  return out + "]";
}

// The "q8_0.<name>" note of a q8_0 tensor v stored as U8 blocks (safetensors.h).
std::string q8Note(const RawTensor& v) {
  std::vector<std::string> tags, shape;
  for (Tag t : v.tags()) tags.push_back(json::quote(std::string(t.name())));
  for (int64_t e : v.shape()) shape.push_back(std::to_string(e));
  return "{\"tags\":" + jsonArray(tags) + ",\"shape\":" + jsonArray(shape) + ",\"block_axis\":" +
         json::quote(std::string(internal::blockAxisOf(v).name())) + "}";
}

// Turns U8 entry e into the q8_0 tensor its note describes, checking the note against the entry.
void applyQ8Note(Entry& e, const std::string& note) {
  const std::string what = "the q8_0 note of '" + e.name + "'";
  json::Value doc;
  try {
    doc = json::parse(note, "safetensors");
  } catch (const Error&) {
    bad(what + " is not a JSON object");
  }
  if (doc.kind != json::Value::kObject) bad(what + " is not a JSON object");
  Tags tags;
  Extents shape;
  for (const json::Value& t : member(doc, "tags", json::Value::kArray, e.name).items) {
    if (t.kind != json::Value::kString) bad(what + " has a tag that is not a string");
    tags.emplace_back(t.text);
  }
  for (const json::Value& x : member(doc, "shape", json::Value::kArray, e.name).items) {
    if (x.kind != json::Value::kCount) bad(what + " has a shape entry that is not an integer");
    shape.push_back(x.count);
  }
  const Tag block(member(doc, "block_axis", json::Value::kString, e.name).text);
  if (tags.size() != shape.size()) bad(what + " has " + std::to_string(tags.size()) + " tags for " +
                                       std::to_string(shape.size()) + " extents");
  try {
    validateShape(tags, shape, what);
  } catch (const Error& err) {
    const std::string m = err.what();
    bad(m.substr(m.find(": ") + 2));
  }
  const auto b = findTag(tags, block);
  if (!b) bad(what + ": block axis " + quoted(block) + " is not one of " + describe(tags, shape));
  if (shape[*b] % q8::kBlock) bad(what + ": block axis " + quoted(block) + " has extent " +
                                  std::to_string(shape[*b]) + ", not a multiple of 32");
  const int64_t n = numelOf(shape);
  if (e.dtype != DType::u8 || e.shape.size() != 2 || e.shape[0] != n / q8::kBlock ||
      e.shape[1] != static_cast<int64_t>(q8::kBlockBytes))
    bad(what + " needs it stored as U8 of shape [" + std::to_string(n / q8::kBlock) + ", 34], got " +
        std::string(name(e.dtype)) + " " + describe(e.tags, e.shape));
  e.dtype = DType::q8_0;
  e.tags = std::move(tags);
  e.shape = std::move(shape);
  e.block_axis = block;
}

std::vector<Entry> entriesOf(const json::Value& doc, const Metadata& meta, uint64_t body_size) {
  std::vector<Entry> entries;
  std::set<std::string> names;
  for (const auto& [name, entry] : doc.members) {
    if (name == "__metadata__") continue;
    if (!names.insert(name).second) bad("tensor '" + name + "' appears twice");
    if (entry.kind != json::Value::kObject) bad("entry '" + name + "' is not an object");
    Entry e{name, dtypeOf(member(entry, "dtype", json::Value::kString, name).text), {}, {}, 0, 0, std::nullopt};
    for (const json::Value& x : member(entry, "shape", json::Value::kArray, name).items) {
      if (x.kind != json::Value::kCount) bad("shape of '" + name + "' holds a non-integer");
      e.shape.push_back(x.count);
    }
    const auto& offsets = member(entry, "data_offsets", json::Value::kArray, name).items;
    if (offsets.size() != 2 || offsets[0].kind != json::Value::kCount || offsets[1].kind != json::Value::kCount)
      bad("data_offsets of '" + name + "' must be two integers");
    e.begin = static_cast<uint64_t>(offsets[0].count), e.end = static_cast<uint64_t>(offsets[1].count);
    if (e.begin > e.end || e.end > body_size) bad("data_offsets of '" + name + "' lie outside the data");
    const auto axes = meta.find("axes." + name);
    if (axes != meta.end() && !e.shape.empty()) {
      for (const auto& t : decodeTags(axes->second)) e.tags.emplace_back(t);
      if (e.tags.size() != e.shape.size()) bad("axes of '" + name + "' do not match its shape");
    } else {
      for (size_t i = 0; i < e.shape.size(); ++i) e.tags.emplace_back("d" + std::to_string(i));
    }
    try {
      validateShape(e.tags, e.shape, "tensor '" + name + "'");  // the byte count below then fits
    } catch (const Error& err) {  // a corrupt file, whichever rule it breaks
      const std::string m = err.what();
      bad(m.substr(m.find(": ") + 2));
    }
    const uint64_t want = static_cast<uint64_t>(numelOf(e.shape)) * elementSize(e.dtype);
    if (e.end - e.begin != want)
      bad("'" + name + "' holds " + std::to_string(e.end - e.begin) + " bytes, its shape needs " + std::to_string(want));
    if (const auto note = meta.find("q8_0." + name); note != meta.end()) applyQ8Note(e, note->second);
    entries.push_back(std::move(e));
  }
  for (const auto& [k, _] : meta)
    if (k.rfind("q8_0.", 0) == 0 && !names.contains(k.substr(5)))
      bad("metadata '" + k + "' is the q8_0 note of a tensor the file does not hold");
  // The spec: the byte ranges tile the data exactly, without gaps or overlaps.
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (const Entry& e : entries) ranges.emplace_back(e.begin, e.end);
  std::sort(ranges.begin(), ranges.end());
  uint64_t covered = 0;
  for (auto [b, e] : ranges) {
    if (b != covered) bad("the tensors' byte ranges overlap or leave gaps");
    covered = e;
  }
  if (covered != body_size) bad("the data holds bytes no tensor names");
  return entries;
}

}  // namespace

std::vector<uint8_t> encodeSafetensors(ExecContext& ctx, const NamedTensors& tensors, const Metadata& metadata) {
  return withOutOfMemoryAsError("safetensors encode", [&] {
    std::set<std::string> names;
    std::string header = "{";
    Metadata meta = metadata;
    std::vector<RawTensor> bodies;
    uint64_t offset = 0;
    for (const auto& [name, t] : tensors) {
      if (name == "__metadata__" || !names.insert(name).second) bad("tensor name '" + name + "' is reserved or repeated");
      // q8_0: its blocks in the layout emptyQ8 gives its tags (other axes, then the block axis).
      RawTensor v = t.value().contiguous(ctx);
      const bool q8 = v.dtype() == DType::q8_0;
      const uint64_t bytes = q8 ? q8::bytesFor(v.numel()) : static_cast<uint64_t>(v.numel()) * elementSize(v.dtype());
      header += json::quote(name) + ":{\"dtype\":\"" + (q8 ? "U8" : dtypeName(v.dtype())) + "\",\"shape\":[";
      if (q8) header += std::to_string(v.numel() / q8::kBlock) + "," + std::to_string(q8::kBlockBytes);
      for (size_t i = 0; i < v.rank() && !q8; ++i) header += (i ? "," : "") + std::to_string(v.shape()[i]);
      header += "],\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(offset + bytes) + "]},";
      if (q8) meta["q8_0." + name] = q8Note(v);
      else meta["axes." + name] = encodeTags(v.tags());
      offset += bytes;
      bodies.push_back(std::move(v));
    }
    for (const auto& [k, _] : metadata)
      if (k.rfind("axes.", 0) == 0 || k.rfind("q8_0.", 0) == 0)
        bad("metadata key '" + k + "' is reserved for axis names and q8_0 notes");
    header += "\"__metadata__\":{";
    bool first = true;
    for (const auto& [k, v] : meta) header += (first ? "" : ",") + json::quote(k) + ":" + json::quote(v), first = false;
    header += "}}";
    while ((8 + header.size()) % 8) header += ' ';  // the spec's alignment padding
    std::vector<uint8_t> out(8 + header.size() + offset);
    const uint64_t n = header.size();
    for (int i = 0; i < 8; ++i) out[static_cast<size_t>(i)] = static_cast<uint8_t>(n >> (8 * i));
    std::memcpy(out.data() + 8, header.data(), header.size());
    uint8_t* body = out.data() + 8 + header.size();
    for (const RawTensor& v : bodies) {
      const bool q8 = v.dtype() == DType::q8_0;
      const size_t bytes = q8 ? q8::bytesFor(v.numel()) : static_cast<size_t>(v.numel()) * elementSize(v.dtype());
      const std::byte* from = v.bytes();
      if (bytes) std::memcpy(body, from, bytes);
      body += bytes;
    }
    return out;
  });
}

SafetensorsReader::SafetensorsReader(std::span<const uint8_t> bytes) {
  if (bytes.size() < 8) bad("shorter than the 8-byte header length");
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | bytes[static_cast<size_t>(i)];
  if (n > bytes.size() - 8 || n > (100u << 20)) bad("header length " + std::to_string(n) + " exceeds the file");
  const json::Value doc = json::parse(std::string_view(reinterpret_cast<const char*>(bytes.data() + 8), n), "safetensors");
  if (doc.kind != json::Value::kObject) bad("the header is not a JSON object");
  body_ = bytes.subspan(8 + n);
  for (const auto& [k, v] : doc.members)
    if (k == "__metadata__") {
      if (v.kind != json::Value::kObject) bad("__metadata__ is not an object");
      for (const auto& [mk, mv] : v.members) {
        if (mv.kind != json::Value::kString) bad("__metadata__ values must be strings");
        metadata_[mk] = mv.text;
      }
    }
  entries_ = entriesOf(doc, metadata_, body_.size());  // every size and range checked up front
  std::erase_if(metadata_, [](const auto& kv) {
    return kv.first.rfind("axes.", 0) == 0 || kv.first.rfind("q8_0.", 0) == 0;
  });
}

Tensor SafetensorsReader::read(ExecContext& ctx, const SafetensorsEntry& e) const {
  return withOutOfMemoryAsError("safetensors decode", [&] {
    RawTensor v = e.dtype == DType::q8_0 ? RawTensor::emptyQ8(ctx, e.tags, e.shape, *e.block_axis)
                                         : RawTensor::empty(ctx, e.tags, e.shape, e.dtype);
    if (e.end > e.begin) std::memcpy(v.storage()->data(), body_.data() + e.begin, e.end - e.begin);  // offset 0
    return Tensor::fromRaw(ctx, std::move(v));
  });
}

NamedTensors decodeSafetensors(ExecContext& ctx, std::span<const uint8_t> bytes, Metadata* metadata) {
  return withOutOfMemoryAsError("safetensors decode", [&] {
    const SafetensorsReader reader(bytes);
    NamedTensors out;
    for (const Entry& e : reader.entries()) out.emplace_back(e.name, reader.read(ctx, e));
    if (metadata) *metadata = reader.metadata();
    return out;
  });
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
  const std::vector<uint8_t> bytes = withOutOfMemoryAsError("safetensors: reading " + path, [&] {
    return std::vector<uint8_t>((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  });
  return decodeSafetensors(ctx, bytes, metadata);
}

}  // namespace fucina::io
