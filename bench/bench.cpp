// fucina_bench: times ONE configuration of ../shared/BENCHMARKS.md's workloads natively, with its
// protocol, and prints a table line or (--json) one JSON object. bench/run.mjs runs every
// configuration in a fresh process; this program never loops over configurations itself.
//
//   fucina_bench --workload w1|w2|w2-nhwc|w3|w3-ckpt|w3-frozen-f32|w3-frozen-f16|w3-frozen-q8|w4-1024|
//                           w4-fc|w5-f32|w5-f16|w5-q8|w5-f32-ckpt|w5-f16-ckpt|w5-q8-ckpt|w6-b1|w6-b64|
//                           w6-b1-nhwc|w6-b64-nhwc|w7|w8-q8-ckpt|w8-qwen05-q8-ckpt|w3-d<D>-l<L>
//                --threads N [--json] [--quick] [--gemm-layout kn|nk] [--rhs-dtype f32|f16|bf16|q8_0]
//                [--steps N]
//   fucina_bench --peak [--json]
//   fucina_bench --coherence [--json]
//
// w5-<dtype>[-ckpt]: LoRA fine-tuning of a GPT-2-small-shaped model (12 layers, d 768, 12 heads,
// vocab 50257; random weights) on batch 4 × T 128, rank 8 (alpha 16) on c_attn, c_proj and c_fc
// of every block, AdamW on the adapters, the frozen base stored as f32, f16 or q8_0, blocks
// checkpointed with -ckpt. Its steps take seconds, so its protocol is 2 warm-up and 5 timed steps.
//
// w8-q8-ckpt, w8-qwen05-q8-ckpt: the same LoRA fine-tuning (rank 8, alpha 16, AdamW on the
// adapters, batch 4 × T 128, 2 + 5 steps) of Llama-family models (nn::Llama, random weights): a
// SmolLM2-135M-shaped one (30 layers, d 576, 9 heads, 3 kv heads, MLP 1536, vocab 49152, tied),
// and a Qwen2.5-0.5B-shaped one (qwen2: q/k/v biases; 24 layers, d 896, 14 heads, 2 kv heads, MLP
// 4864, vocab 151936, tied), adapters on all seven projections (q/k/v/o_proj, gate/up/down_proj:
// every linear layer of a block, as W5's c_attn/c_proj/c_fc are GPT-2's), the base q8_0 and the
// blocks checkpointed. The grammar is W5's (w8[-qwen05]-f32|f16|q8[-ckpt]); the README lists the two.
//
// w3-frozen-<dtype>: W3 with the blocks' projections frozen (Gpt::freezeProjections) as f32, f16
// or q8_0 constants, training the embeddings and LayerNorms (forward + backward through the
// frozen weights). --rhs-dtype: W4's b stored as that dtype (q8_0 needs --gemm-layout nk).
//
// w2-nhwc, w6-*-nhwc: the same CNN channels last (CnnConfig::channels_last, images {batch, h, w,
// c}): every convolution and pool computes in that layout (Note [Channels last]).
//
// w6-b<batch>: inference of W2's CNN on a batch of 1 or 64 images, both convolutions prepared
// once (prepareConv2dWeights, conv2dPreparedRelu) and both Linears packed once (packRhs,
// dotPacked) before timing; a step is one forward under noGrad to the logits on the host.
// Reports images_per_s. w7: greedy generation of 128 tokens after a 64-token prompt by W3's
// tiny GPT (Gpt::generate, KV cache; past the 128-token context each token reruns the last 128,
// Note [KV cache]); a step is the whole generate call. Reports tokens_per_s.
//
// w3-d<D>-l<L> (bench/scale.mjs): W3 at d_model D (a multiple of 32: head dim 32, MLP 4·D) with L
// blocks, timed by the 2 + 5 protocol of long steps.
//
// --steps N times N steps instead of the protocol's 50 (e.g. to run long enough under `perf record`).
// --peak measures the AVX2 and AVX-512 FMA peaks the CPU has (bench/peak.h) and names the one of
// the ISA the GEMM dispatches to: bench/run.mjs quotes each workload's GFLOP/s against them.
// --coherence measures what one core's reads and writes cost after the other core touched the
// same lines (bench/coherence.h): what a second thread pays for the data it shares.
//
// A training step is: open a scope, zero the gradients, forward + loss, backward, optimizer
// update, read the loss to the host (loss.item()), close the scope. W4 times one Tensor::dot.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <optional>
#include <utility>
#include <stdexcept>
#include <string>
#include <vector>

#include <fucina/fucina.h>
#include "fucina/exec/trace.h"          // FUCINA_TRACE builds: each timed step marks the trace
#include "fucina/backend/cpu/gemm_simd.h"  // the ISA the GEMM dispatched to, for the record
#include "coherence.h"
#include "peak.h"

namespace {

using fucina::ExecContext;
using fucina::ExecScope;
using fucina::Tensor;
namespace nn = fucina::nn;
namespace optim = fucina::optim;

struct Args {
  std::string workload;
  int threads = 1;
  bool json = false;
  bool quick = false;        // a smoke test: 2 warm-up and 3 timed steps
  std::string layout = "kn";  // W4: b is {k, n} (contracted axis first) or {n, k} (a weight)
  std::string rhs_dtype = "f32";  // W4: b's dtype
  int steps = 0;              // > 0: time this many steps (profiling), not the protocol's count
  bool peak = false;          // measure the FMA peaks instead of a workload
  bool coherence = false;     // measure cross-core read and write costs instead of a workload
};

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr,
               "fucina_bench: %s\nusage: fucina_bench --workload w1|w2|w3|w3-ckpt|w3-frozen-f32|"
               "w3-frozen-f16|w3-frozen-q8|w4-1024|w4-fc|w5-f32|w5-f16|w5-q8|w5-*-ckpt|w6-b1|w6-b64|w2-nhwc|w6-b1-nhwc|"
               "w6-b64-nhwc|w7|w8-q8-ckpt|w8-qwen05-q8-ckpt|w3-d<D>-l<L> --threads N [--json] [--quick] [--gemm-layout kn|nk] "
               "[--rhs-dtype f32|f16|bf16|q8_0] [--steps N]\n       fucina_bench --peak [--json]\n"
               "       fucina_bench --coherence [--json]\n",
               why.c_str());
  std::exit(2);
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(s + " needs a value");
      return argv[++i];
    };
    if (s == "--workload") a.workload = value();
    else if (s == "--threads") a.threads = std::atoi(value().c_str());
    else if (s == "--json") a.json = true;
    else if (s == "--quick") a.quick = true;
    else if (s == "--peak") a.peak = true;
    else if (s == "--coherence") a.coherence = true;
    else if (s == "--gemm-layout") a.layout = value();
    else if (s == "--rhs-dtype") a.rhs_dtype = value();
    else if (s == "--steps") {
      a.steps = std::atoi(value().c_str());
      if (a.steps < 1) usage("--steps must be >= 1");
    }
    else usage("unknown argument " + s);
  }
  if (a.workload.empty() && !a.peak && !a.coherence) usage("--workload is required");
  if (a.threads < 1) usage("--threads must be >= 1");
  if (a.layout != "kn" && a.layout != "nk") usage("--gemm-layout is kn or nk");
  if (a.rhs_dtype != "f32" && a.rhs_dtype != "f16" && a.rhs_dtype != "bf16" && a.rhs_dtype != "q8_0")
    usage("--rhs-dtype is f32, f16, bf16 or q8_0");
  return a;
}

// Scale (bench/README.md): w3-d<D>-l<L> is W3's step at width D (head dim 32, MLP 4·D) with L
// blocks; {D, L}, or nothing for another workload.
std::optional<std::pair<int64_t, int64_t>> scaleShape(const std::string& w) {
  long long d = 0, layers = 0;
  int used = 0;
  if (std::sscanf(w.c_str(), "w3-d%lld-l%lld%n", &d, &layers, &used) != 2 || used != static_cast<int>(w.size()) ||
      d < 32 || d % 32 != 0 || layers < 1)
    return std::nullopt;
  return std::pair<int64_t, int64_t>{d, layers};
}

// W5 and W8 (bench/README.md): LoRA fine-tuning of a pretrained-shaped model, named
// w5-<dtype>[-ckpt] (GPT-2 small), w8-<dtype>[-ckpt] (SmolLM2-135M) or w8-qwen05-<dtype>[-ckpt]
// (Qwen2.5-0.5B), dtype f32, f16 or q8 (q8_0); nothing for another workload.
struct LoraWorkload {
  std::string model;  // "gpt2", "smollm2", "qwen05"
  std::string dtype;  // "f32", "f16", "q8"
  bool ckpt = false;
};

std::optional<LoraWorkload> loraWorkload(const std::string& w) {
  LoraWorkload l;
  std::string rest;
  if (w.rfind("w5-", 0) == 0) l.model = "gpt2", rest = w.substr(3);
  else if (w.rfind("w8-qwen05-", 0) == 0) l.model = "qwen05", rest = w.substr(10);
  else if (w.rfind("w8-", 0) == 0) l.model = "smollm2", rest = w.substr(3);
  else return std::nullopt;
  if (rest.ends_with("-ckpt")) l.ckpt = true, rest.resize(rest.size() - 5);
  if (rest != "f32" && rest != "f16" && rest != "q8") return std::nullopt;
  l.dtype = rest;
  return l;
}

// W8's models: the config.json fields of SmolLM2-135M and Qwen2.5-0.5B (their published
// config.json, less what nn::Llama does not read), the twins of bench/protocol.mjs's W8_MODELS.
constexpr const char* kSmolLm2Config =
    R"({"model_type": "llama", "vocab_size": 49152, "hidden_size": 576, "num_hidden_layers": 30,
        "num_attention_heads": 9, "num_key_value_heads": 3, "intermediate_size": 1536,
        "max_position_embeddings": 8192, "rms_norm_eps": 1e-5, "rope_theta": 100000, "tie_word_embeddings": true})";
constexpr const char* kQwen05Config =
    R"({"model_type": "qwen2", "vocab_size": 151936, "hidden_size": 896, "num_hidden_layers": 24,
        "num_attention_heads": 14, "num_key_value_heads": 2, "intermediate_size": 4864,
        "max_position_embeddings": 32768, "rms_norm_eps": 1e-6, "rope_theta": 1000000, "tie_word_embeddings": true})";

double loadAverage1m() {
  std::ifstream f("/proc/loadavg");
  double l = -1;
  f >> l;
  return l;
}

struct Timing {
  std::vector<double> ms;  // the timed steps, sorted
  int warmup = 0;
  bool reduced = false;
  double median() const {
    const size_t n = ms.size();
    return n % 2 ? ms[n / 2] : (ms[n / 2 - 1] + ms[n / 2]) / 2;
  }
};

double timeOne(const std::function<void()>& step) {
  FUCINA_TRACE_EVENT(fucina::trace::Kind::kStep);
  const auto t0 = std::chrono::steady_clock::now();
  step();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// BENCHMARKS.md: 10 warm-up steps then 50 timed one by one; 5 + 20 when the second warm-up step
// takes more than 400 ms. `afterWarmup` runs between the two phases (memory baselines).
Timing runProtocol(const std::function<void()>& step, const Args& a, const std::function<void()>& afterWarmup) {
  Timing t;
  int warmup = a.quick ? 2 : 10, steps = a.quick ? 3 : 50;
  timeOne(step);
  const double second = timeOne(step);
  if (!a.quick && second > 400.0) warmup = 5, steps = 20, t.reduced = true;
  if (!a.quick && (loraWorkload(a.workload) || scaleShape(a.workload)))  // seconds a step
    warmup = 2, steps = 5, t.reduced = true;
  if (a.steps > 0) steps = a.steps;
  for (int i = 2; i < warmup; ++i) step();
  t.warmup = warmup;
  afterWarmup();
  for (int i = 0; i < steps; ++i) t.ms.push_back(timeOne(step));
  std::sort(t.ms.begin(), t.ms.end());
  return t;
}

// A fixed pseudo-random pattern of n integers in [0, classes).
std::vector<int64_t> labelPattern(int64_t n, int64_t classes) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  uint64_t s = 0x9e3779b97f4a7c15u;
  for (auto& x : v) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;  // xorshift64
    x = static_cast<int64_t>(s % static_cast<uint64_t>(classes));
  }
  return v;
}

// One training step of `loss` under `opt`, as the protocol defines it.
std::function<void()> trainingStep(ExecContext& ctx, optim::Optimizer& opt, std::function<Tensor()> loss) {
  return [&ctx, &opt, loss = std::move(loss)] {
    ExecScope scope(ctx);
    opt.zeroGrad();
    const Tensor l = loss();
    l.backward(ctx);
    opt.step(ctx);
    volatile float sink = l.item();
    (void)sink;
  };
}

struct Result {
  Timing timing;
  double setup_ms = 0;  // from the start of run() to the first step (building the model, data, optimizer)
  double gflop = 0;  // per step
  fucina::MemoryStats before, after;  // around the timed steps (peak reset before them)
  std::optional<size_t> saved_bytes;  // training workloads
  std::string note;
  std::string rate;          // inference: "images_per_s" (W6) or "tokens_per_s" (W7) ...
  double items_per_step = 0;  // ... and how many a step makes
};

// When run() started: measure() reports the set-up time from it.
std::chrono::steady_clock::time_point g_setup_start;

Result measure(ExecContext& ctx, const std::function<void()>& step, const Args& a) {
  Result r;
  r.setup_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - g_setup_start).count();
  r.timing = runProtocol(step, a, [&] {
    ctx.resetPeak();
    r.before = ctx.memory();
  });
  r.after = ctx.memory();
  return r;
}

// measure() of a training step, plus the bytes one forward leaves alive for backward (what the
// graph saved: the figure torch's saved-tensor hooks give), from one more, untimed forward.
Result measureTraining(ExecContext& ctx, optim::Optimizer& opt, const std::function<Tensor()>& loss, const Args& a) {
  Result r = measure(ctx, trainingStep(ctx, opt, loss), a);
  ExecScope scope(ctx);
  opt.zeroGrad();
  const size_t before = ctx.memory().live_bytes;
  const Tensor l = loss();
  r.saved_bytes = ctx.memory().live_bytes - before;
  return r;
}

// W7's nominal work: one position per token (the prompt, then each new token but the last) through
// the blocks' projections and the tied head, 2 FLOPs a weight; attention and the reruns past the
// context are left out, so its GFLOP/s compares only as a time (protocol.mjs says the same).
double w7Gflop(const nn::GptConfig& c, int64_t prompt, int64_t fresh) {
  const double weights = c.layers * (c.d_model * 3.0 * c.d_model + c.d_model * c.d_model + 2.0 * c.d_model * c.mlp) +
                         static_cast<double>(c.vocab * c.d_model);
  return 2.0 * weights * static_cast<double>(prompt + fresh - 1) / 1e9;
}

// W5 and W8's step: LoRA rank 8, alpha 16 on `targets` of model (a pretrained-shaped nn::Gpt2 or
// nn::Llama), AdamW on the adapters, batch 4 sequences of 129 tokens (128 predicted).
constexpr int64_t kLoraBatch = 4, kLoraT = 128;

template <class Model>
Result measureLora(ExecContext& ctx, Model& model, std::vector<std::string> targets, int64_t vocab, const Args& a) {
  nn::LoraOptions lora;
  lora.rank = 8;
  lora.alpha = 16;
  lora.targets = std::move(targets);
  const std::vector<Tensor> adapters = nn::lora(ctx, model, lora);
  optim::AdamW opt(adapters, {.lr = 1e-4, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 0.01});
  const Tensor tokens = Tensor::fromInts(ctx, {"batch", "t"}, {kLoraBatch, kLoraT + 1},
                                         labelPattern(kLoraBatch * (kLoraT + 1), vocab), fucina::DType::i32);
  return measureTraining(ctx, opt, [&] { return model.loss(ctx, tokens); }, a);
}

// A LoRA step's GFLOP: the forward, 2·tokens·(block matrices + the head) + attention (QKᵀ and AV
// over attention_width = heads · head dim), and a backward of the same again for the input
// gradients (the frozen weights get none); the adapters' own work is left out.
double loraGflop(double block_matrices, double head, double layers, double attention_width) {
  const double tokens = kLoraBatch * kLoraT;
  const double attention = layers * kLoraBatch * 2 * (2.0 * kLoraT * kLoraT * attention_width);
  return 2 * (2 * tokens * (block_matrices + head) + attention) / 1e9;
}

Result run(const Args& a, ExecContext& ctx) {
  const std::string& w = a.workload;
  if (w == "w1") {
    constexpr int64_t kBatch = 128;
    const nn::Mlp model(ctx, nn::MlpConfig{}, 1);
    optim::Sgd opt(model.parameters(), {.lr = 0.01});
    const Tensor x = Tensor::normal(ctx, {"batch", "in"}, {kBatch, 784}, 0, 1, 2);
    const Tensor y = Tensor::fromInts(ctx, {"batch"}, {kBatch}, labelPattern(kBatch, 10));
    Result r = measureTraining(ctx, opt, [&] { return model(ctx, x).crossEntropy(ctx, y, "class"); }, a);
    r.gflop = 6.0 * kBatch * (784 * 512 + 512 * 256 + 256 * 10) / 1e9;
    return r;
  }
  if (w == "w2" || w == "w2-nhwc") {
    constexpr int64_t kBatch = 64;
    const bool nhwc = w == "w2-nhwc";
    const nn::Cnn model(ctx, nn::CnnConfig{.channels_last = nhwc}, 1);
    optim::Sgd opt(model.parameters(), {.lr = 0.01});
    const Tensor x = Tensor::normal(ctx, {"batch", "h", "w"}, {kBatch, 28, 28}, 0, 1, 2);
    const Tensor y = Tensor::fromInts(ctx, {"batch"}, {kBatch}, labelPattern(kBatch, 10));
    Result r = measureTraining(ctx, opt, [&] { return model(ctx, x).crossEntropy(ctx, y, "class"); }, a);
    r.gflop = 3.0 * kBatch * 2 * (26 * 26 * 32 * 9 + 11 * 11 * 64 * 288 + 1600 * 128 + 128 * 10) / 1e9;
    r.note = nhwc ? "NHWC (channels last)" : "NCHW";
    return r;
  }
  if (w == "w3" || w == "w3-ckpt" || w.rfind("w3-frozen-", 0) == 0 || scaleShape(w)) {
    constexpr int64_t kBatch = 16, kT = 128;
    nn::GptConfig config;
    config.checkpoint_blocks = w == "w3-ckpt";
    if (const auto scale = scaleShape(w)) {
      config.d_model = scale->first, config.layers = scale->second;
      config.heads = config.d_model / 32, config.mlp = 4 * config.d_model;
    }
    nn::Gpt model(ctx, config, 1);
    const std::string frozen = w.rfind("w3-frozen-", 0) == 0 ? w.substr(10) : "";
    if (!frozen.empty()) {
      if (frozen != "f32" && frozen != "f16" && frozen != "q8") usage("unknown workload " + w);
      model.freezeProjections(ctx, frozen == "f32" ? fucina::DType::f32 : frozen == "f16" ? fucina::DType::f16
                                                                                        : fucina::DType::q8_0);
    }
    optim::AdamW opt(model.parameters(), {.lr = 1e-3, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 0.01});
    // T + 1 = 129 tokens per sequence: Gpt::loss predicts the last 128 from the first 128, so a
    // step trains on 16 · 128 = 2,048 predicted tokens.
    const Tensor tokens = Tensor::fromInts(ctx, {"batch", "t"}, {kBatch, kT + 1}, labelPattern(kBatch * (kT + 1), 256));
    Result r = measureTraining(ctx, opt, [&] { return model.loss(ctx, tokens); }, a);
    // The FLOP count of the full W3 (frozen variants skip the projections' dW: their GFLOP/s is
    // then a rate on the same nominal work, comparable only as a time).
    int64_t params = 0;
    for (const Tensor& p : nn::Gpt(ctx, config, 1).parameters()) params += p.numel();
    const double tokens_per_step = kBatch * kT;
    const double attention = 3.0 * config.layers * kBatch * 2 * (2.0 * kT * kT * config.d_model);  // QKᵀ, AV
    r.gflop = (6.0 * tokens_per_step * static_cast<double>(params - kT * config.d_model) + attention) / 1e9;
    r.note = scaleShape(w) ? "d_model " + std::to_string(config.d_model) + ", " + std::to_string(config.layers) + " blocks, " +
                                 std::to_string(config.heads) + " heads, 129 tokens per sequence"
             : frozen.empty() ? "129 tokens per sequence, 128 predicted"
                            : "projections frozen as " + (frozen == "q8" ? std::string("q8_0") : frozen) +
                                  ", embeddings and LayerNorms trained";
    return r;
  }
  if (const auto lw = loraWorkload(w)) {
    nn::ModelOptions options;
    options.dtype = lw->dtype == "f32" ? fucina::DType::f32 : lw->dtype == "f16" ? fucina::DType::f16 : fucina::DType::q8_0;
    options.checkpoint_blocks = lw->ckpt;
    const std::string base = ", base " + (lw->dtype == "q8" ? std::string("q8_0") : lw->dtype) + (lw->ckpt ? ", checkpointed" : "");
    if (lw->model == "gpt2") {
      const nn::Gpt2Config config;  // GPT-2 small
      nn::Gpt2 model(ctx, config, 1, options);
      Result r = measureLora(ctx, model, {"c_attn", "c_proj", "c_fc"}, config.vocab, a);
      const double d = config.d_model;
      r.gflop = loraGflop(config.layers * (d * 3 * d + d * d + 2 * d * config.inner), d * config.vocab, config.layers, d);
      r.note = "GPT-2 small, LoRA r8 on c_attn/c_proj/c_fc" + base;
      return r;
    }
    const bool qwen = lw->model == "qwen05";
    const nn::LlamaConfig config = nn::LlamaConfig::fromJson(qwen ? kQwen05Config : kSmolLm2Config);
    nn::Llama model(ctx, config, 1, options);
    Result r = measureLora(ctx, model, {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"},
                           config.vocab, a);
    const double d = config.d_model, q = config.heads * config.head_dim, kv = config.kv_heads * config.head_dim;
    r.gflop = loraGflop(config.layers * (d * (q + 2 * kv) + q * d + 3 * d * config.inner), d * config.vocab, config.layers, q);
    r.note = std::string(qwen ? "Qwen2.5-0.5B" : "SmolLM2-135M") + " shape, LoRA r8 on q/k/v/o/gate/up/down_proj" + base;
    return r;
  }
  if (w == "w6-b1" || w == "w6-b64" || w == "w6-b1-nhwc" || w == "w6-b64-nhwc") {
    // W2's CNN (nn::Cnn) for inference through nn::PreparedCnn: both convolutions prepared and
    // both Linears packed once, here, so that a step only runs them.
    const int64_t batch = w == "w6-b1" || w == "w6-b1-nhwc" ? 1 : 64;
    const bool nhwc = w.ends_with("-nhwc");
    const nn::Cnn model(ctx, {.channels_last = nhwc}, 1);
    const nn::PreparedCnn prepared(ctx, model);
    const Tensor x = nhwc ? Tensor::normal(ctx, {"batch", "h", "w", "c"}, {batch, 28, 28, 1}, 0, 1, 2)
                          : Tensor::normal(ctx, {"batch", "c", "h", "w"}, {batch, 1, 28, 28}, 0, 1, 2);
    Result r = measure(ctx, [&] {
      ExecScope scope(ctx);
      const Tensor logits = prepared(ctx, x);
      volatile float sink = logits.dataConst()[0];
      (void)sink;
    }, a);
    r.gflop = batch * 2.0 * (26 * 26 * 32 * 9 + 11 * 11 * 64 * 288 + 1600 * 128 + 128 * 10) / 1e9;
    r.rate = "images_per_s", r.items_per_step = static_cast<double>(batch);
    r.note = std::string(nhwc ? "NHWC" : "NCHW") + ", convolutions prepared (" +
             (prepared.conv(1).winograd() ? "conv2 Winograd" : "im2col GEMM") + "), Linears packed";
    return r;
  }
  if (w == "w7") {
    constexpr int64_t kPrompt = 64, kNew = 128;
    const nn::Gpt model(ctx, nn::GptConfig{}, 1);
    const std::vector<int64_t> pattern = labelPattern(kPrompt, 256);
    const std::vector<int32_t> prompt(pattern.begin(), pattern.end());
    const nn::GenerateOptions options{.max_tokens = kNew, .temperature = 0.0};  // greedy: the same work everywhere
    Result r = measure(ctx, [&] {
      ExecScope scope(ctx);
      const std::vector<int32_t> out = model.generate(ctx, prompt, options);
      if (static_cast<int64_t>(out.size()) != kNew) throw std::runtime_error("generate stopped early");
    }, a);
    r.gflop = w7Gflop(model.config(), kPrompt, kNew);
    r.rate = "tokens_per_s", r.items_per_step = kNew;
    r.note = "64-token prompt, 128 new tokens, greedy, KV cache";
    return r;
  }
  if (w == "w4-1024" || w == "w4-fc") {
    const int64_t m = w == "w4-1024" ? 1024 : 128, k = w == "w4-1024" ? 1024 : 784, n = w == "w4-1024" ? 1024 : 512;
    const Tensor lhs = Tensor::normal(ctx, {"m", "k"}, {m, k}, 0, 1, 1);
    const Tensor f32 = a.layout == "kn" ? Tensor::normal(ctx, {"k", "n"}, {k, n}, 0, 1, 2)
                                        : Tensor::normal(ctx, {"n", "k"}, {n, k}, 0, 1, 2);
    const Tensor rhs = a.rhs_dtype == "f32"    ? f32
                       : a.rhs_dtype == "q8_0" ? f32.quantize(ctx, fucina::DType::q8_0, "k")
                                               : f32.to(ctx, a.rhs_dtype == "f16" ? fucina::DType::f16 : fucina::DType::bf16);
    Result r = measure(ctx, [&] {
      ExecScope scope(ctx);
      const Tensor c = lhs.dot(ctx, rhs, "k");
      volatile float sink = c.dataConst()[0];
      (void)sink;
    }, a);
    r.gflop = 2.0 * static_cast<double>(m * n * k) / 1e9;
    r.note = std::string(a.layout == "kn" ? "a{m,k}.dot(b{k,n}, k)" : "a{m,k}.dot(b{n,k}, k)") +
             (a.rhs_dtype == "f32" ? "" : ", b " + a.rhs_dtype);
    return r;
  }
  usage("unknown workload " + w);
}

}  // namespace

// One core's multiply-add ceilings, the best of 3 measurements each (a preempted one reads low).
int printPeaks(bool json) {
  const char* isa = fucina::kernels::detail::gemmTargetName();
  auto best = [](auto measure) {
    double b = 0;
    for (int r = 0; r < 3; ++r) b = std::max(b, measure());
    return b;
  };
  double avx2 = 0, avx512 = 0;
#ifdef __x86_64__
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    avx2 = best([] { return fucina_bench::avx2FmaPeakGflops(); });
  if (__builtin_cpu_supports("avx512f")) avx512 = best([] { return fucina_bench::avx512FmaPeakGflops(); });
#endif
  // Highway's target names: "AVX2", or "AVX3..." for AVX-512 ("AVX3_ZEN4", "AVX3_SPR"); any other
  // target has no ceiling to quote (0).
  const std::string target = isa;
  const double dispatched = target.rfind("AVX3", 0) == 0 ? avx512 : target == "AVX2" ? avx2 : 0;
  if (json)
    std::printf("{\"impl\":\"fucina-native\",\"isa\":\"%s\",\"peak_gflops\":%.2f,\"avx2_fma_gflops\":%.2f,"
                "\"avx512_fma_gflops\":%.2f,\"load_avg_1m\":%.2f}\n",
                isa, dispatched, avx2, avx512, loadAverage1m());
  else
    std::printf("one core, thread CPU time: %s (dispatched) %.1f GFLOP/s; AVX2 FMA %.1f; AVX-512 FMA %.1f\n", isa,
                dispatched, avx2, avx512);
  return 0;
}

int main(int argc, char** argv) {
  const Args a = parse(argc, argv);
  if (a.peak) return printPeaks(a.json);
  if (a.coherence) return fucina_bench::printCoherence(a.json);
  const double load = loadAverage1m();
  ExecContext ctx(fucina::ExecOptions{.threads = a.threads});
  Result r;
  try {
    g_setup_start = std::chrono::steady_clock::now();
    r = run(a, ctx);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fucina_bench %s: %s\n", a.workload.c_str(), e.what());
    if (a.json)
      std::printf("{\"workload\":\"%s\",\"impl\":\"fucina-native\",\"threads\":%d,\"error\":\"fails\"}\n",
                  a.workload.c_str(), a.threads);
    return 1;
  }
  const Timing& t = r.timing;
  const double median = t.median(), gflops = r.gflop / (median / 1e3);
  const size_t steps = t.ms.size();
  const double allocs = static_cast<double>(r.after.system_allocations - r.before.system_allocations) / static_cast<double>(steps);
  // peak_bytes: the most tensor storage alive during the timed steps (parameters, optimizer state
  // and data included); step_bytes: the part a step added on top of what lived before it.
  const size_t step_bytes = r.after.peak_bytes - r.before.live_bytes;
  const std::string saved = r.saved_bytes ? "\"saved_bytes\":" + std::to_string(*r.saved_bytes) + "," : "";
  // What stays alive between steps (parameters, frozen weights, gradients, optimizer state,
  // data), by dtype: the memory a frozen 16-bit or q8_0 base saves.
  std::string by_dtype = "\"live_bytes\":" + std::to_string(r.after.live_bytes) + ",\"live_bytes_by_dtype\":{";
  bool first = true;
  for (size_t d = 0; d < r.after.bytes_by_dtype.size(); ++d) {
    if (r.after.bytes_by_dtype[d] == 0) continue;
    by_dtype += (first ? "\"" : ",\"") + std::string(fucina::name(static_cast<fucina::DType>(d))) +
                "\":" + std::to_string(r.after.bytes_by_dtype[d]);
    first = false;
  }
  by_dtype += "},";
  char rate[64] = "";
  if (!r.rate.empty()) std::snprintf(rate, sizeof rate, "\"%s\":%.2f,", r.rate.c_str(), r.items_per_step / (median / 1e3));
  if (a.json) {
    std::printf("{\"workload\":\"%s\",\"impl\":\"fucina-native\",\"threads\":%d,\"median_ms\":%.4f,"
                "\"min_ms\":%.4f,\"max_ms\":%.4f,\"gflops_median\":%.3f,\"reduced_protocol\":%s,"
                "\"load_avg_1m\":%.2f,\"warmup\":%d,\"steps\":%zu,\"peak_bytes\":%zu,\"step_bytes\":%zu,"
                "\"allocs_per_step\":%.2f,\"setup_ms\":%.1f,%s%s%s\"isa\":\"%s\",\"note\":\"%s\"}\n",
                a.workload.c_str(), a.threads, median, t.ms.front(), t.ms.back(), gflops,
                t.reduced ? "true" : "false", load, t.warmup, steps, r.after.peak_bytes, step_bytes,
                allocs, r.setup_ms, saved.c_str(), by_dtype.c_str(), rate, fucina::kernels::detail::gemmTargetName(), r.note.c_str());
  } else {
    char saved_mib[48] = "";
    if (r.saved_bytes) std::snprintf(saved_mib, sizeof saved_mib, ", saved %.1f MiB", static_cast<double>(*r.saved_bytes) / 1048576.0);
    std::printf("%-8s fucina-native %d thr  median %9.3f ms  (min %.3f, max %.3f)  %7.2f GFLOP/s  "
                "peak %.1f MiB (step %.1f MiB%s, live %.1f MiB)  %.1f allocs/step  setup %.1f s  load %.2f  %s%s%s%s\n",
                a.workload.c_str(), a.threads, median, t.ms.front(), t.ms.back(), gflops,
                static_cast<double>(r.after.peak_bytes) / 1048576.0, static_cast<double>(step_bytes) / 1048576.0,
                saved_mib, static_cast<double>(r.after.live_bytes) / 1048576.0, allocs, r.setup_ms / 1e3, load, fucina::kernels::detail::gemmTargetName(), t.reduced ? "  [reduced protocol]" : "", r.note.empty() ? "" : "  ", r.note.c_str());
    if (!r.rate.empty()) std::printf("         %.1f %s\n", r.items_per_step / (median / 1e3), r.rate == "images_per_s" ? "images/s" : "tokens/s");
  }
  return 0;
}
