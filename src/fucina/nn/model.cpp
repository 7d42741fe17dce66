// What the pretrained language models share (model.h): LoRA adapters on named layers, and their
// files in fucina's and PEFT's forms.
#include "fucina/nn/model.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>

#include "fucina/ag/control.h"
#include "fucina/core/error.h"
#include "fucina/io/json.h"
#include "fucina/io/safetensors.h"
#include "fucina/nn/layers.h"

namespace fucina::nn {

namespace {

[[noreturn]] void invalid(const std::string& message) { fail(ErrorCode::InvalidArgument, message); }

std::string number(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", v);
  return text;
}

std::string quotedList(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& t : items) out += (out.empty() ? "" : ",") + io::json::quote(t);
  return "[" + out + "]";
}

// PEFT's rule: a target is the whole name or its last dotted parts.
bool matchesTarget(const std::string& layer, const std::string& target) {
  return layer == target ||
         (layer.size() > target.size() && layer.ends_with(target) && layer[layer.size() - target.size() - 1] == '.');
}

std::string loraNote(const LoraOptions& o) {
  return "{\"rank\":" + std::to_string(o.rank) + ",\"alpha\":" + number(o.alpha) + ",\"dropout\":" + number(o.dropout) +
         ",\"seed\":" + std::to_string(o.seed) + ",\"targets\":" + quotedList(o.targets) + "}";
}

LoraOptions parseLoraNote(const std::string& note, const std::string& what) {
  const io::json::Value doc = io::json::parse(note, what + ": the fucina.lora note");
  const auto need = [&](std::string_view key, bool ok) {
    if (!ok) invalid(what + ": the fucina.lora note has no valid '" + std::string(key) + "'");
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

Model::Model(std::string kind, std::string layer_hint, std::string peft_prefix, bool fan_in_fan_out,
             const ModelOptions& o)
    : options_(o), kind_(std::move(kind)), layer_hint_(std::move(layer_hint)), peft_prefix_(std::move(peft_prefix)),
      fan_in_fan_out_(fan_in_fan_out) {
  if (o.dtype != DType::f32 && o.dtype != DType::f16 && o.dtype != DType::bf16 && o.dtype != DType::q8_0)
    invalid(kind_ + ": dtype is f32, f16, bf16 or q8_0, not " + std::string(name(o.dtype)));
  if (o.trainable && o.dtype != DType::f32)
    invalid(kind_ + ": a trainable model is f32 (got " + std::string(name(o.dtype)) +
            "); fine-tune a 16-bit or q8_0 base with LoRA adapters instead");
}

Tensor Model::store(ExecContext& ctx, const Tensor& value, bool large, Tag block_axis) const {
  if (options_.trainable) return Tensor::variable(ctx, value.to(ctx, DType::f32));
  if (large && options_.dtype == DType::q8_0) return value.quantize(ctx, DType::q8_0, block_axis);
  return value.to(ctx, large ? options_.dtype : DType::f32);
}

std::optional<uint64_t> Model::callSeed() const {
  if (!lora_ || !(lora_->dropout > 0) || !isGradEnabled()) return std::nullopt;
  return subSeed(lora_->seed, 1 + training_calls_++);
}

void Model::checkTokens(const Tensor& tokens, std::initializer_list<Tag> own) const {
  if (tokens.dtype() != DType::i32 && tokens.dtype() != DType::i64)
    fail(ErrorCode::DTypeMismatch, kind_ + ": tokens must be i32 or i64, got " + std::string(name(tokens.dtype())) + " " +
                                       describe(tokens.tags(), tokens.shape()));
  if (!hasTag(tokens.tags(), Tag("t")))
    fail(ErrorCode::ShapeMismatch, kind_ + ": tokens need a time axis 't', got " + describe(tokens.tags(), tokens.shape()));
  std::vector<Tag> made(own);
  made.push_back(Tag("rank"));
  for (Tag t : made)
    if (hasTag(tokens.tags(), t))
      fail(ErrorCode::ShapeMismatch, kind_ + ": tokens may not have an axis '" + std::string(t.name()) +
                                         "' (the model makes it), got " + describe(tokens.tags(), tokens.shape()));
}

Tensor Model::nextTokenLoss(ExecContext& ctx, const Tensor& tokens, int64_t positions,
                            const std::function<Tensor(const Tensor&)>& logits) const {
  if (!hasTag(tokens.tags(), Tag("t")))
    fail(ErrorCode::ShapeMismatch, kind_ + "::loss: tokens need a time axis 't', got " + describe(tokens.tags(), tokens.shape()));
  const int64_t t = tokens.extent("t");
  if (t < 2 || t > positions + 1)
    invalid(kind_ + "::loss: " + std::to_string(t) + " tokens along 't'; loss takes 2 to " + std::to_string(positions + 1));
  return logits(tokens.narrow(ctx, "t", 0, t - 1)).crossEntropy(ctx, tokens.narrow(ctx, "t", 1, t - 1), "vocab");
}

std::vector<uint8_t> Model::save(ExecContext& ctx) const {
  if (device_ != Device::cpu)
    fail(ErrorCode::DeviceReadIsAsync, kind_ + "::save: the base is on " + std::string(name(device_)) +
                                           ", whose values are read asynchronously; save it before moving the model");
  const NoGradScope no_grad = noGrad();
  io::NamedTensors named;
  for (const auto& [n, t] : namedTensors())
    named.emplace_back(n, t.dtype() == DType::q8_0 ? t.to(ctx, DType::f32) : t.detach(ctx));
  return io::encodeSafetensors(ctx, named, {{"format", "pt"}});
}

void Model::to(ExecContext& ctx, Device device) {
  if (device == device_) return;
  if (device == Device::cpu)
    fail(ErrorCode::DeviceReadIsAsync, kind_ + ".to(cpu): a device's values are read asynchronously; load the model "
                                               "again on the cpu instead");
  ExecContext& target = ctx.on(device);  // DeviceUnavailable before anything moves
  // Each tensor once, by identity: a tied head is the embedding's slot twice.
  std::map<const void*, Tensor> moved;
  std::vector<Tensor*> slots;
  forEachTensor([&](Tensor& t) { slots.push_back(&t); });
  for (Tensor* t : slots) {
    if (!t->defined() || moved.count(t->impl().get())) continue;
    const Tensor there = t->detach(ctx).to(target, device);
    moved[t->impl().get()] = t->requiresGrad() ? Tensor::variable(target, there) : there;
  }
  for (Tensor* t : slots)  // nothing is replaced until every copy is made (a failed one changes nothing)
    if (t->defined()) *t = moved.at(t->impl().get());
  device_ = device;
}

std::vector<Tensor> Model::parameters() const {
  std::vector<Tensor> out;
  if (options_.trainable)
    for (const auto& [n, t] : namedTensors()) out.push_back(t);
  const std::vector<Tensor> lora = adapters();
  out.insert(out.end(), lora.begin(), lora.end());
  return out;
}

std::vector<Tensor> Model::addLora(ExecContext& ctx, const LoraOptions& o) {
  const std::string what = kind_ + "::addLora";
  if (lora_) invalid(what + ": the model already has LoRA adapters (mergeAdapters folds them in first)");
  if (o.targets.empty()) invalid(what + ": no targets (the layers are " + layer_hint_ + ")");
  auto all = layers();
  std::vector<bool> used(o.targets.size(), false), chosen(all.size(), false);
  for (size_t i = 0; i < all.size(); ++i)
    for (size_t k = 0; k < o.targets.size(); ++k)
      if (matchesTarget(all[i].first, o.targets[k])) used[k] = true, chosen[i] = true;
  for (size_t k = 0; k < o.targets.size(); ++k)
    if (!used[k]) invalid(what + ": target '" + o.targets[k] + "' matches no layer (the layers are " + layer_hint_ + ")");
  checkLora(o.rank, o.alpha, o.dropout);  // before any layer changes
  std::vector<Tensor> adapters;
  for (size_t i = 0; i < all.size(); ++i)
    if (chosen[i]) {
      all[i].second->adapt(ctx, o.rank, o.alpha, o.dropout, subSeed(o.seed, i));
      adapters.insert(adapters.end(), {all[i].second->a, all[i].second->b});
    }
  lora_ = o;
  return adapters;
}

std::vector<Tensor> Model::adapters() const {
  std::vector<Tensor> out;
  for (const auto& [n, l] : layers())
    if (l->adapted()) out.insert(out.end(), {l->a, l->b});
  return out;
}

std::vector<uint8_t> Model::saveAdapters(ExecContext& ctx, std::span<const Tensor> values) const {
  const std::string what = kind_ + "::saveAdapters";
  if (!lora_) invalid(what + ": the model has no LoRA adapters (add them with nn::lora)");
  const std::vector<Tensor> own = adapters();
  if (values.empty() && device_ != Device::cpu)
    fail(ErrorCode::DeviceReadIsAsync, what + ": the adapters are on " + std::string(name(device_)) +
                                           ", whose values are read asynchronously: read them back first (exportPeftAsync)");
  if (!values.empty() && values.size() != own.size())
    invalid(what + ": " + std::to_string(values.size()) + " values for the " + std::to_string(own.size()) + " adapters");
  io::NamedTensors named;
  size_t next = 0;
  for (const auto& [n, l] : layers())
    if (l->adapted())
      for (const char* part : {".lora_A.weight", ".lora_B.weight"}) {
        const Tensor& mine = own[next];
        const Tensor value = values.empty() ? mine.detach(ctx) : values[next];
        if (value.device() != Device::cpu || value.dtype() != DType::f32 || value.tags() != mine.tags() ||
            value.shape() != mine.shape())
          invalid(what + ": value " + std::to_string(next) + " must be an f32 host tensor " + mine.value().describe() +
                  ", got " + value.value().describe() + " on " + std::string(name(value.device())));
        named.emplace_back(peft_prefix_ + n + part, value);
        ++next;
      }
  return io::encodeSafetensors(ctx.on(Device::cpu), named, {{"format", "pt"}, {"fucina.lora", loraNote(*lora_)}});
}

void Model::loadAdapters(ExecContext& ctx, std::span<const uint8_t> bytes, std::optional<LoraOptions> options) {
  const std::string what = kind_ + "::loadAdapters";
  io::Metadata meta;
  const io::NamedTensors file = io::decodeSafetensors(ctx, bytes, &meta);
  if (!options) {
    const auto note = meta.find("fucina.lora");
    if (note == meta.end())
      invalid(what + ": the file has no fucina.lora note; pass the LoRA options (rank, alpha, targets) it was made with");
    options = parseLoraNote(note->second, what);
  }
  // Each adapter's tensor by layer name: "<prefix><layer>.lora_{A,B}.weight", the prefix the
  // model's own (PEFT's) or one of the shorter ones other tools write.
  std::map<std::string, const Tensor*> found;
  for (const auto& [n, t] : file) {
    std::string key = n;
    for (const std::string& prefix : {peft_prefix_, std::string("base_model.model."),
                                      peft_prefix_.substr(std::strlen("base_model.model."))})
      if (key.starts_with(prefix)) {
        key = key.substr(prefix.size());
        break;
      }
    if (!key.ends_with(".lora_A.weight") && !key.ends_with(".lora_B.weight"))
      invalid(what + ": '" + n + "' is not a LoRA tensor (…lora_A.weight / …lora_B.weight)");
    found[key] = &t;
  }
  const bool fresh = !lora_;
  if (fresh) addLora(ctx, *options);
  else if (options->rank != lora_->rank || options->alpha != lora_->alpha || options->targets != lora_->targets)
    invalid(what + ": the model's adapters were made with other options (rank " + std::to_string(lora_->rank) +
            ") than the file's; load it into a model without adapters");
  try {
    const NoGradScope no_grad = noGrad();
    size_t used = 0;
    for (const auto& [n, l] : layers()) {
      if (!l->adapted()) continue;
      for (const auto& [suffix, dst] : {std::pair{".lora_A.weight", &l->a}, std::pair{".lora_B.weight", &l->b}}) {
        const auto it = found.find(n + suffix);
        if (it == found.end()) invalid(what + ": the file has no adapter for " + n + " (" + n + suffix + ")");
        copyInto(ctx, *dst, *it->second, what + ": " + n + suffix);
        ++used;
      }
    }
    if (used != found.size())
      invalid(what + ": the file holds adapters for layers the model's targets do not adapt (" +
              std::to_string(found.size() - used) + " tensor(s))");
  } catch (...) {
    if (fresh) {  // leave the model as it was
      for (auto& [n, l] : layers()) l->a = Tensor(), l->b = Tensor();
      lora_.reset();
    }
    throw;
  }
}

void Model::mergeAdapters(ExecContext& ctx) {
  for (auto& [n, l] : layers())
    if (l->adapted()) {
      const Tensor merged = l->merge(ctx);
      l->weight = options_.trainable ? Tensor::variable(ctx, merged) : merged;  // a trainable model's stay leaves
      l->a = Tensor(), l->b = Tensor();
    }
  lora_.reset();
}

std::vector<Tensor> lora(ExecContext& ctx, Model& model, const LoraOptions& options) {
  return model.addLora(ctx, options);
}

// ---------------------------------------------------------------- PEFT's files

PeftAdapter exportPeft(ExecContext& ctx, const Model& model, std::span<const Tensor> values) {
  const std::optional<LoraOptions>& o = model.loraOptions();
  if (!o) invalid("exportPeft: the " + model.kind() + " has no LoRA adapters (add them with nn::lora)");
  PeftAdapter out;
  out.safetensors = model.saveAdapters(ctx, values);
  out.config_json = "{\"peft_type\":\"LORA\",\"task_type\":\"CAUSAL_LM\",\"r\":" + std::to_string(o->rank) +
                    ",\"lora_alpha\":" + number(o->alpha) + ",\"lora_dropout\":" + number(o->dropout) +
                    ",\"target_modules\":" + quotedList(o->targets) + ",\"bias\":\"none\",\"fan_in_fan_out\":" +
                    (model.fanInFanOut() ? "true" : "false") +
                    ",\"inference_mode\":true,\"init_lora_weights\":true,\"use_rslora\":false,\"use_dora\":false,"
                    "\"modules_to_save\":null,\"layers_to_transform\":null,\"layers_pattern\":null,"
                    "\"rank_pattern\":{},\"alpha_pattern\":{},\"base_model_name_or_path\":null,\"revision\":null}";
  return out;
}

namespace {

// adapter_config.json's target_modules as fucina's targets: a list as it is; "all-linear" as
// every layer. A regular expression (any other string) is refused by name: std::regex would
// cost the wasm build a quarter of a megabyte, and the JavaScript facade resolves one itself.
std::vector<std::string> peftTargets(const io::json::Value& v, const Model& model, const std::string& what) {
  std::vector<std::string> out;
  if (v.kind == io::json::Value::kArray) {
    for (const io::json::Value& t : v.items) {
      if (t.kind != io::json::Value::kString || t.text.empty())
        invalid(what + ": target_modules must hold module names (strings)");
      out.push_back(t.text);
    }
    if (out.empty()) invalid(what + ": target_modules is empty");
    return out;
  }
  if (v.kind != io::json::Value::kString) invalid(what + ": target_modules must be a list of names or a string");
  if (v.text != "all-linear")
    invalid(what + ": target_modules is the regular expression '" + v.text +
            "'; pass the names of the modules it matches as a list (or \"all-linear\")");
  for (const auto& [n, l] : model.layers()) out.push_back(n);
  return out;
}

}  // namespace

void loadPeft(ExecContext& ctx, Model& model, std::span<const uint8_t> safetensors, std::string_view config_json) {
  const std::string what = "loadPeft";
  const io::json::Value doc = io::json::parse(config_json, "loadPeft: adapter_config.json");
  if (doc.kind != io::json::Value::kObject) invalid(what + ": adapter_config.json is not a JSON object");
  const auto field = [&](std::string_view key, bool required) -> const io::json::Value* {
    const io::json::Value* v = doc.find(key);
    if (v && v->kind == io::json::Value::kNull) v = nullptr;
    if (!v && required) invalid(what + ": adapter_config.json has no '" + std::string(key) + "'");
    return v;
  };
  const io::json::Value* type = field("peft_type", true);
  if (type->kind != io::json::Value::kString || type->text != "LORA")
    invalid(what + ": peft_type is '" + (type->kind == io::json::Value::kString ? type->text : "?") +
            "'; fucina reads LORA adapters");
  // What PEFT's LoRA can do and fucina's does not: refused by name rather than read wrongly.
  if (const io::json::Value* b = field("bias", false); b && !(b->kind == io::json::Value::kString && b->text == "none"))
    invalid(what + ": bias is not \"none\"; fucina's adapters train no biases");
  for (const char* flag : {"use_rslora", "use_dora"})
    if (const io::json::Value* f = field(flag, false); f && !(f->kind == io::json::Value::kBool && !f->boolean))
      invalid(what + ": " + flag + " is set; fucina's LoRA scales by lora_alpha / r and has no DoRA");
  for (const char* pattern : {"rank_pattern", "alpha_pattern"})
    if (const io::json::Value* p = field(pattern, false); p && !(p->kind == io::json::Value::kObject && p->members.empty()))
      invalid(what + ": " + pattern + " is set; fucina's adapters share one rank and alpha");
  for (const char* key : {"layers_to_transform", "modules_to_save"})
    if (const io::json::Value* p = field(key, false); p && !(p->kind == io::json::Value::kArray && p->items.empty()))
      invalid(what + ": " + key + " is set; fucina adapts whole target modules only");
  LoraOptions o;
  const io::json::Value* r = field("r", true);
  if (r->kind != io::json::Value::kCount || r->count < 1) invalid(what + ": r must be a positive integer");
  o.rank = r->count;
  const io::json::Value* alpha = field("lora_alpha", false);
  if (alpha && !alpha->isNumber()) invalid(what + ": lora_alpha must be a number");
  o.alpha = alpha ? alpha->real : 8.0;  // PEFT's default
  if (const io::json::Value* d = field("lora_dropout", false)) {
    if (!d->isNumber()) invalid(what + ": lora_dropout must be a number");
    o.dropout = d->real;
  }
  o.targets = peftTargets(*field("target_modules", true), model, what);
  if (const std::optional<LoraOptions>& has = model.loraOptions()) o.seed = has->seed;
  model.loadAdapters(ctx, safetensors, o);
}

}  // namespace fucina::nn
