/// @file
/// Saving and loading a model's parameters as safetensors (fucina/io/safetensors.h).
#pragma once

#include <span>
#include <string>

#include "fucina/io/safetensors.h"

namespace fucina::nn {

/// Writes params (a model's parameters(), in order) as "param.0", "param.1", ... with their axes.
void saveParameters(ExecContext& ctx, const std::string& path, std::span<const Tensor> params,
                    const io::Metadata& metadata = {});
/// Reads such a file into params in place, outside the graph (as an optimizer update does): the
/// count, names, axes and extents must match (InvalidArgument / ShapeMismatch say which differ).
void loadParameters(ExecContext& ctx, const std::string& path, std::span<const Tensor> params);
/// The same from tensors already decoded (e.g.\ io::decodeSafetensors of bytes); `source` names them
/// in error messages.
void loadParameters(ExecContext& ctx, const io::NamedTensors& loaded, std::span<const Tensor> params,
                    const std::string& source = "the file");

}  // namespace fucina::nn
