// nn::Gpt2 and LoRA against the PyTorch reference in tests/fixtures/gpt2 (written by
// tests/fixtures/gpt2_fixture.py): logits and loss per base dtype, full fine-tuning gradients,
// peft adapters with their gradients; then checkpointing, files, merging, generation and errors.
#include "hf_fixture.h"

#include <map>

using fucina::DType;
using fucina::ExecContext;
using fucina::Tensor;
using fucina::nn::Gpt2;
using fucina::nn::Gpt2Options;
using fucina::nn::LoraOptions;
using test::adapterOf;
using test::overwrite;
using test::requireClose;
namespace json = fucina::io::json;

namespace {

struct Fixture : test::HfFixture {
  std::vector<uint8_t> adapters = test::readFixtureBytes("gpt2", "adapters.safetensors");
  Fixture() : test::HfFixture{"gpt2"} {}
};

const Fixture& fixture() {
  static const Fixture f;
  return f;
}

Gpt2 loadFixture(ExecContext& ctx, Gpt2Options o = {}) {
  return Gpt2::load(ctx, fixture().model, fixture().config, o);
}

}  // namespace

TEST_CASE("Gpt2 loads a Hugging Face checkpoint and matches PyTorch's logits and loss", "[gpt2]") {
  ExecContext ctx;
  const Fixture& f = fixture();
  for (const char* dtype : {"f32", "f16", "bf16", "q8_0"}) {
    DYNAMIC_SECTION(dtype) {
      Gpt2Options o;
      for (DType d : {DType::f32, DType::f16, DType::bf16, DType::q8_0})
        if (fucina::name(d) == dtype) o.dtype = d;
      const Gpt2 m = loadFixture(ctx, o);
      CHECK(m.config().d_model == 64);
      CHECK(m.config().vocab == 96);
      const Tensor tokens = f.tokens(ctx);
      const Tensor logits = m.logits(ctx, tokens);
      CHECK(logits.tags() == fucina::Tags{"batch", "t", "vocab"});
      // Each dtype against PyTorch on the same rounded weights, within f32 tolerance...
      requireClose(logits.toVector(), f.numbers({"logits", dtype}), 1e-4, 1e-4);
      CHECK(m.loss(ctx, tokens).item() == Approx(f.at({"loss", dtype}).real).epsilon(1e-5));
      // ...and its documented distance from the f32 logits (README, "Fine-tune in the browser").
      if (o.dtype != DType::f32) {
        const double vs_f32 = requireClose(logits.toVector(), f.numbers({"logits", "f32"}), 0.25, 0);
        CHECK(vs_f32 <= f.at({"max_abs_vs_f32", dtype}).real + 1e-3);
      }
    }
  }
}

TEST_CASE("Gpt2 trainable: full fine-tuning gradients match PyTorch's", "[gpt2]") {
  ExecContext ctx;
  const Fixture& f = fixture();
  Gpt2Options o;
  o.trainable = true;
  const Gpt2 m = loadFixture(ctx, o);
  CHECK(m.parameters().size() == 2 + 12 * 2 + 2);
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

TEST_CASE("Gpt2 with peft adapters matches PyTorch's LoRA logits, loss and adapter gradients", "[gpt2][lora]") {
  ExecContext ctx;
  const Fixture& f = fixture();
  for (bool checkpoint : {false, true}) {
    DYNAMIC_SECTION("checkpoint_blocks " << checkpoint) {
      Gpt2Options o;
      o.checkpoint_blocks = checkpoint;
      Gpt2 m = loadFixture(ctx, o);
      m.loadAdapters(ctx, f.adapters, f.lora());  // a peft file: no fucina.lora note, options given
      CHECK(m.parameters().size() == 2 * 6);      // c_attn and both c_proj of 2 blocks
      const Tensor tokens = f.tokens(ctx);
      requireClose(m.logits(ctx, tokens).toVector(), f.numbers({"lora", "logits"}), 1e-4, 1e-4);
      const Tensor loss = m.loss(ctx, tokens);
      CHECK(loss.item() == Approx(f.at({"lora", "loss"}).real).epsilon(1e-5));
      loss.backward(ctx);
      for (const char* layer : {"h.0.attn.c_attn", "h.1.mlp.c_proj"})
        for (bool b : {false, true}) {
          INFO(layer << (b ? " B" : " A"));
          requireClose(adapterOf(m, layer, b).grad(ctx)->toVector(),
                       f.numbers({"lora", "grads", std::string(layer) + (b ? ".lora_B" : ".lora_A")}), 2e-5, 1e-3);
        }
    }
  }
}

TEST_CASE("Gpt2 checkpointing gives bitwise-equal adapter gradients, LoRA dropout included", "[gpt2][lora]") {
  ExecContext ctx;
  const Fixture& f = fixture();
  std::vector<std::vector<float>> grads[2];
  for (bool checkpoint : {false, true}) {
    Gpt2Options o;
    o.checkpoint_blocks = checkpoint;
    o.dtype = DType::f16;
    Gpt2 m = loadFixture(ctx, o);
    LoraOptions lo;
    lo.rank = 4;
    lo.alpha = 16;
    lo.dropout = 0.5;
    lo.targets = {"c_attn", "c_fc"};
    lo.seed = 7;
    const std::vector<Tensor> adapters = fucina::nn::lora(ctx, m, lo);
    for (size_t i = 1; i < adapters.size(); i += 2)  // B non-zero, so that A's gradient is not zero
      overwrite(adapters[i], Tensor::normal(ctx, adapters[i].tags(), adapters[i].shape(), 0, 0.1, 100 + i));
    m.loss(ctx, f.tokens(ctx)).backward(ctx);
    for (const Tensor& a : adapters) grads[checkpoint].push_back(a.grad(ctx)->toVector());
  }
  REQUIRE(grads[0].size() == 8);
  for (size_t i = 0; i < grads[0].size(); ++i) CHECK(grads[0][i] == grads[1][i]);
}

TEST_CASE("LoRA: a fresh adapter leaves the output unchanged, merge folds a trained one in", "[gpt2][lora]") {
  ExecContext ctx;
  const Fixture& f = fixture();
  Gpt2 m = loadFixture(ctx);
  const Tensor tokens = f.tokens(ctx);
  const std::vector<float> base = m.logits(ctx, tokens).toVector();
  LoraOptions lo;
  lo.targets = {"c_attn", "c_proj", "c_fc"};
  const std::vector<Tensor> adapters = fucina::nn::lora(ctx, m, lo);
  CHECK(adapters.size() == 2 * 8);
  CHECK(m.logits(ctx, tokens).toVector() == base);  // B starts at zero
  // Train a few steps: the loss falls and the frozen base does not move.
  fucina::optim::Adam opt(adapters, {.lr = 1e-2});
  float first = 0, last = 0;
  for (int step = 0; step < 20; ++step) {
    fucina::ExecScope scope(ctx);
    opt.zeroGrad();
    const Tensor loss = m.loss(ctx, tokens);
    loss.backward(ctx);
    opt.step(ctx);
    (step == 0 ? first : last) = loss.item();
  }
  CHECK(last < 0.8f * first);
  const std::vector<float> adapted = m.logits(ctx, tokens).toVector();
  // Adapters alone, to a fresh base: the same logits, bit for bit.
  const std::vector<uint8_t> file = m.saveAdapters(ctx);
  Gpt2 other = loadFixture(ctx);
  other.loadAdapters(ctx, file);
  CHECK(other.parameters().size() == adapters.size());
  CHECK(other.logits(ctx, tokens).toVector() == adapted);
  // Merged: f32 weights, no adapters, the same logits within f32 rounding.
  m.mergeAdapters(ctx);
  CHECK(m.parameters().empty());
  std::vector<double> want(adapted.begin(), adapted.end());
  requireClose(m.logits(ctx, tokens).toVector(), want, 1e-4, 1e-4);
  // The merged base saves as a plain GPT-2 checkpoint that loads back to the same logits.
  const Gpt2 reloaded = Gpt2::load(ctx, m.save(ctx), m.config().toJson());
  CHECK(reloaded.logits(ctx, tokens).toVector() == m.logits(ctx, tokens).toVector());
}

TEST_CASE("Gpt2 bases by dtype: what the memory holds", "[gpt2]") {
  const int64_t d = 64, inner = 256, vocab = 96, layers = 2;
  const int64_t large = vocab * d + layers * (d * 3 * d + d * d + d * inner + inner * d);
  const int64_t small = 32 * d + layers * (3 * d + d + inner + d + 4 * d) + 2 * d;  // wpe, biases, LayerNorms
  for (DType dtype : {DType::f32, DType::f16, DType::q8_0}) {
    ExecContext ctx;
    Gpt2Options o;
    o.dtype = dtype;
    {
      const Gpt2 m = loadFixture(ctx, o);
      const auto bytes = ctx.memory().bytes_by_dtype;
      const auto of = [&](DType t) { return bytes[static_cast<size_t>(t)]; };
      if (dtype == DType::f32) CHECK(of(DType::f32) == static_cast<size_t>(4 * (large + small)));
      if (dtype == DType::f16) CHECK(of(DType::f16) == static_cast<size_t>(2 * large));
      if (dtype == DType::q8_0) CHECK(of(DType::q8_0) == static_cast<size_t>(large / 32 * 34));
      if (dtype != DType::f32) CHECK(of(DType::f32) == static_cast<size_t>(4 * small));
    }
    CHECK(ctx.memory().live_tensors == 0);
  }
}

TEST_CASE("Gpt2 from a seed: Hugging Face's init, saved and loaded back", "[gpt2]") {
  ExecContext ctx;
  fucina::nn::Gpt2Config c;
  c.vocab = 50, c.positions = 16, c.d_model = 32, c.heads = 2, c.layers = 1, c.inner = 64;
  Gpt2Options o;
  o.trainable = true;
  const Gpt2 m(ctx, c, 5, o);
  const Gpt2 same(ctx, c, 5, o);
  const Tensor tokens = Tensor::fromInts(ctx, {"batch", "t"}, {1, 6}, {3, 1, 4, 1, 5, 9}, DType::i32);
  CHECK(m.logits(ctx, tokens).toVector() == same.logits(ctx, tokens).toVector());
  for (const auto& [n, t] : m.namedTensors()) {
    INFO(n);
    CHECK(t.requiresGrad());
    const std::vector<float> v = t.toVector();
    if (n.ends_with("ln_1.weight") || n == "ln_f.weight") CHECK(v == std::vector<float>(v.size(), 1.0f));
    if (n.ends_with(".bias")) CHECK(v == std::vector<float>(v.size(), 0.0f));
  }
  const Gpt2 back = Gpt2::load(ctx, m.save(ctx), c.toJson());
  CHECK(back.logits(ctx, tokens).toVector() == m.logits(ctx, tokens).toVector());
  CHECK(fucina::nn::Gpt2Config::fromJson(c.toJson()).inner == 64);
}

TEST_CASE("Gpt2 generate: seeded, greedy at temperature 0, stops when asked", "[gpt2]") {
  ExecContext ctx;
  const Gpt2 m = loadFixture(ctx);
  const std::vector<int32_t> prompt = {5, 17, 3};
  fucina::nn::GenerateOptions o;
  o.max_tokens = 6;
  o.seed = 11;
  const auto a = m.generate(ctx, prompt, o), b = m.generate(ctx, prompt, o);
  CHECK(a == b);
  CHECK(a.size() == 6);
  for (int32_t t : a) CHECK((t >= 0 && t < 96));
  o.temperature = 0;
  const auto greedy = m.generate(ctx, prompt, o);
  // Greedy picks the argmax of the last position's logits at every step.
  std::vector<int64_t> ctx_ids(prompt.begin(), prompt.end());
  for (int32_t next : greedy) {
    const Tensor tokens = Tensor::fromInts(ctx, {"batch", "t"}, {1, static_cast<int64_t>(ctx_ids.size())}, ctx_ids, DType::i32);
    const std::vector<float> last = m.logits(ctx, tokens).select(ctx, "t", static_cast<int64_t>(ctx_ids.size()) - 1).toVector();
    CHECK(next == std::max_element(last.begin(), last.end()) - last.begin());
    ctx_ids.push_back(next);
  }
  o.temperature = 1.0;
  o.top_k = 1;
  CHECK(m.generate(ctx, prompt, o) == greedy);
  int seen = 0;
  CHECK(m.generate(ctx, prompt, o, [&](int32_t) { return ++seen < 2; }).size() == 2);
  // Longer than the 32 positions: the context slides.
  o.max_tokens = 40;
  CHECK(m.generate(ctx, prompt, o).size() == 40);
  CHECK(ctx.memory().live_tensors > 0);
}

TEST_CASE("Gpt2 and LoRA refuse bad input with the reference's errors", "[gpt2][lora][errors]") {
  ExecContext ctx;
  const Fixture& f = fixture();
  const std::string cfg = f.config;
  REQUIRE_FUCINA_ERROR(Gpt2::load(ctx, f.model, "{\"n_layer\": 2}"), InvalidArgument);
  REQUIRE_FUCINA_ERROR(Gpt2::load(ctx, f.model, "not json"), InvalidArgument);
  std::string wrong = cfg;
  wrong.replace(wrong.find("\"n_layer\": 2"), 12, "\"n_layer\": 3");
  REQUIRE_FUCINA_ERROR(Gpt2::load(ctx, f.model, wrong), InvalidArgument);  // no h.2.*
  wrong = cfg;
  wrong.replace(wrong.find("\"vocab_size\": 96"), 16, "\"vocab_size\": 97");
  REQUIRE_FUCINA_ERROR(Gpt2::load(ctx, f.model, wrong), ShapeMismatch);
  wrong = cfg;
  wrong.replace(wrong.find("\"n_layer\": 2"), 12, "\"n_layer\": 1");
  REQUIRE_FUCINA_ERROR(Gpt2::load(ctx, f.model, wrong), InvalidArgument);  // h.1.* unknown
  wrong = cfg;
  wrong.replace(wrong.find("gelu_new"), 8, "swish123");
  REQUIRE_FUCINA_ERROR(Gpt2::load(ctx, f.model, wrong), InvalidArgument);
  REQUIRE_FUCINA_ERROR(Gpt2::load(ctx, std::vector<uint8_t>{1, 2, 3}, cfg), InvalidArgument);
  Gpt2Options o;
  o.trainable = true;
  o.dtype = DType::f16;
  REQUIRE_FUCINA_ERROR(Gpt2::load(ctx, f.model, cfg, o), InvalidArgument);
  fucina::nn::Gpt2Config odd;
  odd.vocab = 10, odd.positions = 8, odd.d_model = 48, odd.heads = 2, odd.layers = 1, odd.inner = 96;
  o = {};
  o.dtype = DType::q8_0;
  REQUIRE_FUCINA_ERROR(Gpt2(ctx, odd, 1, o), InvalidArgument);  // 48 is not a multiple of 32
  odd.heads = 5;
  REQUIRE_FUCINA_ERROR(Gpt2(ctx, odd, 1), InvalidArgument);

  Gpt2 m = loadFixture(ctx);
  const Tensor floats = Tensor::zeros(ctx, {"batch", "t"}, {1, 4});
  REQUIRE_FUCINA_ERROR(m.logits(ctx, floats), DTypeMismatch);
  const Tensor no_t = Tensor::fromInts(ctx, {"batch", "time"}, {1, 2}, {1, 2}, DType::i32);
  REQUIRE_FUCINA_ERROR(m.logits(ctx, no_t), ShapeMismatch);
  const Tensor too_long = Tensor::zeros(ctx, {"batch", "t"}, {1, 33}, DType::i32);
  REQUIRE_FUCINA_ERROR(m.logits(ctx, too_long), InvalidArgument);
  const Tensor out_of_vocab = Tensor::fromInts(ctx, {"batch", "t"}, {1, 2}, {1, 96}, DType::i32);
  REQUIRE_FUCINA_ERROR(m.logits(ctx, out_of_vocab), IndexOutOfRange);
  REQUIRE_FUCINA_ERROR(m.loss(ctx, Tensor::zeros(ctx, {"batch", "t"}, {1, 1}, DType::i32)), InvalidArgument);
  REQUIRE_FUCINA_ERROR(m.generate(ctx, std::vector<int32_t>{}, {}), InvalidArgument);
  REQUIRE_FUCINA_ERROR(m.generate(ctx, std::vector<int32_t>{200}, {}), IndexOutOfRange);
  fucina::nn::GenerateOptions g;
  g.temperature = -1;
  REQUIRE_FUCINA_ERROR(m.generate(ctx, std::vector<int32_t>{1}, g), InvalidArgument);

  REQUIRE_FUCINA_ERROR(m.saveAdapters(ctx), InvalidArgument);
  LoraOptions lo;
  lo.targets = {"c_nothing"};
  REQUIRE_FUCINA_ERROR(fucina::nn::lora(ctx, m, lo), InvalidArgument);
  lo.targets = {"c_attn"};
  lo.rank = 0;
  REQUIRE_FUCINA_ERROR(fucina::nn::lora(ctx, m, lo), InvalidArgument);
  lo.rank = 4;
  lo.dropout = 1;
  REQUIRE_FUCINA_ERROR(fucina::nn::lora(ctx, m, lo), InvalidArgument);
  CHECK(m.parameters().empty());  // the refused calls changed nothing
  REQUIRE_FUCINA_ERROR(m.loadAdapters(ctx, f.adapters), InvalidArgument);  // a peft file without options
  CHECK(m.parameters().empty());
  LoraOptions only_attn = f.lora();
  only_attn.targets = {"c_attn"};
  REQUIRE_FUCINA_ERROR(m.loadAdapters(ctx, f.adapters, only_attn), InvalidArgument);  // c_proj's left over
  CHECK(m.parameters().empty());
  LoraOptions other_rank = f.lora();
  other_rank.rank = 2;
  REQUIRE_FUCINA_ERROR(m.loadAdapters(ctx, f.adapters, other_rank), ShapeMismatch);
  CHECK(m.parameters().empty());
  lo.dropout = 0;
  fucina::nn::lora(ctx, m, lo);
  REQUIRE_FUCINA_ERROR(fucina::nn::lora(ctx, m, lo), InvalidArgument);  // already adapted
  const std::vector<uint8_t> own = m.saveAdapters(ctx);
  LoraOptions other = lo;
  other.rank = 3;
  other.targets = {"c_fc"};
  REQUIRE_FUCINA_ERROR(m.loadAdapters(ctx, own, other), InvalidArgument);  // options the adapters do not have
  m.loadAdapters(ctx, own, lo);
}

TEST_CASE("Gpt2 trainable with LoRA: merged weights stay trainable", "[gpt2][lora]") {
  ExecContext ctx;
  Gpt2Options o;
  o.trainable = true;
  Gpt2 m = loadFixture(ctx, o);
  fucina::nn::lora(ctx, m, fixture().lora());
  CHECK(m.parameters().size() == 2 + 12 * 2 + 2 + 2 * 6);
  m.mergeAdapters(ctx);
  const std::vector<Tensor> params = m.parameters();
  CHECK(params.size() == 2 + 12 * 2 + 2);
  for (const Tensor& p : params) CHECK(p.requiresGrad());
  fucina::optim::Adam opt(params, {.lr = 1e-3});
  m.loss(ctx, fixture().tokens(ctx)).backward(ctx);
  opt.step(ctx);
}

TEST_CASE("LoraLinear on its own: axes, merge in the weight's layout, bad weights", "[lora]") {
  ExecContext ctx;
  const Tensor w = Tensor::uniform(ctx, {"out", "in"}, {5, 64}, -1, 1, 3).quantize(ctx, DType::q8_0, "in");
  fucina::nn::LoraLinear layer(w, Tensor::zeros(ctx, {"out"}, {5}), "in", "out");
  const Tensor x = Tensor::uniform(ctx, {"batch", "in"}, {3, 64}, -1, 1, 4);
  CHECK(layer(ctx, x).toVector() == x.dot(ctx, w, "in").toVector());
  layer.adapt(ctx, 2, 4, 0, 9);
  CHECK(layer.a.tags() == fucina::Tags{"rank", "in"});
  CHECK(layer.b.tags() == fucina::Tags{"out", "rank"});
  CHECK(layer.scale == 2);
  overwrite(layer.b, Tensor::uniform(ctx, {"out", "rank"}, {5, 2}, -1, 1, 5));
  const Tensor merged = layer.merge(ctx);
  CHECK(merged.dtype() == DType::f32);
  CHECK(merged.tags() == w.tags());
  CHECK_FALSE(merged.requiresGrad());
  std::vector<float> via_merge = x.dot(ctx, merged, "in").toVector();
  std::vector<double> want(via_merge.begin(), via_merge.end());
  requireClose(layer(ctx, x).toVector(), want, 1e-4, 1e-4);
  REQUIRE_FUCINA_ERROR(fucina::nn::LoraLinear(Tensor::zeros(ctx, {"a", "b"}, {2, 2}), Tensor(), "in", "out"), ShapeMismatch);
  REQUIRE_FUCINA_ERROR(fucina::nn::LoraLinear(w, Tensor::zeros(ctx, {"out"}, {4}), "in", "out"), ShapeMismatch);
  REQUIRE_FUCINA_ERROR(layer.adapt(ctx, 2, std::nan(""), 0, 1), InvalidArgument);
}

TEST_CASE("indexSelect reads the rows of a frozen 16-bit or q8_0 table as stored", "[gather][typed]") {
  ExecContext ctx;
  const Tensor table = Tensor::uniform(ctx, {"vocab", "e"}, {7, 64}, -2, 2, 1);
  const Tensor ids = Tensor::fromInts(ctx, {"batch", "t"}, {2, 3}, {6, 0, 3, 3, 1, 6}, DType::i32);
  const Tensor none = Tensor::fromInts(ctx, {"t"}, {0}, std::vector<int64_t>{}, DType::i32);
  for (DType d : {DType::f16, DType::bf16}) {
    const Tensor typed = table.to(ctx, d);
    const Tensor rows = typed.indexSelect(ctx, "vocab", ids);
    CHECK(rows.dtype() == d);
    CHECK(rows.tags() == fucina::Tags{"batch", "t", "e"});
    CHECK(rows.toVector() == typed.to(ctx, DType::f32).indexSelect(ctx, "vocab", ids).toVector());
    // A transposed view selects the same rows.
    const Tensor view = typed.permuteTo(ctx, {"e", "vocab"});
    CHECK(view.indexSelect(ctx, "vocab", ids).permuteTo(ctx, {"batch", "t", "e"}).toVector() == rows.toVector());
    CHECK(typed.indexSelect(ctx, "vocab", none).numel() == 0);
  }
  const Tensor q = table.quantize(ctx, DType::q8_0, "e");
  const Tensor rows = q.indexSelect(ctx, "vocab", ids);
  CHECK(rows.dtype() == DType::q8_0);
  CHECK(rows.tags() == fucina::Tags{"batch", "t", "e"});
  CHECK(rows.to(ctx, DType::f32).toVector() == q.to(ctx, DType::f32).indexSelect(ctx, "vocab", ids).toVector());
  // The block axis first in tag order, and a narrowed view: the same rows.
  const Tensor eq = q.permuteTo(ctx, {"e", "vocab"});
  CHECK(eq.indexSelect(ctx, "vocab", ids).to(ctx, DType::f32).permuteTo(ctx, {"batch", "t", "e"}).toVector() ==
        rows.to(ctx, DType::f32).toVector());
  const Tensor part = q.narrow(ctx, "vocab", 2, 5);
  const Tensor some = Tensor::fromInts(ctx, {"t"}, {2}, {4, 1}, DType::i32);
  CHECK(part.indexSelect(ctx, "vocab", some).to(ctx, DType::f32).toVector() ==
        q.to(ctx, DType::f32).narrow(ctx, "vocab", 2, 5).indexSelect(ctx, "vocab", some).toVector());
  CHECK(q.indexSelect(ctx, "vocab", none).numel() == 0);
  REQUIRE_FUCINA_ERROR(q.indexSelect(ctx, "e", some), InvalidArgument);  // the block axis
  REQUIRE_FUCINA_ERROR(q.indexSelect(ctx, "vocab", Tensor::fromInts(ctx, {"t"}, {1}, {7}, DType::i32)), IndexOutOfRange);
  // A 16-bit leaf still follows the dtype rule: its rows would need a gradient.
  const Tensor leaf = Tensor::variable(ctx, table.to(ctx, DType::f16));
  REQUIRE_FUCINA_ERROR(leaf.indexSelect(ctx, "vocab", ids), UnsupportedGradient);
}

TEST_CASE("io::json reads config.json's grammar and bounds hostile input", "[json]") {
  const json::Value v = json::parse(R"({"a": -1.5e-3, "b": [true, false, null], "c": 42, "d": "x\u00e9", "e": {}})", "test");
  CHECK(v.find("a")->kind == json::Value::kReal);
  CHECK(v.find("a")->real == -1.5e-3);
  CHECK(v.find("b")->items[0].boolean);
  CHECK(v.find("b")->items[2].kind == json::Value::kNull);
  CHECK(v.find("c")->kind == json::Value::kCount);
  CHECK(v.find("c")->count == 42);
  CHECK(v.find("d")->text == "x\xc3\xa9");
  CHECK(v.find("zz") == nullptr);
  for (const char* bad : {"", "{", "[1,]", "tru", "1.", "-", "1e", "{\"a\" 1}", "\"abc", "[1] x", "99999999999999999999"})
    CHECK_THROWS_MATCHES(json::parse(bad, "test"), fucina::Error, ::test::HasCode(fucina::ErrorCode::InvalidArgument));
  CHECK_FUCINA_ERROR(json::parse(std::string(100, '[') + std::string(100, ']'), "test"), InvalidArgument);
  CHECK(json::parse(std::string(60, '[') + std::string(60, ']'), "test").kind == json::Value::kArray);
}
