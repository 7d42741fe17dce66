// Loads arbitrary bytes as a GPT-2 checkpoint (nn::Gpt2::load): the input is one option byte, a
// 2-byte little-endian length L, L bytes of config.json, then the safetensors file. A model that
// loads is run: logits and a loss with LoRA adapters (backward included), two sampled tokens,
// the adapters and the base saved and loaded back. A fucina::Error is a fine answer; any other
// exception, a crash, a sanitizer report or a tensor left live is a bug.
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include <fucina/fucina.h>
#include "harness.h"

namespace nn = fucina::nn;
using fucina::DType;
using fucina::Tensor;

namespace {

void require(bool ok, const char* what) { fuzz::require(ok, "gpt2_fuzz", what); }

void exercise(fucina::ExecContext& ctx, std::span<const uint8_t> file, std::string_view config, uint8_t options) {
  nn::Gpt2Options o;
  constexpr DType kDTypes[] = {DType::f32, DType::f16, DType::bf16, DType::q8_0};
  o.dtype = kDTypes[options & 3];
  o.checkpoint_blocks = options & 4;
  o.trainable = options & 8;
  nn::Gpt2 m = nn::Gpt2::load(ctx, file, config, o);
  // Only small models run (the budget above bounds the rest); the loader's checks are the target.
  if (m.config().vocab > 4096 || m.config().d_model > 256 || m.config().layers > 4) return;
  fucina::ExecScope scope(ctx);
  const int64_t t = std::min<int64_t>(m.config().positions, 3);
  std::vector<int64_t> ids;
  for (int64_t i = 0; i <= t; ++i) ids.push_back(i % m.config().vocab);
  const Tensor tokens = Tensor::fromInts(ctx, {"batch", "t"}, {1, t + 1}, ids, DType::i32);
  nn::LoraOptions lora;
  lora.rank = 2;
  lora.dropout = options & 16 ? 0.25 : 0.0;
  lora.targets = {"c_attn", "c_fc"};
  nn::lora(ctx, m, lora);
  if (t >= 1) m.loss(ctx, tokens).backward(ctx);
  nn::GenerateOptions g;
  g.max_tokens = 2;
  g.top_k = options >> 5;
  const std::vector<int32_t> prompt = {0};
  require(m.generate(ctx, prompt, g).size() == 2, "generate returned the wrong count");
  const std::vector<uint8_t> adapters = m.saveAdapters(ctx);
  nn::Gpt2 other = nn::Gpt2::load(ctx, m.save(ctx), m.config().toJson(), o);
  other.loadAdapters(ctx, adapters);
  require(other.parameters().size() == m.parameters().size(), "adapters did not round-trip");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return fuzz::runModelInput("gpt2_fuzz", data, size, size_t{256} << 20, exercise);
}
