// GPT-2 in the Hugging Face layout (gpt2.h). Axes: batch, "t" time, "e" model width, "qkv" the
// fused projection split into "part"/"head"/"hd", "ao" the attention output, "mlp" the inner
// width, "vocab" tokens.
#include "fucina/nn/gpt2.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <map>
#include <type_traits>

#include "fucina/ag/checkpoint.h"
#include "fucina/ag/control.h"
#include "fucina/core/error.h"
#include "fucina/exec/scope.h"
#include "fucina/io/json.h"
#include "fucina/io/safetensors.h"

namespace fucina::nn {

namespace {

[[noreturn]] void invalid(const std::string& message) { fail(ErrorCode::InvalidArgument, message); }

// ---- config.json

int64_t positiveField(const io::json::Value& doc, std::string_view key, std::optional<int64_t> fallback = {}) {
  const io::json::Value* v = doc.find(key);
  if (!v || v->kind == io::json::Value::kNull) {
    if (fallback) return *fallback;
    invalid("Gpt2 config.json: '" + std::string(key) + "' is missing");
  }
  if (v->kind != io::json::Value::kCount || v->count < 1 || v->count > (int64_t{1} << 31))
    invalid("Gpt2 config.json: '" + std::string(key) + "' must be a positive integer");
  return v->count;
}

// ---- tensors: which are "large" (stored in the model's dtype) and along which axis q8_0 blocks lie

const Tag kVocab("vocab"), kT("t"), kE("e"), kQkv("qkv"), kAo("ao"), kMlp("mlp");

}  // namespace

// ---------------------------------------------------------------- config

Gpt2Config Gpt2Config::fromJson(std::string_view text) {
  const io::json::Value doc = io::json::parse(text, "Gpt2 config.json");
  if (doc.kind != io::json::Value::kObject) invalid("Gpt2 config.json: not a JSON object");
  Gpt2Config c;
  c.d_model = positiveField(doc, "n_embd");
  c.layers = positiveField(doc, "n_layer");
  c.heads = positiveField(doc, "n_head");
  c.vocab = positiveField(doc, "vocab_size");
  c.positions = positiveField(doc, "n_positions", doc.find("n_ctx") ? std::optional(positiveField(doc, "n_ctx")) : std::nullopt);
  c.inner = positiveField(doc, "n_inner", 4 * c.d_model);
  if (const io::json::Value* eps = doc.find("layer_norm_epsilon")) {
    if (!eps->isNumber() || !(eps->real > 0)) invalid("Gpt2 config.json: 'layer_norm_epsilon' must be a positive number");
    c.eps = eps->real;
  }
  if (const io::json::Value* act = doc.find("activation_function")) {
    if (act->kind != io::json::Value::kString) invalid("Gpt2 config.json: 'activation_function' must be a string");
    if (act->text == "gelu_new" || act->text == "gelu_pytorch_tanh") c.gelu_tanh = true;
    else if (act->text == "gelu") c.gelu_tanh = false;
    else invalid("Gpt2 config.json: activation_function '" + act->text + "' is not supported (gelu_new, gelu_pytorch_tanh, gelu)");
  }
  if (const io::json::Value* tie = doc.find("tie_word_embeddings"))
    if (tie->kind == io::json::Value::kBool && !tie->boolean)
      invalid("Gpt2 config.json: tie_word_embeddings is false; only GPT-2's tied head is supported");
  return c;
}

std::string Gpt2Config::toJson() const {
  char eps_text[32];
  std::snprintf(eps_text, sizeof eps_text, "%.17g", eps);
  return std::string("{\"model_type\":\"gpt2\",\"architectures\":[\"GPT2LMHeadModel\"],") +
         "\"vocab_size\":" + std::to_string(vocab) + ",\"n_positions\":" + std::to_string(positions) +
         ",\"n_ctx\":" + std::to_string(positions) + ",\"n_embd\":" + std::to_string(d_model) +
         ",\"n_layer\":" + std::to_string(layers) + ",\"n_head\":" + std::to_string(heads) +
         ",\"n_inner\":" + std::to_string(inner) + ",\"layer_norm_epsilon\":" + eps_text +
         ",\"activation_function\":\"" + (gelu_tanh ? "gelu_new" : "gelu") + "\",\"tie_word_embeddings\":true}";
}

// ---------------------------------------------------------------- construction

Gpt2::Gpt2(const Gpt2Config& c, const Gpt2Options& o)
    : Model("Gpt2", "h.N.attn.c_attn, h.N.attn.c_proj, h.N.mlp.c_fc, h.N.mlp.c_proj", "base_model.model.transformer.",
            true, o),
      config_(c) {
  if (c.d_model % c.heads != 0)
    invalid("Gpt2: n_embd " + std::to_string(c.d_model) + " is not a multiple of n_head " + std::to_string(c.heads));
  if (o.dtype == DType::q8_0 && (c.d_model % 32 != 0 || c.inner % 32 != 0))
    invalid("Gpt2: a q8_0 base needs n_embd and n_inner to be multiples of 32, got " + std::to_string(c.d_model) +
            " and " + std::to_string(c.inner));
}

namespace {
// Which axes each Hugging Face tensor has, with the axis its q8_0 blocks lie along (its input).
struct Slot {
  Tags tags;
  bool large;
  Tag block;
};
Slot slotOf(const std::string& suffix) {
  if (suffix == "ln_1.weight" || suffix == "ln_1.bias" || suffix == "ln_2.weight" || suffix == "ln_2.bias" ||
      suffix == "attn.c_proj.bias" || suffix == "mlp.c_proj.bias")
    return {{kE}, false, kE};
  if (suffix == "attn.c_attn.weight") return {{kE, kQkv}, true, kE};
  if (suffix == "attn.c_attn.bias") return {{kQkv}, false, kQkv};
  if (suffix == "attn.c_proj.weight") return {{kAo, kE}, true, kAo};
  if (suffix == "mlp.c_fc.weight") return {{kE, kMlp}, true, kE};
  if (suffix == "mlp.c_fc.bias") return {{kMlp}, false, kMlp};
  if (suffix == "mlp.c_proj.weight") return {{kMlp, kE}, true, kMlp};
  return {{}, false, kE};
}
constexpr std::array<const char*, 12> kBlockSuffixes = {
    "ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias", "attn.c_proj.weight", "attn.c_proj.bias",
    "ln_2.weight", "ln_2.bias", "mlp.c_fc.weight",    "mlp.c_fc.bias",    "mlp.c_proj.weight",  "mlp.c_proj.bias"};

// What Hugging Face files carry besides the weights: the tied head again, and the causal-mask
// buffers of each block.
bool ignoredInFile(const std::string& n) {
  if (n == "lm_head.weight") return true;
  if (!n.starts_with("h.")) return false;
  const size_t dot = n.find('.', 2);
  const std::string rest = dot == std::string::npos ? "" : n.substr(dot + 1);
  return rest == "attn.bias" || rest == "attn.masked_bias";
}

// Builds the model's tensors from a source of values by Hugging Face name (a file, or a seeded
// draw), stored as the options say.
template <class Source, class Store>
void assemble(const Gpt2Config& c, Source&& get, Store&& store, Tensor& wte, Tensor& wpe,
              Tensor& lnf_w, Tensor& lnf_b, std::vector<std::array<Tensor, 12>>& blocks) {
  const std::array<std::pair<Tag, int64_t>, 6> extents = {{{kVocab, c.vocab}, {kT, c.positions}, {kE, c.d_model},
                                                          {kQkv, 3 * c.d_model}, {kAo, c.d_model}, {kMlp, c.inner}}};
  const auto one = [&](const std::string& name, const Tags& tags, bool large, Tag block) {
    Extents shape;
    for (Tag t : tags)
      for (const auto& [tag, n] : extents)
        if (tag == t) shape.push_back(n);
    return store(get(name, tags, shape), large, block);
  };
  wte = one("wte.weight", {kVocab, kE}, true, kE);
  wpe = one("wpe.weight", {kT, kE}, false, kE);
  for (int64_t i = 0; i < c.layers; ++i) {
    std::array<Tensor, 12> b;
    for (size_t k = 0; k < kBlockSuffixes.size(); ++k) {
      const Slot s = slotOf(kBlockSuffixes[k]);
      b[k] = one("h." + std::to_string(i) + "." + kBlockSuffixes[k], s.tags, s.large, s.block);
    }
    blocks.push_back(std::move(b));
  }
  lnf_w = one("ln_f.weight", {kE}, false, kE);
  lnf_b = one("ln_f.bias", {kE}, false, kE);
}

LoraLinear linear(const Tensor& w, const Tensor& b, Tag in, Tag out) { return LoraLinear(w, b, in, out); }
}  // namespace

Gpt2::Gpt2(ExecContext& ctx, const Gpt2Config& c, uint64_t seed, const Gpt2Options& o) : Gpt2(c, o) {
  uint64_t index = 0;
  // Hugging Face's GPT-2 init: N(0, 0.02), the residual projections N(0, 0.02/sqrt(2·n_layer)).
  const auto draw = [&](const std::string& name, const Tags& tags, const Extents& shape) {
    const uint64_t s = subSeed(seed, index++);
    if (name.ends_with("ln_1.weight") || name.ends_with("ln_2.weight") || name == "ln_f.weight")
      return Tensor::ones(ctx, tags, shape);
    if (name.ends_with(".bias")) return Tensor::zeros(ctx, tags, shape);
    const double std = name.ends_with("c_proj.weight") ? 0.02 / std::sqrt(2.0 * static_cast<double>(c.layers)) : 0.02;
    return Tensor::normal(ctx, tags, shape, 0.0, std, s);
  };
  std::vector<std::array<Tensor, 12>> raw;
  assemble(c, draw, [&](const Tensor& v, bool large, Tag block) { return store(ctx, v, large, block); }, wte_, wpe_, lnf_w_, lnf_b_, raw);
  for (auto& r : raw)
    blocks_.push_back(Block{r[0], r[1], r[6], r[7], linear(r[2], r[3], kE, kQkv), linear(r[4], r[5], kAo, kE),
                            linear(r[8], r[9], kE, kMlp), linear(r[10], r[11], kMlp, kE)});
}

Gpt2 Gpt2::load(ExecContext& ctx, std::span<const uint8_t> bytes, std::string_view config_json, DType dtype) {
  Gpt2Options o;
  o.dtype = dtype;
  return load(ctx, bytes, config_json, o);
}

Gpt2 Gpt2::load(ExecContext& ctx, std::span<const uint8_t> bytes, std::string_view config_json, const Gpt2Options& o) {
  const Gpt2Config c = Gpt2Config::fromJson(config_json);
  Gpt2 m(c, o);
  io::NamedTensors file = io::decodeSafetensors(ctx, bytes);
  std::map<std::string, size_t> by_name;
  for (size_t i = 0; i < file.size(); ++i) {
    std::string n = file[i].first;
    if (n.starts_with("transformer.")) n = n.substr(12);
    if (ignoredInFile(n)) continue;
    if (!by_name.emplace(n, i).second) invalid("Gpt2::load: the file holds '" + n + "' twice");
  }
  const auto take = [&](const std::string& name, const Tags& tags, const Extents& shape) {
    const auto it = by_name.find(name);
    if (it == by_name.end()) invalid("Gpt2::load: the file has no '" + name + "' (a GPT-2 checkpoint has it)");
    Tensor t = std::move(file[it->second].second);  // released as soon as it is stored
    by_name.erase(it);
    if (t.shape() != shape)
      fail(ErrorCode::ShapeMismatch, "Gpt2::load: '" + name + "' is " + describe(t.tags(), t.shape()) +
                                         ", config.json implies " + describe(tags, shape));
    if (t.dtype() != DType::f32 && t.dtype() != DType::f16 && t.dtype() != DType::bf16)
      invalid("Gpt2::load: '" + name + "' is " + std::string(fucina::name(t.dtype())) + "; F32, F16 or BF16 expected");
    return t.withTags(ctx, tags);
  };
  std::vector<std::array<Tensor, 12>> raw;
  assemble(c, take, [&](const Tensor& v, bool large, Tag block) { return m.store(ctx, v, large, block); }, m.wte_, m.wpe_, m.lnf_w_, m.lnf_b_, raw);
  if (!by_name.empty())
    invalid("Gpt2::load: the file holds '" + by_name.begin()->first + "', which is not part of a GPT-2 (" +
            std::to_string(by_name.size()) + " unknown tensor(s))");
  for (auto& r : raw)
    m.blocks_.push_back(Block{r[0], r[1], r[6], r[7], linear(r[2], r[3], kE, kQkv), linear(r[4], r[5], kAo, kE),
                              linear(r[8], r[9], kE, kMlp), linear(r[10], r[11], kMlp, kE)});
  return m;
}

// ---------------------------------------------------------------- forward

namespace {
// A block's tensors in one fixed order: checkpointing passes the trainable ones as inputs and
// rebinds them in the recompute (the frozen ones stay captured: constants, as through `extra`).
template <class B>
auto slots(B& b) {
  return std::array{&b.ln1_w, &b.ln1_b, &b.ln2_w, &b.ln2_b,
                    &b.c_attn.weight, &b.c_attn.bias, &b.c_attn.a, &b.c_attn.b,
                    &b.attn_proj.weight, &b.attn_proj.bias, &b.attn_proj.a, &b.attn_proj.b,
                    &b.c_fc.weight, &b.c_fc.bias, &b.c_fc.a, &b.c_fc.b,
                    &b.mlp_proj.weight, &b.mlp_proj.bias, &b.mlp_proj.a, &b.mlp_proj.b};
}
}  // namespace

Tensor Gpt2::block(ExecContext& ctx, const Block& b, const Tensor& x, std::optional<uint64_t> seed, KvCache* cache,
                   size_t layer_index) const {
  const int64_t hd = config_.d_model / config_.heads;
  // Each layer's dropout seed (Note [Recompute-safe LoRA dropout]).
  const auto layer = [&](uint64_t k) { return seed ? std::optional(subSeed(*seed, k)) : std::nullopt; };
  const Tensor qkv = b.c_attn(ctx, x.layerNorm(ctx, kE, b.ln1_w, b.ln1_b, config_.eps), layer(0))
                         .split(ctx, kQkv, {"part", "head", "hd"}, {3, config_.heads, hd});
  const Tensor a = causalSelfAttention(ctx, qkv, cache, layer_index);
  const Tensor h = x.add(ctx, b.attn_proj(ctx, a.merge(ctx, {"head", "hd"}, kAo), layer(1)));
  const Tensor inner = b.c_fc(ctx, h.layerNorm(ctx, kE, b.ln2_w, b.ln2_b, config_.eps), layer(2));
  const Tensor g = config_.gelu_tanh ? inner.gelu(ctx) : inner.geluErf(ctx);
  return checkpointTail([&] { return h.add(ctx, b.mlp_proj(ctx, g, layer(3))); });  // Note [Checkpoint tail]
}

Tensor Gpt2::logits(ExecContext& ctx, const Tensor& tokens) const { return forward(ctx, tokens, nullptr); }

Tensor Gpt2::logits(ExecContext& ctx, const Tensor& tokens, KvCache& cache) const {
  return forward(ctx, tokens, &cache);
}

Tensor Gpt2::forward(ExecContext& ctx, const Tensor& tokens, KvCache* cache) const {
  checkTokens(tokens, {kVocab, kE, kQkv, kAo, kMlp, Tag("part"), Tag("head"), Tag("hd")});
  const int64_t t = tokens.extent(kT), start = cache ? cache->length() : 0;
  if (t < 1 || start + t > config_.positions)
    invalid("Gpt2: " + std::to_string(t) + " tokens along 't'" +
            (start ? " after the " + std::to_string(start) + " of the KV cache" : std::string()) +
            "; the model reads 1 to " + std::to_string(config_.positions));
  // Embeddings: the rows of a 16-bit or q8_0 table are read as stored, then widened.
  Tensor x = wte_.indexSelect(ctx, kVocab, tokens);
  if (x.dtype() != DType::f32) x = x.to(ctx, DType::f32);
  x = x.add(ctx, wpe_.narrow(ctx, kT, start, t));
  // Note [Recompute-safe LoRA dropout]: one seed per recorded forward, chosen before any
  // checkpoint captures it; none (no dropout) when nothing is recorded.
  const std::optional<uint64_t> call_seed = callSeed();
  for (size_t i = 0; i < blocks_.size(); ++i) {
    const Block& b = blocks_[i];
    const std::optional<uint64_t> seed = call_seed ? std::optional(subSeed(*call_seed, i)) : std::nullopt;
    if (cache || !options_.checkpoint_blocks) {
      x = block(ctx, b, x, seed, cache, i);
      continue;
    }
    x = checkpointBlock(ctx, b, x, [](auto& blk) { return slots(blk); },
                        [this, seed](ExecContext& c, const Block& blk, const Tensor& in) { return block(c, blk, in, seed); });
  }
  return x.layerNorm(ctx, kE, lnf_w_, lnf_b_, config_.eps).dot(ctx, wte_, kE);  // the head is tied to wte
}

Tensor Gpt2::loss(ExecContext& ctx, const Tensor& tokens) const {
  return nextTokenLoss(ctx, tokens, config_.positions, [&](const Tensor& x) { return logits(ctx, x); });
}

std::vector<int32_t> Gpt2::generate(ExecContext& ctx, std::span<const int32_t> prompt, const GenerateOptions& o,
                                    const std::function<bool(int32_t)>& on_token) const {
  const Generator model{"Gpt2::generate", config_.vocab, config_.positions,
                        [this](ExecContext& c, const Tensor& tokens, KvCache* cache) { return forward(c, tokens, cache); }};
  return nn::generate(ctx, model, prompt, o, on_token);
}

// ---------------------------------------------------------------- parameters and files

void Gpt2::forEachTensor(const std::function<void(Tensor&)>& f) {
  f(wte_);
  f(wpe_);
  f(lnf_w_);
  f(lnf_b_);
  for (Block& b : blocks_)
    for (Tensor* t : slots(b)) f(*t);
}

template <class Self>
auto Gpt2::layersOf(Self& self) {
  using L = std::conditional_t<std::is_const_v<Self>, const LoraLinear*, LoraLinear*>;
  std::vector<std::pair<std::string, L>> out;
  for (size_t i = 0; i < self.blocks_.size(); ++i) {
    const std::string p = "h." + std::to_string(i) + ".";
    auto& b = self.blocks_[i];
    out.insert(out.end(), {{p + "attn.c_attn", &b.c_attn}, {p + "attn.c_proj", &b.attn_proj},
                           {p + "mlp.c_fc", &b.c_fc}, {p + "mlp.c_proj", &b.mlp_proj}});
  }
  return out;
}

std::vector<std::pair<std::string, LoraLinear*>> Gpt2::layers() { return layersOf(*this); }
std::vector<std::pair<std::string, const LoraLinear*>> Gpt2::layers() const { return layersOf(*this); }

std::vector<std::pair<std::string, Tensor>> Gpt2::namedTensors() const {
  std::vector<std::pair<std::string, Tensor>> out = {{"wte.weight", wte_}, {"wpe.weight", wpe_}};
  for (size_t i = 0; i < blocks_.size(); ++i) {
    const Block& b = blocks_[i];
    const std::array<const Tensor*, 12> ts = {&b.ln1_w, &b.ln1_b, &b.c_attn.weight, &b.c_attn.bias,
                                              &b.attn_proj.weight, &b.attn_proj.bias, &b.ln2_w, &b.ln2_b,
                                              &b.c_fc.weight, &b.c_fc.bias, &b.mlp_proj.weight, &b.mlp_proj.bias};
    for (size_t k = 0; k < ts.size(); ++k) out.emplace_back("h." + std::to_string(i) + "." + kBlockSuffixes[k], *ts[k]);
  }
  out.emplace_back("ln_f.weight", lnf_w_);
  out.emplace_back("ln_f.bias", lnf_b_);
  return out;
}

}  // namespace fucina::nn
