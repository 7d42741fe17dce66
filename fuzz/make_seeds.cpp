// Writes the generated part of the seed corpus (fuzz/corpus/<harness>/seed-*): safetensors files
// from the encoder, tiny GPT-2 checkpoints (gpt2_fuzz), tiny Llama and Qwen2 checkpoints
// (llama_fuzz), IDX files plain and gzip, and op programs. Run from the repo root:
//   build/fuzz/fuzz/make_seeds
// Hand-made edge cases (edge-*) and crash reproducers (crash-*) sit beside them.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <tuple>
#include <zlib.h>

#include <fucina/fucina.h>
#include "fucina/core/random.h"

using fucina::DType;
using fucina::Tensor;

namespace {

void write(const std::string& harness, const std::string& name, const std::vector<uint8_t>& bytes) {
  const std::filesystem::path dir = std::filesystem::path("fuzz/corpus") / harness;
  std::filesystem::create_directories(dir);
  std::ofstream(dir / name, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

std::vector<uint8_t> idx(const std::vector<uint32_t>& dims, const std::vector<uint8_t>& values) {
  std::vector<uint8_t> b = {0, 0, 0x08, static_cast<uint8_t>(dims.size())};
  for (uint32_t d : dims)
    for (int shift : {24, 16, 8, 0}) b.push_back(static_cast<uint8_t>(d >> shift));
  b.insert(b.end(), values.begin(), values.end());
  return b;
}

std::vector<uint8_t> gzip(const std::vector<uint8_t>& in) {
  uLongf n = compressBound(static_cast<uLong>(in.size())) + 32;
  std::vector<uint8_t> out(n);
  z_stream z{};
  deflateInit2(&z, 9, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
  z.next_in = const_cast<Bytef*>(in.data());
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = out.data();
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

}  // namespace

int main() {
  fucina::ExecContext ctx(fucina::ExecOptions{.threads = 1});
  namespace io = fucina::io;
  const Tensor w = Tensor::uniform(ctx, {"out", "in"}, {3, 4}, -1, 1, 1);
  {  // gpt2_fuzz: option byte, config length (LE), config.json, model.safetensors of a tiny GPT-2
    fucina::nn::Gpt2Config c;
    c.vocab = 8, c.positions = 4, c.d_model = 32, c.heads = 2, c.layers = 1, c.inner = 64;
    const fucina::nn::Gpt2 m(ctx, c, 1);
    const std::string config = c.toJson();
    for (uint8_t options : {uint8_t{0}, uint8_t{3 | 4 | 16 | 32}, uint8_t{8}}) {
      std::vector<uint8_t> seed = {options, static_cast<uint8_t>(config.size()), static_cast<uint8_t>(config.size() >> 8)};
      seed.insert(seed.end(), config.begin(), config.end());
      const std::vector<uint8_t> model = m.save(ctx);
      seed.insert(seed.end(), model.begin(), model.end());
      write("gpt2_fuzz", "seed-tiny-" + std::to_string(options), seed);
    }
  }
  {  // llama_fuzz: the same framing, a tiny Llama (grouped heads, llama3 rope) and a tiny Qwen2
    fucina::nn::LlamaConfig c;
    c.vocab = 8, c.positions = 4, c.d_model = 32, c.heads = 2, c.kv_heads = 1, c.head_dim = 16, c.layers = 1, c.inner = 64;
    c.rope_scaling = fucina::nn::LlamaConfig::RopeScaling::llama3, c.rope_factor = 8, c.original_positions = 32;
    fucina::nn::LlamaConfig q = c;
    q.model_type = "qwen2", q.qkv_bias = true, q.tied = true, q.rope_scaling = fucina::nn::LlamaConfig::RopeScaling::none;
    for (const auto& [name, config, options] : {std::tuple{"llama", c, uint8_t{0}}, std::tuple{"qwen2", q, uint8_t{3 | 4 | 16 | 32}},
                                                std::tuple{"llama-trainable", c, uint8_t{8}}}) {
      const std::string json = config.toJson();
      std::vector<uint8_t> seed = {options, static_cast<uint8_t>(json.size()), static_cast<uint8_t>(json.size() >> 8)};
      seed.insert(seed.end(), json.begin(), json.end());
      const std::vector<uint8_t> model = fucina::nn::Llama(ctx, config, 1).save(ctx);
      seed.insert(seed.end(), model.begin(), model.end());
      write("llama_fuzz", std::string("seed-") + name, seed);
    }
  }
  write("safetensors_fuzz", "seed-dtypes", io::encodeSafetensors(ctx, {
      {"w", w}, {"half", w.to(ctx, DType::f16)}, {"brain", w.to(ctx, DType::bf16)}, {"double", w.to(ctx, DType::f64)},
      {"ids", Tensor::fromInts(ctx, {"batch"}, {3}, {7, -1, 300000})},
      {"big", Tensor::fromInts(ctx, {"n"}, {2}, {1, 2}, DType::i64)},
      {"bytes", Tensor::fromInts(ctx, {"n"}, {2}, {0, 255}, DType::u8)}}, {{"format", "pt"}}));
  write("safetensors_fuzz", "seed-scalar-empty", io::encodeSafetensors(ctx, {
      {"scalar", Tensor::scalar(ctx, 2.5)}, {"empty", Tensor::zeros(ctx, {"e", "f"}, {0, 3})}}));
  write("safetensors_fuzz", "seed-odd-axes", io::encodeSafetensors(ctx, {
      {"t", Tensor::zeros(ctx, {"a,b", "[x]", "q\"\\", "n\nl"}, {1, 2, 1, 1})}}, {{"note", "\\u00e9\t"}}));
  write("safetensors_fuzz", "seed-q8_0", io::encodeSafetensors(ctx, {  // U8 blocks + a q8_0 note
      {"q", Tensor::uniform(ctx, {"in", "out"}, {64, 2}, -1, 1, 2).quantize(ctx, DType::q8_0, "in")}}));
  write("safetensors_fuzz", "seed-model", [&] {
    const fucina::nn::Mlp mlp(ctx, fucina::nn::MlpConfig{.sizes = {4, 3, 2}}, 1);
    io::NamedTensors named;
    int i = 0;
    for (const Tensor& p : mlp.parameters()) named.emplace_back("p" + std::to_string(i++), p);
    return io::encodeSafetensors(ctx, named);
  }());

  const auto images = idx({3, 2, 2}, {0, 255, 51, 102, 0, 0, 255, 255, 1, 2, 3, 4});
  const auto labels = idx({3}, {7, 1, 9});
  for (const auto& [name, bytes] : {std::pair{"images", images}, std::pair{"labels", labels}}) {
    std::vector<uint8_t> plain = {0}, zipped = {0}, through = {1};  // first byte: the harness's mode
    plain.insert(plain.end(), bytes.begin(), bytes.end());
    const auto gz = gzip(bytes);
    zipped.insert(zipped.end(), gz.begin(), gz.end());
    through.insert(through.end(), bytes.begin(), bytes.end());
    write("idx_fuzz", std::string("seed-") + name + "-plain", plain);
    write("idx_fuzz", std::string("seed-") + name + "-gz", zipped);
    write("idx_fuzz", std::string("seed-") + name + "-via-gzip", through);
  }

  // Op programs by hand (the byte meanings are Choices in ops_fuzz.cpp): conv2d of a variable and
  // backward, maxPool2d with padding and backward, a dot of a variable and a constant.
  write("ops_fuzz", "seed-conv", {0, 1, 3, 2, 3, 4, 2, 4, 4, 1, 0, 4, 5, 2, 6, 7, 3, 2, 2, 2, 5, 0, 5, 0, 0,
                                  1, 1, 1, 1, 1, 1, 1, 1, 1, 8, 2, 0});
  write("ops_fuzz", "seed-pool", {0, 1, 3, 2, 3, 4, 1, 4, 4, 2, 5, 0, 2, 2, 2, 2, 2, 1, 8, 1, 0});
  write("ops_fuzz", "seed-dot", {1, 1, 2, 0, 1, 2, 3, 7, 0, 2, 1, 2, 3, 4, 8, 0, 3, 0, 1, 6, 1, 8, 2, 0});
  // Op programs: fixed pseudo-random bytes (the harness reads any bytes as a program).
  uint64_t state = 17;
  for (int k = 0; k < 16; ++k) {
    std::vector<uint8_t> program(static_cast<size_t>(32 + 16 * k));
    for (uint8_t& b : program) b = static_cast<uint8_t>(fucina::random::next(state) >> 56);
    write("ops_fuzz", "seed-random-" + std::to_string(k), program);
  }
}
