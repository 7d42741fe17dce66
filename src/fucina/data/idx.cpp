#include "fucina/data/idx.h"

#include <algorithm>
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

struct Header {
  Extents dims;
  uint64_t count = 0;  // values the dims call for
  size_t size = 0;     // bytes: 4 + 4 * rank
};

uint32_t bigEndian(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

// The header at the start of bytes, which must hold it whole. The dims' product, zeros counted as
// 1, stays below 2^63 / 16 as every shape's does (Note [Extent products fit]), so it cannot wrap.
Header headerOf(std::span<const uint8_t> bytes) {
  if (bytes.size() < 4 || bytes[0] != 0 || bytes[1] != 0) bad("not an IDX file (bad magic)");
  if (bytes[2] != 0x08) bad("only unsigned-byte IDX data (type 0x08) is supported, got type " + std::to_string(bytes[2]));
  const size_t rank = bytes[3];
  if (rank == 0 || bytes.size() < 4 + 4 * rank) bad("truncated header");
  Header h;
  h.size = 4 + 4 * rank;
  h.count = 1;
  uint64_t bound = 1;
  for (size_t i = 0; i < rank; ++i) {
    const uint32_t d = bigEndian(bytes.data() + 4 + 4 * i);
    if (bound > uint64_t{INT64_MAX} / 16 / std::max<uint32_t>(d, 1)) bad("the dimensions multiply past 2^59");
    bound *= std::max<uint32_t>(d, 1);
    h.count *= d;
    h.dims.push_back(d);
  }
  return h;
}

#if FUCINA_HAVE_ZLIB
// A gzip stream (one member or several) inflated piece by piece, so what is kept is bounded by
// what the header asked for, never by what the compressed data would expand to.
class Inflater {
 public:
  explicit Inflater(std::span<const uint8_t> in) : rest_(in) {
    if (inflateInit2(&z_, 16 + MAX_WBITS) != Z_OK) bad("cannot start zlib");
  }
  ~Inflater() { inflateEnd(&z_); }
  Inflater(const Inflater&) = delete;
  Inflater& operator=(const Inflater&) = delete;

  // Appends up to n bytes to out; fewer only when the stream ends.
  void read(std::vector<uint8_t>& out, uint64_t n) {
    while (n > 0 && !ended_) {
      const size_t at = out.size(), chunk = static_cast<size_t>(std::min<uint64_t>(n, 1 << 16));
      out.resize(at + chunk);
      z_.next_out = out.data() + at;
      z_.avail_out = static_cast<uInt>(chunk);
      step();
      const size_t got = chunk - z_.avail_out;
      out.resize(at + got);
      n -= got;
    }
  }
  // Inflates to the end (checking the trailer's CRC and length); true when nothing was left.
  bool atEnd() {
    uint8_t extra;
    while (!ended_) {
      z_.next_out = &extra;
      z_.avail_out = 1;
      step();
      if (z_.avail_out == 0) return false;
    }
    return true;
  }

 private:
  void step() {
    if (z_.avail_in == 0) {
      const size_t take = std::min<size_t>(rest_.size(), size_t{1} << 30);
      z_.next_in = const_cast<Bytef*>(rest_.data());
      z_.avail_in = static_cast<uInt>(take);
      rest_ = rest_.subspan(take);
    }
    const int r = inflate(&z_, Z_NO_FLUSH);
    if (r == Z_STREAM_END) {
      // Another member may follow (as gzip -c a b > c makes); anything else after one is ignored.
      const bool member = (z_.avail_in >= 2 && z_.next_in[0] == 0x1f && z_.next_in[1] == 0x8b) ||
                          (z_.avail_in == 0 && rest_.size() >= 2 && rest_[0] == 0x1f && rest_[1] == 0x8b);
      if (member && inflateReset(&z_) == Z_OK) return;
      ended_ = true;
      return;
    }
    if (r == Z_BUF_ERROR && z_.avail_in == 0 && rest_.empty()) bad("truncated gzip stream");
    if (r != Z_OK && r != Z_BUF_ERROR) bad(std::string("corrupt gzip data (") + (z_.msg ? z_.msg : "zlib error") + ")");
  }

  z_stream z_{};
  std::span<const uint8_t> rest_;
  bool ended_ = false;
};

IdxArray inflateIdx(std::span<const uint8_t> bytes) {
  Inflater in(bytes);
  std::vector<uint8_t> head;
  in.read(head, 4);
  if (head.size() == 4 && head[0] == 0 && head[1] == 0) in.read(head, 4 * uint64_t{head[3]});
  const Header h = headerOf(head);
  IdxArray a{h.dims, {}};
  in.read(a.values, h.count);
  if (a.values.size() != h.count || !in.atEnd())
    bad("expected " + std::to_string(h.count) + " values after the header, the gzip stream " +
        (a.values.size() != h.count ? "holds " + std::to_string(a.values.size()) : "holds more"));
  return a;
}
#endif

bool isGzip(std::span<const uint8_t> bytes) { return bytes.size() >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b; }

}  // namespace

IdxArray parseIdx(std::span<const uint8_t> bytes) {
  const Header h = headerOf(bytes);
  if (bytes.size() - h.size != h.count)
    bad("expected " + std::to_string(h.count) + " values after the header, found " + std::to_string(bytes.size() - h.size));
  return withOutOfMemoryAsError("IDX", [&] {
    return IdxArray{h.dims, std::vector<uint8_t>(bytes.begin() + static_cast<std::ptrdiff_t>(h.size), bytes.end())};
  });
}

IdxArray decodeIdx(std::span<const uint8_t> bytes) {
  if (!isGzip(bytes)) return parseIdx(bytes);
#if FUCINA_HAVE_ZLIB
  return withOutOfMemoryAsError("IDX", [&] { return inflateIdx(bytes); });
#else
  bad("the data is gzip-compressed and this build has no zlib; decompress it first");
#endif
}

IdxArray readIdxFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) bad("cannot open " + path);
  const std::vector<uint8_t> bytes = withOutOfMemoryAsError("IDX: reading " + path, [&] {
    return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  });
  if (in.bad()) bad("cannot read " + path);
  return decodeIdx(bytes);
}

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
  if (split.images.extent("sample") != n)
    fail(ErrorCode::InvalidArgument, "batch: the split has " + std::to_string(split.images.extent("sample")) +
                                         " images and " + std::to_string(n) + " labels");
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
