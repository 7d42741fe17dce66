// nn::Llama against the PyTorch reference in tests/fixtures/{llama,qwen2} (written by
// tests/fixtures/llama_fixture.py): a Llama with grouped-query attention, an untied head and
// llama3 rope scaling (F32 file), and a Qwen2 with q/k/v biases and a tied head (BF16 file).
// Logits and loss per base dtype, full fine-tuning gradients, a PEFT adapter with its gradients;
// then the KV cache, loading tensor by tensor, PEFT files out and back, and errors.
#include "hf_fixture.h"

#include <algorithm>

using fucina::Device;
using fucina::DType;
using fucina::ExecContext;
using fucina::Tensor;
using fucina::nn::Llama;
using fucina::nn::LlamaConfig;
using fucina::nn::LoraOptions;
using fucina::nn::ModelOptions;
using test::adapterOf;
using test::overwrite;
using test::requireClose;
namespace json = fucina::io::json;

namespace {

const test::HfFixture& fixture(const std::string& dir) {
  static const test::HfFixture llama{"llama"}, qwen2{"qwen2"};
  return dir == "llama" ? llama : qwen2;
}

Llama loadFixture(ExecContext& ctx, const std::string& dir, ModelOptions o = {}) {
  return Llama::load(ctx, fixture(dir).model, fixture(dir).config, o);
}

DType dtypeNamed(const std::string& s) {
  for (DType d : {DType::f32, DType::f16, DType::bf16, DType::q8_0})
    if (fucina::name(d) == s) return d;
  FAIL("no dtype " << s);
  return DType::f32;
}

std::string dump(const json::Value& v) {
  switch (v.kind) {
    case json::Value::kString: return json::quote(v.text);
    case json::Value::kBool: return v.boolean ? "true" : "false";
    case json::Value::kNull: return "null";
    case json::Value::kCount: return std::to_string(v.count);
    case json::Value::kReal: {
      char text[32];
      std::snprintf(text, sizeof text, "%.17g", v.real);
      return text;
    }
    case json::Value::kArray: {
      std::string out;
      for (const json::Value& x : v.items) out += (out.empty() ? "" : ",") + dump(x);
      return "[" + out + "]";
    }
    case json::Value::kObject: {
      std::string out;
      for (const json::Member& m : v.members) out += (out.empty() ? "" : ",") + json::quote(m.key) + ":" + dump(m.value);
      return "{" + out + "}";
    }
  }
  return "";
}

// A JSON object's text with one key's value replaced (or the key dropped when value is empty).
std::string withKey(const std::string& text, const std::string& key, const std::string& value) {
  json::Value doc = json::parse(text, "config");
  std::erase_if(doc.members, [&](const json::Member& m) { return m.key == key; });
  std::string out = dump(doc);
  if (!value.empty()) out.insert(out.size() - 1, "," + json::quote(key) + ":" + value);
  return out;
}

}  // namespace

TEST_CASE("Llama and Qwen2 load Hugging Face checkpoints and match PyTorch's logits and loss", "[llama]") {
  ExecContext ctx;
  for (const char* dir : {"llama", "qwen2"})
    for (const char* dtype : {"f32", "f16", "bf16", "q8_0"}) {
      DYNAMIC_SECTION(dir << " " << dtype) {
        const test::HfFixture& f = fixture(dir);
        ModelOptions o;
        o.dtype = dtypeNamed(dtype);
        const Llama m = loadFixture(ctx, dir, o);
        CHECK(m.config().d_model == 64);
        CHECK(m.config().tied == (std::string(dir) == "qwen2"));
        const Tensor tokens = f.tokens(ctx);
        const Tensor logits = m.logits(ctx, tokens);
        CHECK(logits.tags() == fucina::Tags{"batch", "t", "vocab"});
        requireClose(logits.toVector(), f.numbers({"logits", dtype}), 1e-4, 1e-4);
        CHECK(m.loss(ctx, tokens).item() == Approx(f.at({"loss", dtype}).real).epsilon(1e-5));
        if (o.dtype != DType::f32) {  // the documented cost of each dtype
          const double vs_f32 = requireClose(logits.toVector(), f.numbers({"logits", "f32"}), 0.6, 0);
          CHECK(vs_f32 <= f.at({"max_abs_vs_f32", dtype}).real + 1e-3);
        }
      }
    }
}

TEST_CASE("Llama trainable: full fine-tuning gradients match PyTorch's", "[llama]") {
  ExecContext ctx;
  for (const char* dir : {"llama", "qwen2"}) {
    DYNAMIC_SECTION(dir) {
      const test::HfFixture& f = fixture(dir);
      ModelOptions o;
      o.trainable = true;
      const Llama m = loadFixture(ctx, dir, o);
      CHECK(m.parameters().size() == m.namedTensors().size());
      m.loss(ctx, f.tokens(ctx)).backward(ctx);
      const auto named = m.namedTensors();
      for (const json::Member& g : f.at({"grads"}).members) {
        INFO(g.key);
        const auto it = std::find_if(named.begin(), named.end(), [&](const auto& p) { return p.first == g.key; });
        REQUIRE(it != named.end());
        std::vector<double> want;
        for (const json::Value& x : g.value.items) want.push_back(x.real);
        requireClose(it->second.grad(ctx)->toVector(), want, 2e-5, 1e-3);
      }
    }
  }
}

TEST_CASE("Llama with a PEFT adapter matches PyTorch's LoRA logits, loss and adapter gradients", "[llama][lora]") {
  ExecContext ctx;
  const test::HfFixture& f = fixture("llama");
  const std::vector<uint8_t> adapter = test::readFixtureBytes("llama", "adapter_model.safetensors");
  const std::string adapter_config = test::readFixtureText("llama", "adapter_config.json");
  for (bool checkpoint : {false, true}) {
    DYNAMIC_SECTION("checkpoint_blocks " << checkpoint) {
      ModelOptions o;
      o.checkpoint_blocks = checkpoint;
      Llama m = loadFixture(ctx, "llama", o);
      fucina::nn::loadPeft(ctx, m, adapter, adapter_config);
      CHECK(m.parameters().size() == 2 * 7 * 2);  // seven projections of 2 blocks
      CHECK(m.loraOptions()->alpha == 8);
      const Tensor tokens = f.tokens(ctx);
      requireClose(m.logits(ctx, tokens).toVector(), f.numbers({"lora", "logits"}), 1e-4, 1e-4);
      const Tensor loss = m.loss(ctx, tokens);
      CHECK(loss.item() == Approx(f.at({"lora", "loss"}).real).epsilon(1e-5));
      loss.backward(ctx);
      for (const char* layer : {"layers.0.self_attn.q_proj", "layers.1.mlp.down_proj"})
        for (bool b : {false, true}) {
          INFO(layer << (b ? " B" : " A"));
          requireClose(adapterOf(m, layer, b).grad(ctx)->toVector(),
                       f.numbers({"lora", "grads", std::string(layer) + (b ? ".lora_B" : ".lora_A")}), 2e-5, 1e-3);
        }
    }
  }
}

TEST_CASE("Llama checkpointing gives bitwise-equal adapter gradients, LoRA dropout included", "[llama][lora]") {
  ExecContext ctx;
  std::vector<std::vector<float>> grads[2];
  for (bool checkpoint : {false, true}) {
    ModelOptions o;
    o.checkpoint_blocks = checkpoint;
    o.dtype = DType::q8_0;
    Llama m = loadFixture(ctx, "qwen2", o);
    LoraOptions lo;
    lo.rank = 4;
    lo.alpha = 16;
    lo.dropout = 0.5;
    lo.targets = {"q_proj", "v_proj", "down_proj"};
    lo.seed = 7;
    const std::vector<Tensor> adapters = fucina::nn::lora(ctx, m, lo);
    for (size_t i = 1; i < adapters.size(); i += 2)
      overwrite(adapters[i], Tensor::normal(ctx, adapters[i].tags(), adapters[i].shape(), 0, 0.1, 100 + i));
    m.loss(ctx, fixture("qwen2").tokens(ctx)).backward(ctx);
    for (const Tensor& a : adapters) grads[checkpoint].push_back(a.grad(ctx)->toVector());
  }
  REQUIRE(grads[0].size() == 12);
  for (size_t i = 0; i < grads[0].size(); ++i) CHECK(grads[0][i] == grads[1][i]);
}

TEST_CASE("Model::to: the cpu is where a model is, a device not attached is DeviceUnavailable and moves nothing, saveAdapters takes values read back", "[llama][device]") {
  ExecContext ctx;
  Llama m = loadFixture(ctx, "llama", {.dtype = DType::q8_0});
  LoraOptions o;
  o.rank = 2;
  o.targets = {"q_proj"};
  const std::vector<Tensor> adapters = m.addLora(ctx, o);
  const Tensor tokens = fixture("llama").tokens(ctx);
  const std::vector<float> before = m.logits(ctx, tokens).toVector();
  CHECK(m.device() == Device::cpu);
  m.to(ctx, Device::cpu);  // already there
  REQUIRE_FUCINA_ERROR(m.to(ctx, Device::webgpu), DeviceUnavailable);  // native builds have no WebGPU
  CHECK(m.device() == Device::cpu);
  CHECK(m.logits(ctx, tokens).toVector() == before);
  CHECK(m.parameters()[0].impl() == adapters[0].impl());  // the same leaves

  // saveAdapters of values read back from elsewhere (a device): they, not the model's, are saved.
  std::vector<Tensor> doubled;
  for (const Tensor& t : m.adapters()) doubled.push_back(t.detach(ctx).scale(ctx, 2.0).addScalar(ctx, 1.0));
  Llama other = loadFixture(ctx, "llama", {.dtype = DType::q8_0});
  other.loadAdapters(ctx, m.saveAdapters(ctx, doubled));
  REQUIRE(other.adapters().size() == doubled.size());
  for (size_t i = 0; i < doubled.size(); ++i) CHECK(other.adapters()[i].toVector() == doubled[i].toVector());
  REQUIRE_FUCINA_ERROR((void)m.saveAdapters(ctx, std::span(doubled).first(1)), InvalidArgument);
  std::vector<Tensor> wrong = doubled;
  std::swap(wrong[0], wrong[1]);  // A and B swapped: the wrong axes
  REQUIRE_FUCINA_ERROR((void)m.saveAdapters(ctx, wrong), InvalidArgument);
}

TEST_CASE("Llama's KV cache gives the full forward's logits, and generate is seeded and greedy at 0", "[llama]") {
  ExecContext ctx;
  for (const char* dir : {"llama", "qwen2"}) {
    DYNAMIC_SECTION(dir) {
      const Llama m = loadFixture(ctx, dir);
      const Tensor tokens = fixture(dir).tokens(ctx).narrow(ctx, "batch", 0, 1);
      const Tensor full = m.logits(ctx, tokens);
      fucina::nn::KvCache cache;
      const Tensor first = m.logits(ctx, tokens.narrow(ctx, "t", 0, 7), cache);
      const Tensor rest = m.logits(ctx, tokens.narrow(ctx, "t", 7, 5), cache);
      CHECK(cache.length() == 12);
      CHECK(cache.keys[0].extent("head") == m.config().kv_heads);  // grouped heads are cached once
      requireClose(first.toVector(), [&] {
        std::vector<double> v;
        for (float x : full.narrow(ctx, "t", 0, 7).contiguous(ctx).toVector()) v.push_back(x);
        return v;
      }(), 1e-5, 1e-5);
      std::vector<double> tail;
      for (float x : full.narrow(ctx, "t", 7, 5).contiguous(ctx).toVector()) tail.push_back(x);
      requireClose(rest.toVector(), tail, 1e-5, 1e-5);

      const std::vector<int32_t> prompt = {5, 17, 3};
      fucina::nn::GenerateOptions o;
      o.max_tokens = 5;
      o.seed = 11;
      o.top_k = 10;
      CHECK(m.generate(ctx, prompt, o) == m.generate(ctx, prompt, o));
      o.temperature = 0;
      const auto greedy = m.generate(ctx, prompt, o);
      std::vector<int64_t> ids(prompt.begin(), prompt.end());
      for (int32_t next : greedy) {  // each the argmax of an uncached forward over the context
        const Tensor t = Tensor::fromInts(ctx, {"batch", "t"}, {1, static_cast<int64_t>(ids.size())}, ids, DType::i32);
        const Tensor last = m.logits(ctx, t).select(ctx, "batch", 0).select(ctx, "t", static_cast<int64_t>(ids.size()) - 1);
        CHECK(next == last.argmax(ctx, "vocab").item());
        ids.push_back(next);
      }
    }
  }
}

TEST_CASE("Llama loads tensor by tensor: any order, and the peak is the model plus one tensor", "[llama]") {
  ExecContext ctx;
  const test::HfFixture& f = fixture("llama");
  // Every tensor given through the Loader in reverse order: the same model.
  const fucina::io::SafetensorsReader file(f.model);
  ModelOptions o;
  o.dtype = DType::q8_0;
  Llama::Loader loader(f.config, o);
  size_t largest = 0;
  for (auto it = file.entries().rbegin(); it != file.entries().rend(); ++it) {
    loader.add(ctx, it->name, file.read(ctx, *it));
    largest = std::max<size_t>(largest, it->end - it->begin);
  }
  const Llama reversed = loader.finish();
  REQUIRE_FUCINA_ERROR(loader.add(ctx, "model.norm.weight", Tensor::ones(ctx, {"e"}, {64})), InvalidArgument);
  const Tensor tokens = f.tokens(ctx);
  const Llama m = loadFixture(ctx, "llama", o);
  CHECK(reversed.logits(ctx, tokens).toVector() == m.logits(ctx, tokens).toVector());
  // The peak of a load: the model as stored plus one file tensor and its f32 widening, never the
  // file's tensors beside it.
  ctx.trimCache();
  const size_t before = ctx.memory().live_bytes;
  ctx.resetPeak();
  size_t model_bytes = 0;
  {
    const Llama loaded = loadFixture(ctx, "llama", o);
    model_bytes = ctx.memory().live_bytes - before;
    CHECK(ctx.memory().peak_bytes - before <= model_bytes + 3 * largest);
    CHECK(model_bytes < f.model.size() / 3);  // q8_0: about a quarter of the F32 file
  }
}

TEST_CASE("PEFT files: exportPeft writes PEFT's names and config, loadPeft reads them back", "[llama][gpt2][lora]") {
  ExecContext ctx;
  Llama m = loadFixture(ctx, "llama");
  LoraOptions lo;
  lo.rank = 2;
  lo.alpha = 4;
  lo.targets = {"q_proj", "v_proj", "gate_proj"};
  lo.seed = 3;
  const std::vector<Tensor> adapters = fucina::nn::lora(ctx, m, lo);
  for (size_t i = 1; i < adapters.size(); i += 2)
    overwrite(adapters[i], Tensor::normal(ctx, adapters[i].tags(), adapters[i].shape(), 0, 0.1, 50 + i));
  const fucina::nn::PeftAdapter peft = fucina::nn::exportPeft(ctx, m);
  const json::Value config = json::parse(peft.config_json, "adapter_config.json");
  CHECK(config.find("peft_type")->text == "LORA");
  CHECK(config.find("task_type")->text == "CAUSAL_LM");
  CHECK(config.find("r")->count == 2);
  CHECK(config.find("lora_alpha")->real == 4);
  CHECK(config.find("target_modules")->items.size() == 3);
  CHECK(config.find("bias")->text == "none");
  CHECK(!config.find("fan_in_fan_out")->boolean);
  fucina::io::Metadata meta;
  const fucina::io::NamedTensors tensors = fucina::io::decodeSafetensors(ctx, peft.safetensors, &meta);
  CHECK(tensors.size() == 2 * 3 * 2);
  CHECK(tensors[0].first == "base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight");
  CHECK(tensors[0].second.shape() == fucina::Extents{2, 64});   // [r, in]
  CHECK(tensors[1].second.shape() == fucina::Extents{64, 2});   // lora_B [out, r]
  // Onto a fresh model (f16 base): the same adapters, so the same change of the output.
  ModelOptions half;
  half.dtype = DType::f16;
  Llama fresh = loadFixture(ctx, "llama", half);
  fucina::nn::loadPeft(ctx, fresh, peft.safetensors, peft.config_json);
  const auto fresh_layers = fresh.layers();
  const auto layers = m.layers();
  REQUIRE(layers.size() == fresh_layers.size());
  for (size_t i = 0; i < layers.size(); ++i) {  // the same names in the same order
    CHECK(fresh_layers[i].first == layers[i].first);
    CHECK(fresh_layers[i].second->adapted() == layers[i].second->adapted());
    if (layers[i].second->adapted()) CHECK(fresh_layers[i].second->b.toVector() == layers[i].second->b.toVector());
  }
  // "all-linear", as PEFT writes it, adapts every layer; a regular expression is refused by name.
  Llama all = loadFixture(ctx, "llama");
  const std::string list = "\"target_modules\":[\"q_proj\",\"v_proj\",\"gate_proj\"]";
  std::string all_linear = peft.config_json;
  all_linear.replace(all_linear.find(list), list.size(), "\"target_modules\":\"all-linear\"");
  REQUIRE_FUCINA_ERROR(fucina::nn::loadPeft(ctx, all, peft.safetensors, all_linear), InvalidArgument);  // no adapters for k_proj...
  CHECK(!all.loraOptions());
  std::string regex = peft.config_json;
  regex.replace(regex.find(list), list.size(), "\"target_modules\":\".*(q|v)_proj\"");
  REQUIRE_FUCINA_ERROR(fucina::nn::loadPeft(ctx, all, peft.safetensors, regex), InvalidArgument);
  fucina::nn::lora(ctx, all, [] { LoraOptions o; o.targets = {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}; return o; }());
  const fucina::nn::PeftAdapter every = fucina::nn::exportPeft(ctx, all);
  Llama by_all = loadFixture(ctx, "llama");
  std::string every_config = every.config_json;
  const size_t at = every_config.find("\"target_modules\":[");
  every_config.replace(at, every_config.find(']', at) + 1 - at, "\"target_modules\":\"all-linear\"");
  fucina::nn::loadPeft(ctx, by_all, every.safetensors, every_config);
  CHECK(by_all.parameters().size() == 2 * 7 * 2);
  // GPT-2's adapters: under "transformer.", fan_in_fan_out true.
  fucina::nn::Gpt2 g = fucina::nn::Gpt2::load(ctx, test::readFixtureBytes("gpt2", "model.safetensors"),
                                              test::readFixtureText("gpt2", "config.json"));
  LoraOptions gl;
  gl.targets = {"c_attn"};
  fucina::nn::lora(ctx, g, gl);
  const fucina::nn::PeftAdapter gp = fucina::nn::exportPeft(ctx, g);
  CHECK(json::parse(gp.config_json, "c").find("fan_in_fan_out")->boolean);
  CHECK(fucina::io::decodeSafetensors(ctx, gp.safetensors)[0].first ==
        "base_model.model.transformer.h.0.attn.c_attn.lora_A.weight");
  fucina::nn::Gpt2 g2 = fucina::nn::Gpt2::load(ctx, test::readFixtureBytes("gpt2", "model.safetensors"),
                                               test::readFixtureText("gpt2", "config.json"));
  fucina::nn::loadPeft(ctx, g2, gp.safetensors, gp.config_json);
  CHECK(g2.parameters().size() == 4);
}

TEST_CASE("Llama from a seed: Hugging Face's init, saved and loaded back", "[llama]") {
  ExecContext ctx;
  LlamaConfig c = LlamaConfig::fromJson(fixture("qwen2").config);
  c.layers = 1;
  ModelOptions o;
  o.trainable = true;
  const Llama m(ctx, c, 5, o), same(ctx, c, 5, o);
  const Tensor tokens = Tensor::fromInts(ctx, {"batch", "t"}, {1, 6}, {3, 1, 4, 1, 5, 9}, DType::i32);
  CHECK(m.logits(ctx, tokens).toVector() == same.logits(ctx, tokens).toVector());
  for (const auto& [n, t] : m.namedTensors()) {
    INFO(n);
    CHECK(t.requiresGrad());
    const std::vector<float> v = t.toVector();
    if (n.ends_with("norm.weight")) CHECK(v == std::vector<float>(v.size(), 1.0f));
    if (n.ends_with(".bias")) CHECK(v == std::vector<float>(v.size(), 0.0f));
  }
  const Llama back = Llama::load(ctx, m.save(ctx), c.toJson());
  CHECK(back.logits(ctx, tokens).toVector() == m.logits(ctx, tokens).toVector());
  const LlamaConfig again = LlamaConfig::fromJson(c.toJson());
  CHECK((again.tied && again.qkv_bias && again.kv_heads == 1 && again.rope_theta == 1e6));
  const LlamaConfig l = LlamaConfig::fromJson(fixture("llama").config);
  const LlamaConfig l2 = LlamaConfig::fromJson(l.toJson());
  CHECK(l2.inverseFrequencies() == l.inverseFrequencies());
  CHECK(l.rope_scaling == LlamaConfig::RopeScaling::llama3);
}

TEST_CASE("Llama refuses bad configs, files, tokens and PEFT options with typed errors", "[llama][errors]") {
  ExecContext ctx;
  const test::HfFixture& f = fixture("llama");
  for (const char* key : {"hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size", "vocab_size",
                          "max_position_embeddings", "model_type"}) {
    INFO(key);
    REQUIRE_FUCINA_ERROR(Llama::load(ctx, f.model, withKey(f.config, key, "")), InvalidArgument);
  }
  REQUIRE_FUCINA_ERROR(LlamaConfig::fromJson(withKey(f.config, "model_type", "\"gpt2\"")), InvalidArgument);
  REQUIRE_FUCINA_ERROR(LlamaConfig::fromJson(withKey(f.config, "hidden_act", "\"gelu\"")), InvalidArgument);
  REQUIRE_FUCINA_ERROR(LlamaConfig::fromJson(withKey(f.config, "num_key_value_heads", "3")), InvalidArgument);
  REQUIRE_FUCINA_ERROR(LlamaConfig::fromJson(withKey(f.config, "rope_scaling", "{\"rope_type\":\"yarn\",\"factor\":4}")),
                       InvalidArgument);
  REQUIRE_FUCINA_ERROR(LlamaConfig::fromJson(withKey(f.config, "rope_scaling", "{\"rope_type\":\"llama3\",\"factor\":8}")),
                       InvalidArgument);
  // A config whose sizes the file does not have: the first tensor that differs is named.
  REQUIRE_FUCINA_ERROR(Llama::load(ctx, f.model, withKey(f.config, "intermediate_size", "128")), ShapeMismatch);
  // A tied config for an untied file: lm_head is ignored... and a biased one misses the biases.
  REQUIRE_FUCINA_ERROR(Llama::load(ctx, f.model, withKey(f.config, "attention_bias", "true")), InvalidArgument);
  // Tensors missing, or one the model does not have.
  Llama::Loader partial(f.config, {});
  REQUIRE_FUCINA_ERROR(partial.finish(), InvalidArgument);
  Llama::Loader extra(f.config, {});
  REQUIRE_FUCINA_ERROR(extra.add(ctx, "model.layers.2.input_layernorm.weight", Tensor::ones(ctx, {"d0"}, {64})),
                       InvalidArgument);
  REQUIRE_FUCINA_ERROR(extra.add(ctx, "model.norm.weight", Tensor::ones(ctx, {"d0"}, {65})), ShapeMismatch);
  REQUIRE_FUCINA_ERROR(extra.add(ctx, "model.norm.weight", Tensor::fromInts(ctx, {"d0"}, {64}, std::vector<int64_t>(64, 1))),
                       InvalidArgument);
  ModelOptions q8;
  q8.dtype = DType::q8_0;
  REQUIRE_FUCINA_ERROR(Llama::load(ctx, f.model, withKey(f.config, "intermediate_size", "80"), q8), InvalidArgument);
  ModelOptions bad;
  bad.trainable = true;
  bad.dtype = DType::f16;
  REQUIRE_FUCINA_ERROR(Llama::load(ctx, f.model, f.config, bad), InvalidArgument);

  Llama m = loadFixture(ctx, "llama");
  REQUIRE_FUCINA_ERROR(m.logits(ctx, Tensor::fromInts(ctx, {"batch", "t"}, {1, 65}, std::vector<int64_t>(65, 1), DType::i32)),
                       InvalidArgument);
  REQUIRE_FUCINA_ERROR(m.logits(ctx, Tensor::zeros(ctx, {"batch", "t"}, {1, 3})), DTypeMismatch);
  REQUIRE_FUCINA_ERROR(m.logits(ctx, Tensor::fromInts(ctx, {"kv", "t"}, {1, 3}, {1, 2, 3}, DType::i32)), ShapeMismatch);
  REQUIRE_FUCINA_ERROR(m.loss(ctx, Tensor::fromInts(ctx, {"batch", "t"}, {1, 1}, {1}, DType::i32)), InvalidArgument);
  REQUIRE_FUCINA_ERROR(fucina::nn::exportPeft(ctx, m), InvalidArgument);  // no adapters yet
  LoraOptions lo;
  lo.targets = {"c_attn"};
  REQUIRE_FUCINA_ERROR(fucina::nn::lora(ctx, m, lo), InvalidArgument);  // GPT-2's name matches nothing here
  CHECK(m.parameters().empty());

  const std::vector<uint8_t> adapter = test::readFixtureBytes("llama", "adapter_model.safetensors");
  const std::string good = test::readFixtureText("llama", "adapter_config.json");
  for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
           {"peft_type", "\"PREFIX_TUNING\""}, {"use_dora", "true"}, {"use_rslora", "true"}, {"bias", "\"all\""},
           {"rank_pattern", "{\"q_proj\":8}"}, {"layers_to_transform", "[0]"}, {"r", ""}, {"target_modules", ""},
           {"target_modules", "[\"nothing\"]"}, {"target_modules", "\"(\""}}) {
    INFO(key << " = " << value);
    REQUIRE_FUCINA_ERROR(fucina::nn::loadPeft(ctx, m, adapter, withKey(good, key, value)), InvalidArgument);
    CHECK(!m.loraOptions());  // a refused file leaves the model as it was
  }
  REQUIRE_FUCINA_ERROR(fucina::nn::loadPeft(ctx, m, adapter, withKey(good, "r", "8")), ShapeMismatch);  // not the file's r
  CHECK(!m.loraOptions());
  fucina::nn::loadPeft(ctx, m, adapter, good);
  CHECK(m.loraOptions()->rank == 4);
}
