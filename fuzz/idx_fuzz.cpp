// Parses arbitrary bytes as IDX, plain and gzip: the first byte chooses whether the rest is
// decoded as given (plain, or gzip when it starts like gzip) or gzip-compressed here first, which
// must give exactly what parsing it plain gives. A fucina::Error is a fine answer; any other
// exception, a crash or a sanitizer report is a bug.
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <span>
#include <zlib.h>

#include <fucina/fucina.h>
#include "harness.h"

namespace data = fucina::data;

namespace {

void require(bool ok, const char* what) { fuzz::require(ok, "idx_fuzz", what); }

std::vector<uint8_t> gzip(std::span<const uint8_t> in) {
  z_stream z{};
  require(deflateInit2(&z, 1, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) == Z_OK, "deflateInit2");
  std::vector<uint8_t> out(deflateBound(&z, static_cast<uLong>(in.size())));
  z.next_in = const_cast<Bytef*>(in.data());
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = out.data();
  z.avail_out = static_cast<uInt>(out.size());
  require(deflate(&z, Z_FINISH) == Z_STREAM_END, "deflate");
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

std::optional<data::IdxArray> attempt(auto&& f) {
  try {
    return f();
  } catch (const fucina::Error&) {
    return std::nullopt;
  }
}

void checkConsistent(const data::IdxArray& a) {
  uint64_t n = 1;
  for (int64_t d : a.dims) n *= static_cast<uint64_t>(d);
  require(n == a.values.size(), "the values do not fill the dims");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::span<const uint8_t> rest(data + 1, size - 1);
  if (data[0] & 1) {
    const auto plain = attempt([&] { return data::parseIdx(rest); });
    const auto zipped = attempt([&] { return data::decodeIdx(gzip(rest)); });
    require(plain.has_value() == zipped.has_value(), "gzip and plain disagree on whether the data is valid");
    if (plain) {
      require(plain->dims == zipped->dims && plain->values == zipped->values, "gzip and plain disagree");
      checkConsistent(*plain);
    }
  } else if (const auto a = attempt([&] { return data::decodeIdx(rest); })) {
    checkConsistent(*a);
  }
  return 0;
}
