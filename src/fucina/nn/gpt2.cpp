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

// value: a constant (f32, f16 or bf16; decoded from a file or drawn) with the model's axes.
// Returns it as the model stores it: an f32 leaf when trainable, else a constant, in the model's
// dtype for the large matrices (q8_0 blocks along block_axis) and f32 for the rest. A value that
// already has the dtype is kept as it is (a decoded file tensor owns its buffer: no copy).
Tensor store(ExecContext& ctx, const Tensor& value, const Gpt2Options& o, bool large, Tag block_axis) {
  if (o.trainable) return Tensor::variable(ctx, value.to(ctx, DType::f32));
  if (large && o.dtype == DType::q8_0) return value.quantize(ctx, DType::q8_0, block_axis);
  return value.to(ctx, large ? o.dtype : DType::f32);
}

bool matchesTarget(const std::string& layer, const std::string& target) {
  return layer == target ||
         (layer.size() > target.size() && layer.ends_with(target) && layer[layer.size() - target.size() - 1] == '.');
}

std::string loraNote(const LoraOptions& o) {
  std::string targets;
  for (const std::string& t : o.targets) targets += (targets.empty() ? "" : ",") + io::json::quote(t);
  char numbers[96];
  std::snprintf(numbers, sizeof numbers, "\"alpha\":%.17g,\"dropout\":%.17g", o.alpha, o.dropout);
  return "{\"rank\":" + std::to_string(o.rank) + "," + numbers + ",\"seed\":" + std::to_string(o.seed) +
         ",\"targets\":[" + targets + "]}";
}

LoraOptions parseLoraNote(const std::string& note) {
  const io::json::Value doc = io::json::parse(note, "Gpt2::loadAdapters: the fucina.lora note");
  const auto need = [&](std::string_view key, bool ok) {
    if (!ok) invalid("Gpt2::loadAdapters: the fucina.lora note has no valid '" + std::string(key) + "'");
  };
  need("", doc.kind == io::json::Value::kObject);
  LoraOptions o;
  const io::json::Value* rank = doc.find("rank");
  need("rank", rank && rank->kind == io::json::Value::kCount);
  o.rank = rank->count;
  const io::json::Value* alpha = doc.find("alpha");
  need("alpha", alpha && alpha->isNumber());
  o.alpha = alpha->real;
  if (const io::json::Value* d = doc.find("dropout")) need("dropout", d->isNumber()), o.dropout = d->real;
  if (const io::json::Value* s = doc.find("seed")) need("seed", s->kind == io::json::Value::kCount), o.seed = static_cast<uint64_t>(s->count);
  const io::json::Value* targets = doc.find("targets");
  need("targets", targets && targets->kind == io::json::Value::kArray);
  o.targets.clear();
  for (const io::json::Value& t : targets->items) {
    need("targets", t.kind == io::json::Value::kString);
    o.targets.push_back(t.text);
  }
  return o;
}

// Copies src's values (any dtype, the same extents in order) into the f32 leaf dst, in place.
void copyInto(ExecContext& ctx, const Tensor& dst, const Tensor& src, const std::string& what) {
  if (src.shape() != dst.shape())
    fail(ErrorCode::ShapeMismatch, what + " has shape " + describe(src.tags(), src.shape()) + ", expected " +
                                       describe(dst.tags(), dst.shape()));
  const internal::RawTensor values = src.value().to(ctx, DType::f32);
  std::memcpy(dst.value().f32(), values.f32(), static_cast<size_t>(dst.numel()) * sizeof(float));
}

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

Gpt2::Gpt2(const Gpt2Config& c, const Gpt2Options& o) : config_(c), options_(o) {
  if (c.d_model % c.heads != 0)
    invalid("Gpt2: n_embd " + std::to_string(c.d_model) + " is not a multiple of n_head " + std::to_string(c.heads));
  if (o.dtype != DType::f32 && o.dtype != DType::f16 && o.dtype != DType::bf16 && o.dtype != DType::q8_0)
    invalid("Gpt2: dtype is f32, f16, bf16 or q8_0, not " + std::string(name(o.dtype)));
  if (o.trainable && o.dtype != DType::f32)
    invalid("Gpt2: a trainable model is f32 (got " + std::string(name(o.dtype)) +
            "); fine-tune a 16-bit or q8_0 base with LoRA adapters instead");
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
template <class Source>
void assemble(ExecContext& ctx, const Gpt2Config& c, const Gpt2Options& o, Source&& get, Tensor& wte, Tensor& wpe,
              Tensor& lnf_w, Tensor& lnf_b, std::vector<std::array<Tensor, 12>>& blocks) {
  const std::array<std::pair<Tag, int64_t>, 6> extents = {{{kVocab, c.vocab}, {kT, c.positions}, {kE, c.d_model},
                                                          {kQkv, 3 * c.d_model}, {kAo, c.d_model}, {kMlp, c.inner}}};
  const auto one = [&](const std::string& name, const Tags& tags, bool large, Tag block) {
    Extents shape;
    for (Tag t : tags)
      for (const auto& [tag, n] : extents)
        if (tag == t) shape.push_back(n);
    return store(ctx, get(name, tags, shape), o, large, block);
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
  assemble(ctx, c, o, draw, wte_, wpe_, lnf_w_, lnf_b_, raw);
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
  assemble(ctx, c, o, take, m.wte_, m.wpe_, m.lnf_w_, m.lnf_b_, raw);
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
  if (tokens.dtype() != DType::i32 && tokens.dtype() != DType::i64)
    fail(ErrorCode::DTypeMismatch, "Gpt2: tokens must be i32 or i64, got " + std::string(name(tokens.dtype())) + " " +
                                       describe(tokens.tags(), tokens.shape()));
  if (!hasTag(tokens.tags(), kT))
    fail(ErrorCode::ShapeMismatch, "Gpt2: tokens need a time axis 't', got " + describe(tokens.tags(), tokens.shape()));
  for (Tag own : {kVocab, kE, kQkv, kAo, kMlp, Tag("part"), Tag("head"), Tag("hd"), Tag("rank")})
    if (hasTag(tokens.tags(), own))
      fail(ErrorCode::ShapeMismatch, "Gpt2: tokens may not have an axis '" + std::string(own.name()) +
                                         "' (the model makes it), got " + describe(tokens.tags(), tokens.shape()));
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
  std::optional<uint64_t> call_seed;
  if (lora_ && lora_->dropout > 0 && isGradEnabled()) call_seed = subSeed(lora_->seed, 1 + training_calls_++);
  for (size_t i = 0; i < blocks_.size(); ++i) {
    const Block& b = blocks_[i];
    const std::optional<uint64_t> seed = call_seed ? std::optional(subSeed(*call_seed, i)) : std::nullopt;
    if (cache || !options_.checkpoint_blocks) {
      x = block(ctx, b, x, seed, cache, i);
      continue;
    }
    std::vector<Tensor> inputs{x};
    for (const Tensor* s : slots(b))
      if (s->defined() && s->requiresGrad()) inputs.push_back(*s);
    x = checkpointErased(ctx, [this, b, seed](ExecContext& c, const std::vector<Tensor>& xs) {
      Block local = b;
      size_t next = 1;
      for (Tensor* s : slots(local))
        if (s->defined() && s->requiresGrad()) *s = xs[next++];
      return block(c, local, xs[0], seed);
    }, inputs);
  }
  return x.layerNorm(ctx, kE, lnf_w_, lnf_b_, config_.eps).dot(ctx, wte_, kE);  // the head is tied to wte
}

Tensor Gpt2::loss(ExecContext& ctx, const Tensor& tokens) const {
  if (!hasTag(tokens.tags(), kT))
    fail(ErrorCode::ShapeMismatch, "Gpt2::loss: tokens need a time axis 't', got " + describe(tokens.tags(), tokens.shape()));
  const int64_t t = tokens.extent(kT);
  if (t < 2 || t > config_.positions + 1)
    invalid("Gpt2::loss: " + std::to_string(t) + " tokens along 't'; loss takes 2 to " +
            std::to_string(config_.positions + 1));
  return logits(ctx, tokens.narrow(ctx, kT, 0, t - 1)).crossEntropy(ctx, tokens.narrow(ctx, kT, 1, t - 1), kVocab);
}

std::vector<int32_t> Gpt2::generate(ExecContext& ctx, std::span<const int32_t> prompt, const GenerateOptions& o,
                                    const std::function<bool(int32_t)>& on_token) const {
  const Generator model{"Gpt2::generate", config_.vocab, config_.positions,
                        [this](ExecContext& c, const Tensor& tokens, KvCache* cache) { return forward(c, tokens, cache); }};
  return nn::generate(ctx, model, prompt, o, on_token);
}

// ---------------------------------------------------------------- parameters and files

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

std::vector<Tensor> Gpt2::parameters() const {
  std::vector<Tensor> out;
  if (options_.trainable)
    for (const auto& [n, t] : namedTensors()) out.push_back(t);
  for (const Block& b : blocks_)
    for (const LoraLinear* l : {&b.c_attn, &b.attn_proj, &b.c_fc, &b.mlp_proj})
      if (l->adapted()) out.insert(out.end(), {l->a, l->b});
  return out;
}

std::vector<uint8_t> Gpt2::save(ExecContext& ctx) const {
  const NoGradScope no_grad = noGrad();
  io::NamedTensors named;
  for (const auto& [n, t] : namedTensors())
    named.emplace_back(n, t.dtype() == DType::q8_0 ? t.to(ctx, DType::f32) : t.detach(ctx));
  return io::encodeSafetensors(ctx, named, {{"format", "pt"}});
}

std::vector<Tensor> Gpt2::addLora(ExecContext& ctx, const LoraOptions& o) {
  if (lora_) invalid("Gpt2::addLora: the model already has LoRA adapters (mergeAdapters folds them in first)");
  if (o.targets.empty()) invalid("Gpt2::addLora: no targets (e.g. c_attn, c_proj, c_fc)");
  auto all = layers();
  std::vector<bool> used(o.targets.size(), false);
  std::vector<LoraLinear*> chosen;
  for (const auto& [n, l] : all)
    for (size_t k = 0; k < o.targets.size(); ++k)
      if (matchesTarget(n, o.targets[k])) used[k] = true, chosen.push_back(l);
  for (size_t k = 0; k < o.targets.size(); ++k)
    if (!used[k])
      invalid("Gpt2::addLora: target '" + o.targets[k] + "' matches no layer (the layers are h.N.attn.c_attn, " +
              "h.N.attn.c_proj, h.N.mlp.c_fc, h.N.mlp.c_proj)");
  checkLora(o.rank, o.alpha, o.dropout);  // before any layer changes: a refused call changes nothing
  std::vector<Tensor> adapters;
  for (size_t i = 0; i < all.size(); ++i)
    if (std::find(chosen.begin(), chosen.end(), all[i].second) != chosen.end()) {
      all[i].second->adapt(ctx, o.rank, o.alpha, o.dropout, subSeed(o.seed, i));
      adapters.insert(adapters.end(), {all[i].second->a, all[i].second->b});
    }
  lora_ = o;
  return adapters;
}

std::vector<uint8_t> Gpt2::saveAdapters(ExecContext& ctx) const {
  if (!lora_) invalid("Gpt2::saveAdapters: the model has no LoRA adapters (add them with nn::lora)");
  io::NamedTensors named;
  for (const auto& [n, l] : layers())
    if (l->adapted()) {
      named.emplace_back("base_model.model.transformer." + n + ".lora_A.weight", l->a.detach(ctx));
      named.emplace_back("base_model.model.transformer." + n + ".lora_B.weight", l->b.detach(ctx));
    }
  return io::encodeSafetensors(ctx, named, {{"format", "pt"}, {"fucina.lora", loraNote(*lora_)}});
}

void Gpt2::loadAdapters(ExecContext& ctx, std::span<const uint8_t> bytes, std::optional<LoraOptions> options) {
  io::Metadata meta;
  const io::NamedTensors file = io::decodeSafetensors(ctx, bytes, &meta);
  if (!options) {
    const auto note = meta.find("fucina.lora");
    if (note == meta.end())
      invalid("Gpt2::loadAdapters: the file has no fucina.lora note; pass the LoRA options (rank, alpha, targets) it was made with");
    options = parseLoraNote(note->second);
  }
  // Each adapter's tensor by layer name: "<any prefix>.<layer>.lora_{A,B}.weight" (peft's
  // "base_model.model.transformer." or none).
  std::map<std::string, const Tensor*> found;
  for (const auto& [n, t] : file) {
    std::string key = n;
    for (const char* prefix : {"base_model.model.transformer.", "base_model.model.", "transformer."})
      if (key.starts_with(prefix)) {
        key = key.substr(std::strlen(prefix));
        break;
      }
    if (!key.ends_with(".lora_A.weight") && !key.ends_with(".lora_B.weight"))
      invalid("Gpt2::loadAdapters: '" + n + "' is not a LoRA tensor (…lora_A.weight / …lora_B.weight)");
    found[key] = &t;
  }
  const bool fresh = !lora_;
  if (fresh) addLora(ctx, *options);
  else if (options->rank != lora_->rank || options->alpha != lora_->alpha || options->targets != lora_->targets)
    invalid("Gpt2::loadAdapters: the model's adapters were made with other options (rank " + std::to_string(lora_->rank) +
            ") than the file's; load it into a model without adapters");
  try {
    const NoGradScope no_grad = noGrad();
    size_t used = 0;
    for (const auto& [n, l] : layers()) {
      if (!l->adapted()) continue;
      for (const auto& [suffix, dst] : {std::pair{".lora_A.weight", &l->a}, std::pair{".lora_B.weight", &l->b}}) {
        const auto it = found.find(n + suffix);
        if (it == found.end()) invalid("Gpt2::loadAdapters: the file has no adapter for " + n + " (" + n + suffix + ")");
        copyInto(ctx, *dst, *it->second, "Gpt2::loadAdapters: " + n + suffix);
        ++used;
      }
    }
    if (used != found.size())
      invalid("Gpt2::loadAdapters: the file holds adapters for layers the model's targets do not adapt (" +
              std::to_string(found.size() - used) + " tensor(s))");
  } catch (...) {
    if (fresh) {  // leave the model as it was
      for (auto& [n, l] : layers()) l->a = Tensor(), l->b = Tensor();
      lora_.reset();
    }
    throw;
  }
}

void Gpt2::mergeAdapters(ExecContext& ctx) {
  for (auto& [n, l] : layers())
    if (l->adapted()) {
      const Tensor merged = l->merge(ctx);
      l->weight = options_.trainable ? Tensor::variable(ctx, merged) : merged;  // a trainable model's stay leaves
      l->a = Tensor(), l->b = Tensor();
    }
  lora_.reset();
}

std::vector<Tensor> lora(ExecContext& ctx, Gpt2& model, const LoraOptions& options) {
  return model.addLora(ctx, options);
}

}  // namespace fucina::nn
