/// @file
/// The safetensors format (https://huggingface.co/docs/safetensors): an 8-byte little-endian
/// header length, a JSON header naming each tensor's dtype, shape and byte range, then the raw
/// little-endian bytes. Files written here open in torch/numpy/JAX tools; fucina's axis names
/// travel in the header's `__metadata__` as "axes.<tensor name>" = "tag,tag,..." (or, when a name
/// holds a comma or the first starts with '[', a JSON array of strings in the string, so any name
/// round-trips). Files without them (from other tools) load with axes "d0", "d1", ...
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "fucina/ag/tensor.h"

namespace fucina::io {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;
using Metadata = std::map<std::string, std::string>;

/// Encodes f32/f16/bf16/f64/i32/i64/u8 tensors (any layout; written row-major in their axis order).
/// Names must be unique and not "__metadata__"; metadata keys "axes.*" are reserved.
std::vector<uint8_t> encodeSafetensors(ExecContext& ctx, const NamedTensors& tensors, const Metadata& metadata = {});
/// Decodes into constants, in the file's byte order. InvalidArgument names what is malformed; every
/// size and byte range is checked against the file before anything is allocated. Only
/// fucina::Error leaves either (OutOfMemory when a buffer cannot be had).
NamedTensors decodeSafetensors(ExecContext& ctx, std::span<const uint8_t> bytes, Metadata* metadata = nullptr);

void saveSafetensors(ExecContext& ctx, const std::string& path, const NamedTensors& tensors, const Metadata& metadata = {});
NamedTensors loadSafetensors(ExecContext& ctx, const std::string& path, Metadata* metadata = nullptr);

}  // namespace fucina::io
