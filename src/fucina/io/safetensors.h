/// @file
/// The safetensors format (https://huggingface.co/docs/safetensors): an 8-byte little-endian
/// header length, a JSON header naming each tensor's dtype, shape and byte range, then the raw
/// little-endian bytes. Files written here open in torch/numpy/JAX tools; fucina's axis names
/// travel in the header's `__metadata__` as "axes.<tensor name>" = "tag,tag,..." (or, when a name
/// holds a comma or the first starts with '[', a JSON array of strings in the string, so any name
/// round-trips). Files without them (from other tools) load with axes "d0", "d1", ...
///
/// q8_0 tensors (Note [q8_0 layout], core/q8.h) have no safetensors dtype: one is stored as "U8"
/// of shape [numel / 32, 34], its raw 34-byte blocks in the canonical order (the other axes in
/// the tensor's tag order, row-major, then the block axis innermost), and described by the
/// metadata entry "q8_0.<tensor name>" (instead of "axes.<name>"), a JSON object in the string:
///   "q8_0.w": "{\"tags\":[\"out\",\"in\"],\"shape\":[64,256],\"block_axis\":\"in\"}"
/// Loading restores the q8_0 tensor with those tags, shape and block axis. A note that does not
/// fit its entry (not U8 [numel/32, 34], block axis not among the tags or of an extent that is
/// not a multiple of 32, tags and shape of different lengths, no such tensor) is InvalidArgument
/// like any malformed file; a U8 tensor without a note loads as plain U8.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "fucina/ag/tensor.h"

namespace fucina::io {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;
using Metadata = std::map<std::string, std::string>;

/// Encodes f32/f16/bf16/f64/i32/i64/u8 tensors (any layout; written row-major in their axis order)
/// and q8_0 ones (above). Names must be unique and not "__metadata__"; metadata keys "axes.*" and
/// "q8_0.*" are reserved.
std::vector<uint8_t> encodeSafetensors(ExecContext& ctx, const NamedTensors& tensors, const Metadata& metadata = {});
/// Decodes into constants, in the file's byte order. InvalidArgument names what is malformed; every
/// size and byte range is checked against the file before anything is allocated. Only
/// fucina::Error leaves either (OutOfMemory when a buffer cannot be had).
NamedTensors decodeSafetensors(ExecContext& ctx, std::span<const uint8_t> bytes, Metadata* metadata = nullptr);

/// One tensor of a file's header, checked against the file (offsets into the data after the header).
struct SafetensorsEntry {
  std::string name;
  DType dtype;
  Tags tags;
  Extents shape;
  uint64_t begin, end;
  std::optional<Tag> block_axis;  ///< q8_0 only
};

/// A file's header, parsed and checked as decodeSafetensors checks it, with its tensors decoded
/// one at a time: a model that loads tensor by tensor holds at most one decoded tensor beside
/// what it keeps. The bytes are not copied: they must outlive the reader.
class SafetensorsReader {
 public:
  explicit SafetensorsReader(std::span<const uint8_t> bytes);
  /// The tensors in the file's byte order.
  const std::vector<SafetensorsEntry>& entries() const { return entries_; }
  /// The metadata, fucina's axis names and q8_0 notes left out.
  const Metadata& metadata() const { return metadata_; }
  /// A new constant holding one entry's values (OutOfMemory when no buffer can be had).
  Tensor read(ExecContext& ctx, const SafetensorsEntry& entry) const;

 private:
  std::span<const uint8_t> body_;
  std::vector<SafetensorsEntry> entries_;
  Metadata metadata_;
};

void saveSafetensors(ExecContext& ctx, const std::string& path, const NamedTensors& tensors, const Metadata& metadata = {});
NamedTensors loadSafetensors(ExecContext& ctx, const std::string& path, Metadata* metadata = nullptr);

}  // namespace fucina::io
