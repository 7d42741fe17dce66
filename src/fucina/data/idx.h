/// @file
/// Datasets in the IDX format (MNIST, Fashion-MNIST), seeded shuffling and batching. The shuffle is
/// defined exactly (Fisher–Yates over splitmix64), so the JS facade's shuffledIndices gives the
/// same order for the same seed.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "fucina/ag/tensor.h"

namespace fucina::data {

/// An unsigned-byte IDX array (type code 0x08): its dimensions and row-major values.
struct IdxArray {
  Extents dims;
  std::vector<uint8_t> values;
};

/// Parses raw (uncompressed) IDX bytes; InvalidArgument names what is wrong (checked before the
/// values are copied). Only fucina::Error leaves these three.
IdxArray parseIdx(std::span<const uint8_t> bytes);
/// IDX bytes, gzip-compressed or not (gzip needs a build with zlib: the native one). A gzip
/// stream is inflated no further than its header's dims call for (plus one byte, to see its end).
IdxArray decodeIdx(std::span<const uint8_t> bytes);
/// decodeIdx of a file's bytes.
IdxArray readIdxFile(const std::string& path);

/// A permutation of [0, n) determined by seed.
std::vector<int64_t> shuffledIndices(int64_t n, uint64_t seed);

struct Split {
  Tensor images;  ///< {sample, h, w}, f32 in [0, 1]
  Tensor labels;  ///< {sample}, i32
};

inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";
/// Mean and standard deviation of the training split's pixels (in [0, 1]), for standardizing.
inline constexpr double kFashionMnistMean = 0.2860, kFashionMnistStd = 0.3530;
/// Loads train-* or t10k-* {images,labels}-idx?-ubyte[.gz] from dir.
Split loadFashionMnist(ExecContext& ctx, const std::string& dir = kFashionMnistDir, bool train = true);
/// Images from raw IDX arrays (checks that the counts agree).
Split makeSplit(ExecContext& ctx, const IdxArray& images, const IdxArray& labels);

/// The samples order[begin, begin + size) (clipped at the end) as {batch, h, w} and {batch}.
Split batch(ExecContext& ctx, const Split& split, std::span<const int64_t> order, int64_t begin, int64_t size);

}  // namespace fucina::data
