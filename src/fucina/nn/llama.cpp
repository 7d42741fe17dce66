// The Llama family in the Hugging Face layout (llama.h). Axes: batch, "t" time, "e" model width,
// "q" the query heads and "kv" the key/value heads (split into "head"/"hd"), "mlp" the inner
// width, "vocab" tokens.
#include "fucina/nn/llama.h"

#include <array>
#include <cmath>
#include <numbers>
#include <type_traits>

#include "fucina/ag/checkpoint.h"
#include "fucina/ag/control.h"
#include "fucina/core/error.h"
#include "fucina/io/json.h"
#include "fucina/io/safetensors.h"
#include "fucina/nn/layers.h"

namespace fucina::nn {

namespace {

[[noreturn]] void invalid(const std::string& message) { fail(ErrorCode::InvalidArgument, message); }

const Tag kVocab("vocab"), kT("t"), kE("e"), kQ("q"), kKv("kv"), kMlp("mlp"), kHead("head"), kHd("hd");

// ---- config.json

struct ConfigReader {
  const io::json::Value& doc;
  const io::json::Value* get(std::string_view key) const {
    const io::json::Value* v = doc.find(key);
    return v && v->kind != io::json::Value::kNull ? v : nullptr;
  }
  int64_t count(std::string_view key, std::optional<int64_t> fallback = {}) const {
    const io::json::Value* v = get(key);
    if (!v) {
      if (fallback) return *fallback;
      invalid("Llama config.json: '" + std::string(key) + "' is missing");
    }
    if (v->kind != io::json::Value::kCount || v->count < 1 || v->count > (int64_t{1} << 31))
      invalid("Llama config.json: '" + std::string(key) + "' must be a positive integer");
    return v->count;
  }
  double positive(std::string_view key, double fallback, const io::json::Value* in = nullptr) const {
    const io::json::Value* v = in ? in->find(key) : get(key);
    if (!v || v->kind == io::json::Value::kNull) {
      if (fallback > 0) return fallback;
      invalid("Llama config.json: '" + std::string(key) + "' is missing");
    }
    if (!v->isNumber() || !(v->real > 0)) invalid("Llama config.json: '" + std::string(key) + "' must be a positive number");
    return v->real;
  }
  bool flag(std::string_view key, bool fallback) const {
    const io::json::Value* v = get(key);
    if (!v) return fallback;
    if (v->kind != io::json::Value::kBool) invalid("Llama config.json: '" + std::string(key) + "' must be true or false");
    return v->boolean;
  }
};

std::string number(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", v);
  return text;
}

// ---- the tensors of a block: two norms, then seven linear layers, each a weight and a bias slot

constexpr size_t kLinears = 7, kSlots = 2 + 2 * kLinears;
struct LinearSpec {
  const char* name;  // below "layers.N."
  Tag out, in;
};
const std::array<LinearSpec, kLinears> kLinearSpecs = {{{"self_attn.q_proj", kQ, kE},
                                                            {"self_attn.k_proj", kKv, kE},
                                                            {"self_attn.v_proj", kKv, kE},
                                                            {"self_attn.o_proj", kE, kQ},
                                                            {"mlp.gate_proj", kMlp, kE},
                                                            {"mlp.up_proj", kMlp, kE},
                                                            {"mlp.down_proj", kE, kMlp}}};

bool hasBias(const LlamaConfig& c, size_t linear) {
  return linear < 3 ? c.qkv_bias : linear == 3 ? c.o_bias : c.mlp_bias;
}

// What one named file tensor is: its slot (a block's, or embed/norm/head), axes, and whether it
// is a large matrix (stored in the model's dtype, q8_0 blocks along its input axis).
struct Place {
  int64_t layer = -1;  // -1: embed_tokens (slot 0), norm (1), lm_head (2)
  size_t slot = 0;
  Tags tags;
  bool large = false;
  Tag block = kE;
};

std::optional<Place> placeOf(const LlamaConfig& c, const std::string& name) {
  if (name == "embed_tokens.weight") return Place{-1, 0, {kVocab, kE}, true, kE};
  if (name == "norm.weight") return Place{-1, 1, {kE}, false, kE};
  if (name == "lm_head.weight" && !c.tied) return Place{-1, 2, {kVocab, kE}, true, kE};
  if (!name.starts_with("layers.")) return std::nullopt;
  const size_t dot = name.find('.', 7);
  if (dot == std::string::npos || dot == 7) return std::nullopt;
  int64_t layer = 0;
  for (size_t i = 7; i < dot; ++i) {
    if (name[i] < '0' || name[i] > '9' || layer > c.layers) return std::nullopt;
    layer = layer * 10 + (name[i] - '0');
  }
  if (layer >= c.layers) return std::nullopt;
  const std::string rest = name.substr(dot + 1);
  if (rest == "input_layernorm.weight") return Place{layer, 0, {kE}, false, kE};
  if (rest == "post_attention_layernorm.weight") return Place{layer, 1, {kE}, false, kE};
  for (size_t j = 0; j < kLinears; ++j) {
    const LinearSpec& s = kLinearSpecs[j];
    if (rest == std::string(s.name) + ".weight") return Place{layer, 2 + 2 * j, {s.out, s.in}, true, s.in};
    if (rest == std::string(s.name) + ".bias" && hasBias(c, j)) return Place{layer, 3 + 2 * j, {s.out}, false, s.out};
  }
  return std::nullopt;
}

// What old or tied files carry besides the weights.
bool ignoredInFile(const LlamaConfig& c, const std::string& name) {
  return (name == "lm_head.weight" && c.tied) || name.ends_with(".rotary_emb.inv_freq");
}

int64_t extentOf(const LlamaConfig& c, Tag t) {
  if (t == kVocab) return c.vocab;
  if (t == kE) return c.d_model;
  if (t == kQ) return c.heads * c.head_dim;
  if (t == kKv) return c.kv_heads * c.head_dim;
  return c.inner;  // kMlp
}

Extents shapeOf(const LlamaConfig& c, const Tags& tags) {
  Extents shape;
  for (Tag t : tags) shape.push_back(extentOf(c, t));
  return shape;
}

// Every tensor of a model with config c, by name below "model." (lm_head.weight as it is), in
// the order Hugging Face writes a model: embeddings, blocks, final norm, head.
std::vector<std::pair<std::string, Tags>> tensorNames(const LlamaConfig& c) {
  std::vector<std::pair<std::string, Tags>> out = {{"embed_tokens.weight", {kVocab, kE}}};
  for (int64_t i = 0; i < c.layers; ++i) {
    const std::string p = "layers." + std::to_string(i) + ".";
    out.push_back({p + "input_layernorm.weight", {kE}});
    for (size_t j = 0; j < kLinears; ++j) {
      const LinearSpec& s = kLinearSpecs[j];
      if (j == 4) out.push_back({p + "post_attention_layernorm.weight", {kE}});
      out.push_back({p + s.name + ".weight", {s.out, s.in}});
      if (hasBias(c, j)) out.push_back({p + s.name + ".bias", {s.out}});
    }
  }
  out.push_back({"norm.weight", {kE}});
  if (!c.tied) out.push_back({"lm_head.weight", {kVocab, kE}});
  return out;
}

std::string hfName(const std::string& name) { return name == "lm_head.weight" ? name : "model." + name; }

}  // namespace

// ---------------------------------------------------------------- config

LlamaConfig LlamaConfig::fromJson(std::string_view text) {
  const io::json::Value doc = io::json::parse(text, "Llama config.json");
  if (doc.kind != io::json::Value::kObject) invalid("Llama config.json: not a JSON object");
  const ConfigReader r{doc};
  LlamaConfig c;
  const io::json::Value* type = r.get("model_type");
  if (!type) invalid("Llama config.json: 'model_type' is missing (llama or qwen2)");
  if (type->kind != io::json::Value::kString || (type->text != "llama" && type->text != "qwen2"))
    invalid("Llama config.json: model_type '" + (type->kind == io::json::Value::kString ? type->text : "?") +
            "' is not supported (llama, qwen2)");
  c.model_type = type->text;
  c.d_model = r.count("hidden_size");
  c.layers = r.count("num_hidden_layers");
  c.heads = r.count("num_attention_heads");
  c.inner = r.count("intermediate_size");
  c.vocab = r.count("vocab_size");
  c.positions = r.count("max_position_embeddings");
  c.kv_heads = r.count("num_key_value_heads", c.heads);
  if (c.heads % c.kv_heads != 0)
    invalid("Llama config.json: num_attention_heads " + std::to_string(c.heads) +
            " is not a multiple of num_key_value_heads " + std::to_string(c.kv_heads));
  if (!r.get("head_dim") && c.d_model % c.heads != 0)
    invalid("Llama config.json: hidden_size " + std::to_string(c.d_model) + " is not a multiple of num_attention_heads " +
            std::to_string(c.heads) + " (and there is no head_dim)");
  c.head_dim = r.count("head_dim", c.d_model / c.heads);
  if (c.head_dim % 2 != 0) invalid("Llama config.json: head_dim " + std::to_string(c.head_dim) + " is odd (rotary pairs)");
  c.eps = r.positive("rms_norm_eps", 1e-6);
  c.rope_theta = r.positive("rope_theta", 10000.0);
  if (const io::json::Value* act = r.get("hidden_act"))
    if (act->kind != io::json::Value::kString || act->text != "silu")
      invalid("Llama config.json: hidden_act '" + (act->kind == io::json::Value::kString ? act->text : "?") +
              "' is not supported (silu)");
  c.tied = r.flag("tie_word_embeddings", false);
  if (c.model_type == "qwen2") {
    c.qkv_bias = true;
    if (r.flag("use_sliding_window", false))
      invalid("Llama config.json: use_sliding_window is true; sliding-window attention is not supported");
  } else {
    c.qkv_bias = c.o_bias = r.flag("attention_bias", false);
    c.mlp_bias = r.flag("mlp_bias", false);
  }
  if (const io::json::Value* s = r.get("rope_scaling")) {
    if (s->kind != io::json::Value::kObject) invalid("Llama config.json: 'rope_scaling' must be an object or null");
    const io::json::Value* kind = s->find("rope_type");
    if (!kind) kind = s->find("type");
    const std::string k = kind && kind->kind == io::json::Value::kString ? kind->text : "";
    if (k == "linear") {
      c.rope_scaling = RopeScaling::linear;
      c.rope_factor = r.positive("factor", 0, s);
    } else if (k == "llama3") {
      c.rope_scaling = RopeScaling::llama3;
      c.rope_factor = r.positive("factor", 0, s);
      c.low_freq_factor = r.positive("low_freq_factor", 0, s);
      c.high_freq_factor = r.positive("high_freq_factor", 0, s);
      if (!(c.high_freq_factor > c.low_freq_factor))
        invalid("Llama config.json: rope_scaling's high_freq_factor must exceed its low_freq_factor");
      const io::json::Value* orig = s->find("original_max_position_embeddings");
      if (!orig || orig->kind != io::json::Value::kCount || orig->count < 1)
        invalid("Llama config.json: rope_scaling's 'original_max_position_embeddings' must be a positive integer");
      c.original_positions = orig->count;
    } else if (k != "default") {
      invalid("Llama config.json: rope_scaling type '" + k + "' is not supported (linear, llama3)");
    }
  }
  return c;
}

std::string LlamaConfig::toJson() const {
  const bool qwen = model_type == "qwen2";
  std::string scaling = "null";
  if (rope_scaling == RopeScaling::linear) scaling = "{\"rope_type\":\"linear\",\"factor\":" + number(rope_factor) + "}";
  if (rope_scaling == RopeScaling::llama3)
    scaling = "{\"rope_type\":\"llama3\",\"factor\":" + number(rope_factor) + ",\"low_freq_factor\":" +
              number(low_freq_factor) + ",\"high_freq_factor\":" + number(high_freq_factor) +
              ",\"original_max_position_embeddings\":" + std::to_string(original_positions) + "}";
  std::string out = "{\"model_type\":\"" + model_type + "\",\"architectures\":[\"" +
                    (qwen ? "Qwen2ForCausalLM" : "LlamaForCausalLM") + "\"],\"vocab_size\":" + std::to_string(vocab) +
                    ",\"hidden_size\":" + std::to_string(d_model) + ",\"num_hidden_layers\":" + std::to_string(layers) +
                    ",\"num_attention_heads\":" + std::to_string(heads) +
                    ",\"num_key_value_heads\":" + std::to_string(kv_heads) + ",\"head_dim\":" + std::to_string(head_dim) +
                    ",\"intermediate_size\":" + std::to_string(inner) +
                    ",\"max_position_embeddings\":" + std::to_string(positions) + ",\"rms_norm_eps\":" + number(eps) +
                    ",\"rope_theta\":" + number(rope_theta) + ",\"rope_scaling\":" + scaling +
                    ",\"hidden_act\":\"silu\",\"tie_word_embeddings\":" + (tied ? "true" : "false");
  if (!qwen)
    out += std::string(",\"attention_bias\":") + (qkv_bias ? "true" : "false") + ",\"mlp_bias\":" + (mlp_bias ? "true" : "false");
  return out + "}";
}

std::vector<double> LlamaConfig::inverseFrequencies() const {
  std::vector<double> inv(static_cast<size_t>(head_dim / 2));
  for (size_t i = 0; i < inv.size(); ++i) {
    double f = 1.0 / std::pow(rope_theta, static_cast<double>(2 * i) / static_cast<double>(head_dim));
    if (rope_scaling == RopeScaling::linear) f /= rope_factor;
    if (rope_scaling == RopeScaling::llama3) {
      // Hugging Face's llama3 bands: short wavelengths kept, long ones divided by the factor,
      // the band between them interpolated.
      const double wavelen = 2 * std::numbers::pi / f, orig = static_cast<double>(original_positions);
      const double low_wavelen = orig / low_freq_factor, high_wavelen = orig / high_freq_factor;
      if (wavelen > low_wavelen) {
        f /= rope_factor;
      } else if (wavelen >= high_wavelen) {
        const double smooth = (orig / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor);
        f = (1 - smooth) * f / rope_factor + smooth * f;
      }
    }
    inv[i] = f;
  }
  return inv;
}

// ---------------------------------------------------------------- construction and loading

Llama::Llama(const LlamaConfig& c, const ModelOptions& o)
    : Model("Llama", "layers.N.self_attn.{q,k,v,o}_proj, layers.N.mlp.{gate,up,down}_proj", "base_model.model.model.",
            false, o),
      config_(c),
      rotary_(c.inverseFrequencies(), c.positions, kT, kHd),
      pending_(static_cast<size_t>(c.layers), std::vector<Tensor>(kSlots)) {
  if (o.dtype == DType::q8_0 && (c.d_model % 32 != 0 || (c.heads * c.head_dim) % 32 != 0 || c.inner % 32 != 0))
    invalid("Llama: a q8_0 base needs hidden_size, num_attention_heads·head_dim and intermediate_size to be multiples "
            "of 32, got " + std::to_string(c.d_model) + ", " + std::to_string(c.heads * c.head_dim) + " and " +
            std::to_string(c.inner));
}

Llama::Loader::Loader(std::string_view config_json, const ModelOptions& options)
    : model_(new Llama(LlamaConfig::fromJson(config_json), options)) {}
Llama::Loader::Loader(Loader&&) noexcept = default;
Llama::Loader& Llama::Loader::operator=(Loader&&) noexcept = default;
Llama::Loader::~Loader() = default;

void Llama::Loader::add(ExecContext& ctx, const std::string& file_name, const Tensor& value) {
  if (!model_) invalid("Llama::Loader::add: the loader has finished");
  model_->put(ctx, file_name, value);
}

Llama Llama::Loader::finish() {
  if (!model_) invalid("Llama::Loader::finish: the loader has finished");
  model_->assemble();
  Llama out = std::move(*model_);
  model_.reset();
  return out;
}

void Llama::put(ExecContext& ctx, const std::string& file_name, const Tensor& value) {
  Llama& m = *this;
  const std::string name = file_name.starts_with("model.") ? file_name.substr(6) : file_name;
  if (ignoredInFile(m.config_, name)) return;
  const std::optional<Place> p = placeOf(m.config_, name);
  if (!p)
    invalid("Llama::load: the file holds '" + file_name + "', which is not part of this " + m.config_.model_type +
            " model (config.json's sizes and biases decide which tensors it has)");
  Tensor& slot = p->layer < 0 ? (p->slot == 0 ? m.embed_ : p->slot == 1 ? m.norm_ : m.head_)
                              : m.pending_[static_cast<size_t>(p->layer)][p->slot];
  if (slot.defined()) invalid("Llama::load: the file holds '" + file_name + "' twice");
  const Extents shape = shapeOf(m.config_, p->tags);
  if (value.shape() != shape)
    fail(ErrorCode::ShapeMismatch, "Llama::load: '" + file_name + "' is " + describe(value.tags(), value.shape()) +
                                       ", config.json implies " + describe(p->tags, shape));
  if (value.dtype() != DType::f32 && value.dtype() != DType::f16 && value.dtype() != DType::bf16)
    invalid("Llama::load: '" + file_name + "' is " + std::string(fucina::name(value.dtype())) + "; F32, F16 or BF16 expected");
  slot = m.store(ctx, value.withTags(ctx, p->tags), p->large, p->block);
}

void Llama::assemble() {
  Llama& m = *this;
  const auto need = [&](bool ok, const std::string& name) {
    if (!ok) invalid("Llama::load: the file has no '" + hfName(name) + "' (this " + m.config_.model_type + " model has it)");
  };
  need(m.embed_.defined(), "embed_tokens.weight");
  need(m.norm_.defined(), "norm.weight");
  if (m.config_.tied) m.head_ = m.embed_;
  need(m.head_.defined(), "lm_head.weight");
  for (size_t i = 0; i < m.pending_.size(); ++i) {
    std::vector<Tensor>& s = m.pending_[i];
    const std::string p = "layers." + std::to_string(i) + ".";
    need(s[0].defined(), p + "input_layernorm.weight");
    need(s[1].defined(), p + "post_attention_layernorm.weight");
    std::vector<LoraLinear> linears;
    for (size_t j = 0; j < kLinears; ++j) {
      need(s[2 + 2 * j].defined(), p + kLinearSpecs[j].name + ".weight");
      if (hasBias(m.config_, j)) need(s[3 + 2 * j].defined(), p + kLinearSpecs[j].name + ".bias");
      linears.emplace_back(s[2 + 2 * j], s[3 + 2 * j], kLinearSpecs[j].in, kLinearSpecs[j].out);
    }
    m.blocks_.push_back(Block{s[0], s[1], linears[0], linears[1], linears[2], linears[3], linears[4], linears[5], linears[6]});
  }
  m.pending_.clear();
}

Llama::Llama(ExecContext& ctx, const LlamaConfig& c, uint64_t seed, const ModelOptions& o) : Llama(c, o) {
  uint64_t index = 0;
  // Hugging Face's init: N(0, 0.02) for the matrices, biases zero, norms ones.
  for (const auto& [name, tags] : tensorNames(c)) {
    const Extents shape = shapeOf(c, tags);
    const uint64_t s = subSeed(seed, index++);
    put(ctx, name, name.ends_with("norm.weight") ? Tensor::ones(ctx, tags, shape)
                   : name.ends_with(".bias")     ? Tensor::zeros(ctx, tags, shape)
                                                 : Tensor::normal(ctx, tags, shape, 0.0, 0.02, s));
  }
  assemble();
}

Llama Llama::load(ExecContext& ctx, std::span<const uint8_t> bytes, std::string_view config_json, DType dtype) {
  ModelOptions o;
  o.dtype = dtype;
  return load(ctx, bytes, config_json, o);
}

Llama Llama::load(ExecContext& ctx, std::span<const uint8_t> bytes, std::string_view config_json, const ModelOptions& o) {
  Loader loader(config_json, o);
  const io::SafetensorsReader file(bytes);
  for (const io::SafetensorsEntry& e : file.entries()) loader.add(ctx, e.name, file.read(ctx, e));  // one at a time
  return loader.finish();
}

// ---------------------------------------------------------------- forward

namespace {
// A block's tensors in one fixed order (checkpointBlock rebinds the trainable ones).
template <class B>
auto slots(B& b) {
  return std::array{&b.ln1, &b.ln2, &b.q.weight, &b.q.bias, &b.q.a, &b.q.b, &b.k.weight, &b.k.bias, &b.k.a, &b.k.b,
                    &b.v.weight, &b.v.bias, &b.v.a, &b.v.b, &b.o.weight, &b.o.bias, &b.o.a, &b.o.b,
                    &b.gate.weight, &b.gate.bias, &b.gate.a, &b.gate.b, &b.up.weight, &b.up.bias, &b.up.a, &b.up.b,
                    &b.down.weight, &b.down.bias, &b.down.a, &b.down.b};
}
}  // namespace

Tensor Llama::block(ExecContext& ctx, const Block& b, const Tensor& x, const Tensor& cos, const Tensor& sin,
                    std::optional<uint64_t> seed, KvCache* cache, size_t layer_index) const {
  const LlamaConfig& c = config_;
  const auto layer = [&](uint64_t k) { return seed ? std::optional(subSeed(*seed, k)) : std::nullopt; };
  RopeOptions rope;  // Hugging Face's rotate_half pairs (i, i + hd/2), angles from the tables
  rope.position = kT;
  rope.dim = kHd;
  rope.mode = RopeOptions::Mode::half;
  const Tensor h = x.rmsNormMul(ctx, kE, b.ln1, c.eps);
  const Tensor q = b.q(ctx, h, layer(0)).split(ctx, kQ, {kHead, kHd}, {c.heads, c.head_dim}).rope(ctx, cos, sin, rope);
  const Tensor k = b.k(ctx, h, layer(1)).split(ctx, kKv, {kHead, kHd}, {c.kv_heads, c.head_dim}).rope(ctx, cos, sin, rope);
  const Tensor v = b.v(ctx, h, layer(2)).split(ctx, kKv, {kHead, kHd}, {c.kv_heads, c.head_dim});
  const Tensor a = cachedAttention(ctx, q, k, v, cache, layer_index);
  const Tensor r = x.add(ctx, b.o(ctx, a.merge(ctx, {kHead, kHd}, kQ), layer(3)));
  const Tensor m = r.rmsNormMul(ctx, kE, b.ln2, c.eps);
  const Tensor g = b.up(ctx, m, layer(5)).gated(ctx, b.gate(ctx, m, layer(4)), "silu");  // silu(gate)·up
  return checkpointTail([&] { return r.add(ctx, b.down(ctx, g, layer(6))); });  // Note [Checkpoint tail]
}

Tensor Llama::logits(ExecContext& ctx, const Tensor& tokens) const { return forward(ctx, tokens, nullptr); }

Tensor Llama::logits(ExecContext& ctx, const Tensor& tokens, KvCache& cache) const {
  return forward(ctx, tokens, &cache);
}

Tensor Llama::forward(ExecContext& ctx, const Tensor& tokens, KvCache* cache) const {
  checkTokens(tokens, {kVocab, kE, kQ, kKv, kMlp, kHead, kHd});
  const int64_t t = tokens.extent(kT), start = cache ? cache->length() : 0;
  if (t < 1 || start + t > config_.positions)
    invalid("Llama: " + std::to_string(t) + " tokens along 't'" +
            (start ? " after the " + std::to_string(start) + " of the KV cache" : std::string()) +
            "; the model reads 1 to " + std::to_string(config_.positions) + " (max_position_embeddings)");
  const std::pair<Tensor, Tensor> tables = rotary_.rows(ctx, start, t);
  const Tensor &cos = tables.first, &sin = tables.second;
  // Embeddings: the rows of a 16-bit or q8_0 table are read as stored, then widened.
  Tensor x = embed_.indexSelect(ctx, kVocab, tokens);
  if (x.dtype() != DType::f32) x = x.to(ctx, DType::f32);
  const std::optional<uint64_t> call_seed = callSeed();  // Note [Recompute-safe LoRA dropout]
  for (size_t i = 0; i < blocks_.size(); ++i) {
    const std::optional<uint64_t> seed = call_seed ? std::optional(subSeed(*call_seed, i)) : std::nullopt;
    if (cache || !options_.checkpoint_blocks)
      x = block(ctx, blocks_[i], x, cos, sin, seed, cache, i);
    else
      x = checkpointBlock(ctx, blocks_[i], x, [](auto& blk) { return slots(blk); },
                          [this, cos, sin, seed](ExecContext& c, const Block& blk, const Tensor& in) {
                            return block(c, blk, in, cos, sin, seed);
                          });
  }
  return x.rmsNormMul(ctx, kE, norm_, config_.eps).dot(ctx, head_, kE);
}

Tensor Llama::loss(ExecContext& ctx, const Tensor& tokens) const {
  return nextTokenLoss(ctx, tokens, config_.positions, [&](const Tensor& x) { return logits(ctx, x); });
}

std::vector<int32_t> Llama::generate(ExecContext& ctx, std::span<const int32_t> prompt, const GenerateOptions& o,
                                     const std::function<bool(int32_t)>& on_token) const {
  const Generator model{"Llama::generate", config_.vocab, config_.positions,
                        [this](ExecContext& c, const Tensor& tokens, KvCache* cache) { return forward(c, tokens, cache); }};
  return nn::generate(ctx, model, prompt, o, on_token);
}

// ---------------------------------------------------------------- parameters and files

void Llama::forEachTensor(const std::function<void(Tensor&)>& f) {
  f(embed_);
  f(norm_);
  f(head_);
  for (Block& b : blocks_)
    for (Tensor* t : slots(b)) f(*t);
}

template <class Self>
auto Llama::layersOf(Self& self) {
  using L = std::conditional_t<std::is_const_v<Self>, const LoraLinear*, LoraLinear*>;
  std::vector<std::pair<std::string, L>> out;
  for (size_t i = 0; i < self.blocks_.size(); ++i) {
    const std::string p = "layers." + std::to_string(i) + ".";
    auto& b = self.blocks_[i];
    const std::array<L, kLinears> ls = {&b.q, &b.k, &b.v, &b.o, &b.gate, &b.up, &b.down};
    for (size_t j = 0; j < kLinears; ++j) out.emplace_back(p + kLinearSpecs[j].name, ls[j]);
  }
  return out;
}

std::vector<std::pair<std::string, LoraLinear*>> Llama::layers() { return layersOf(*this); }
std::vector<std::pair<std::string, const LoraLinear*>> Llama::layers() const { return layersOf(*this); }

std::vector<std::pair<std::string, Tensor>> Llama::namedTensors() const {
  std::vector<std::pair<std::string, Tensor>> out;
  for (const auto& [name, tags] : tensorNames(config_)) {
    const Tensor* t = nullptr;
    if (name == "embed_tokens.weight") t = &embed_;
    else if (name == "norm.weight") t = &norm_;
    else if (name == "lm_head.weight") t = &head_;
    else {
      const std::optional<Place> p = placeOf(config_, name);
      const Block& b = blocks_[static_cast<size_t>(p->layer)];
      const std::array<const LoraLinear*, kLinears> ls = {&b.q, &b.k, &b.v, &b.o, &b.gate, &b.up, &b.down};
      t = p->slot == 0 ? &b.ln1 : p->slot == 1 ? &b.ln2 : p->slot % 2 == 0 ? &ls[(p->slot - 2) / 2]->weight
                                                                            : &ls[(p->slot - 3) / 2]->bias;
    }
    out.emplace_back(hfName(name), *t);
  }
  return out;
}

}  // namespace fucina::nn
