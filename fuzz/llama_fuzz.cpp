// Loads arbitrary bytes as a Llama-family checkpoint (nn::Llama::load, tensor by tensor): the
// input is one option byte, a 2-byte little-endian length L, L bytes of config.json, then the
// safetensors file. A model that loads is run: a loss with LoRA adapters (backward included),
// two sampled tokens through the KV cache, then its adapters out as PEFT's files and back onto
// the base saved and loaded again. A fucina::Error is a fine answer; any other exception, a
// crash, a sanitizer report or a tensor left live is a bug.
#include <algorithm>
#include <string_view>

#include <fucina/fucina.h>
#include "harness.h"

namespace nn = fucina::nn;
using fucina::DType;
using fucina::Tensor;

namespace {

void require(bool ok, const char* what) { fuzz::require(ok, "llama_fuzz", what); }

void exercise(fucina::ExecContext& ctx, std::span<const uint8_t> file, std::string_view config, uint8_t options) {
  nn::ModelOptions o;
  constexpr DType kDTypes[] = {DType::f32, DType::f16, DType::bf16, DType::q8_0};
  o.dtype = kDTypes[options & 3];
  o.checkpoint_blocks = options & 4;
  o.trainable = options & 8;
  nn::Llama m = nn::Llama::load(ctx, file, config, o);
  // Only small models run (the budget above bounds the rest); the loader's checks are the target.
  const nn::LlamaConfig& c = m.config();
  if (c.vocab > 4096 || c.d_model > 256 || c.layers > 4 || c.heads * c.head_dim > 256 || c.inner > 1024) return;
  fucina::ExecScope scope(ctx);
  const int64_t t = std::min<int64_t>(c.positions, 3);
  std::vector<int64_t> ids;
  for (int64_t i = 0; i <= t; ++i) ids.push_back(i % c.vocab);
  const Tensor tokens = Tensor::fromInts(ctx, {"batch", "t"}, {1, t + 1}, ids, DType::i32);
  nn::LoraOptions lora;
  lora.rank = 2;
  lora.dropout = options & 16 ? 0.25 : 0.0;
  lora.targets = {"q_proj", "v_proj", "down_proj"};
  nn::lora(ctx, m, lora);
  if (t >= 1) m.loss(ctx, tokens).backward(ctx);
  nn::GenerateOptions g;
  g.max_tokens = 2;
  g.top_k = options >> 5;
  const std::vector<int32_t> prompt = {0};
  require(m.generate(ctx, prompt, g).size() == 2, "generate returned the wrong count");
  const nn::PeftAdapter peft = nn::exportPeft(ctx, m);
  nn::Llama other = nn::Llama::load(ctx, m.save(ctx), c.toJson(), o);
  nn::loadPeft(ctx, other, peft.safetensors, peft.config_json);
  require(other.parameters().size() == m.parameters().size(), "adapters did not round-trip");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return fuzz::runModelInput("llama_fuzz", data, size, size_t{256} << 20, exercise);
}
