#include "fucina/data/idx.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>

#if FUCINA_HAVE_ZLIB
#include <zlib.h>
#endif

#include "fucina/core/error.h"
#include "fucina/core/random.h"

namespace fucina::data {
namespace {

[[noreturn]] void bad(const std::string& message) { fail(ErrorCode::InvalidArgument, "IDX: " + message); }

std::vector<uint8_t> readFile(const std::string& path) {
#if FUCINA_HAVE_ZLIB
  gzFile f = gzopen(path.c_str(), "rb");  // reads plain files too
  if (!f) bad("cannot open " + path);
  std::vector<uint8_t> out;
  uint8_t buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0) out.insert(out.end(), buf, buf + n);
  const bool failed = n < 0;
  gzclose(f);
  if (failed) bad("cannot decompress " + path);
  return out;
#else
  std::ifstream in(path, std::ios::binary);
  if (!in) bad("cannot open " + path);
  std::vector<uint8_t> out((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (out.size() >= 2 && out[0] == 0x1f && out[1] == 0x8b)
    bad(path + " is gzip-compressed and this build has no zlib; decompress it first");
  return out;
#endif
}

uint32_t bigEndian(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

}  // namespace

IdxArray parseIdx(std::span<const uint8_t> bytes) {
  if (bytes.size() < 4 || bytes[0] != 0 || bytes[1] != 0) bad("not an IDX file (bad magic)");
  if (bytes[2] != 0x08) bad("only unsigned-byte IDX data (type 0x08) is supported, got type " + std::to_string(bytes[2]));
  const size_t rank = bytes[3];
  if (rank == 0 || bytes.size() < 4 + 4 * rank) bad("truncated header");
  IdxArray a;
  uint64_t n = 1;
  for (size_t i = 0; i < rank; ++i) {
    const uint32_t d = bigEndian(bytes.data() + 4 + 4 * i);
    a.dims.push_back(d);
    n *= d;
  }
  const size_t header = 4 + 4 * rank;
  if (bytes.size() - header != n)
    bad("expected " + std::to_string(n) + " values after the header, found " + std::to_string(bytes.size() - header));
  a.values.assign(bytes.begin() + static_cast<std::ptrdiff_t>(header), bytes.end());
  return a;
}

IdxArray readIdxFile(const std::string& path) { return parseIdx(readFile(path)); }

std::vector<int64_t> shuffledIndices(int64_t n, uint64_t seed) {
  if (n < 0) fail(ErrorCode::InvalidArgument, "shuffledIndices: n must be >= 0");
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) order[static_cast<size_t>(i)] = i;
  uint64_t state = seed;
  for (int64_t i = n - 1; i > 0; --i) {
    const auto j = static_cast<int64_t>(random::next(state) % static_cast<uint64_t>(i + 1));
    std::swap(order[static_cast<size_t>(i)], order[static_cast<size_t>(j)]);
  }
  return order;
}

Split makeSplit(ExecContext& ctx, const IdxArray& images, const IdxArray& labels) {
  if (images.dims.size() != 3) bad("images must have 3 dimensions (sample, h, w)");
  if (labels.dims.size() != 1) bad("labels must have 1 dimension");
  if (images.dims[0] != labels.dims[0])
    bad(std::to_string(images.dims[0]) + " images but " + std::to_string(labels.dims[0]) + " labels");
  std::vector<float> pixels(images.values.size());
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<float>(images.values[i]) / 255.0f;
  std::vector<int64_t> ys(labels.values.begin(), labels.values.end());
  return {Tensor::fromSlice(ctx, {"sample", "h", "w"}, images.dims, pixels),
          Tensor::fromInts(ctx, {"sample"}, labels.dims, ys)};
}

Split loadFashionMnist(ExecContext& ctx, const std::string& dir, bool train) {
  const std::string prefix = dir + "/" + (train ? "train" : "t10k");
  auto find = [&](const std::string& stem) {
    for (const std::string& name : {prefix + stem + ".gz", prefix + stem})
      if (std::FILE* f = std::fopen(name.c_str(), "rb")) {
        std::fclose(f);
        return name;
      }
    bad("no " + prefix + stem + "[.gz] (on Debian: apt-get install dataset-fashion-mnist)");
  };
  return makeSplit(ctx, readIdxFile(find("-images-idx3-ubyte")), readIdxFile(find("-labels-idx1-ubyte")));
}

Split batch(ExecContext& ctx, const Split& split, std::span<const int64_t> order, int64_t begin, int64_t size) {
  const int64_t n = split.labels.numel();
  if (begin < 0 || size < 0 || begin > static_cast<int64_t>(order.size()))
    fail(ErrorCode::IndexOutOfRange, "batch: begin " + std::to_string(begin) + " outside the order");
  const int64_t count = std::min<int64_t>(size, static_cast<int64_t>(order.size()) - begin);
  const int64_t h = split.images.extent("h"), w = split.images.extent("w");
  std::vector<float> pixels(static_cast<size_t>(count * h * w));
  std::vector<int64_t> ys(static_cast<size_t>(count));
  const std::span<const float> all = split.images.dataConst();
  const std::vector<float> labels = split.labels.toVector();
  for (int64_t i = 0; i < count; ++i) {
    const int64_t s = order[static_cast<size_t>(begin + i)];
    if (s < 0 || s >= n) fail(ErrorCode::IndexOutOfRange, "batch: sample " + std::to_string(s) + " outside [0, " + std::to_string(n) + ")");
    std::memcpy(pixels.data() + i * h * w, all.data() + s * h * w, sizeof(float) * static_cast<size_t>(h * w));
    ys[static_cast<size_t>(i)] = static_cast<int64_t>(labels[static_cast<size_t>(s)]);
  }
  return {Tensor::fromSlice(ctx, {"batch", "h", "w"}, {count, h, w}, pixels),
          Tensor::fromInts(ctx, {"batch"}, {count}, ys)};
}

}  // namespace fucina::data
