#include "fucina/nn/serialize.h"

#include <cstring>

#include "fucina/core/error.h"

namespace fucina::nn {

namespace {
std::string nameOf(size_t i) { return "param." + std::to_string(i); }
}  // namespace

void saveParameters(ExecContext& ctx, const std::string& path, std::span<const Tensor> params,
                    const io::Metadata& metadata) {
  io::NamedTensors named;
  for (size_t i = 0; i < params.size(); ++i) named.emplace_back(nameOf(i), params[i]);
  io::saveSafetensors(ctx, path, named, metadata);
}

void loadParameters(ExecContext& ctx, const std::string& path, std::span<const Tensor> params) {
  loadParameters(ctx, io::loadSafetensors(ctx, path), params, path);
}

void loadParameters(ExecContext& ctx, const io::NamedTensors& loaded, std::span<const Tensor> params,
                    const std::string& path) {
  if (loaded.size() != params.size())
    fail(ErrorCode::InvalidArgument, path + " holds " + std::to_string(loaded.size()) + " tensors, the model has " +
                                         std::to_string(params.size()) + " parameters");
  for (size_t i = 0; i < params.size(); ++i) {
    const auto& [name, value] = loaded[i];
    const Tensor& p = params[i];
    if (name != nameOf(i)) fail(ErrorCode::InvalidArgument, path + ": expected tensor " + nameOf(i) + ", found " + name);
    const internal::RawTensor& dst = p.value();
    if (dst.dtype() != DType::f32 || !dst.isContiguous())
      fail(ErrorCode::InvalidArgument, "loadParameters: parameter " + std::to_string(i) + " is not a contiguous f32 tensor");
    bool same = value.rank() == p.rank();
    for (size_t a = 0; same && a < p.rank(); ++a)
      same = hasTag(value.tags(), p.tags()[a]) && value.extent(p.tags()[a]) == p.shape()[a];
    if (!same)
      fail(ErrorCode::ShapeMismatch, path + ": " + name + " is " + value.value().describe() + ", the parameter is " +
                                         dst.describe());
    const internal::RawTensor src = value.value().permuted(p.tags()).to(ctx, DType::f32);
    std::memcpy(dst.f32(), src.f32(), static_cast<size_t>(dst.numel()) * sizeof(float));
  }
}

}  // namespace fucina::nn
