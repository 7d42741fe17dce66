// Decodes arbitrary bytes as safetensors. Whatever decodes must encode, and decode again to the
// same names, dtypes, axes, shapes, bytes and metadata. A fucina::Error is a fine answer; any
// other exception, a crash, a sanitizer report or a tensor left live is a bug.
#include <cstdio>
#include <cstdlib>

#include <fucina/fucina.h>
#include "harness.h"

namespace io = fucina::io;

namespace {

fucina::ExecContext& context() { return fuzz::budgetedContext(size_t{256} << 20); }
void require(bool ok, const char* what) { fuzz::require(ok, "safetensors_fuzz", what); }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fucina::ExecContext& ctx = context();
  const fucina::MemoryStats before = ctx.memory();
  {
    io::Metadata meta;
    io::NamedTensors first;
    bool decoded = true;
    try {
      first = io::decodeSafetensors(ctx, {data, size}, &meta);
    } catch (const fucina::Error&) {
      decoded = false;
    }
    if (decoded) {
      try {
        const auto bytes = io::encodeSafetensors(ctx, first, meta);
        io::Metadata meta2;
        const auto second = io::decodeSafetensors(ctx, bytes, &meta2);
        require(meta2 == meta, "metadata changed in a round trip");
        require(second.size() == first.size(), "a round trip changed the tensor count");
        for (size_t i = 0; i < first.size(); ++i) {
          const fucina::Tensor &a = first[i].second, &b = second[i].second;
          require(second[i].first == first[i].first, "a round trip changed a name");
          require(a.dtype() == b.dtype() && a.tags() == b.tags() && a.shape() == b.shape(),
                  "a round trip changed a dtype, axes or shape");
        }
        require(io::encodeSafetensors(ctx, second, meta2) == bytes, "a round trip changed the bytes");
      } catch (const fucina::Error& e) {
        // What decoded must encode (the decoder drops the "axes.*" keys the encoder reserves),
        // unless memory runs out.
        require(e.code() == fucina::ErrorCode::OutOfMemory, e.what());
      }
    }
  }
  require(ctx.memory().live_tensors == before.live_tensors, "a tensor is still live");
  require(ctx.memory().live_bytes == before.live_bytes, "bytes are still live");
  return 0;
}
