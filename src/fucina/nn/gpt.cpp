// W3's byte-level GPT (see models.h). Axes: batch, "t" time, "e" model width, "head"/"hd"
// attention heads, "qkv" the fused projection, "ao" the attention output before its
// projection, "mlp" the feed-forward width, "vocab" bytes.
#include <array>
#include <string>

#include "fucina/ag/checkpoint.h"
#include "fucina/core/error.h"
#include "fucina/nn/models.h"

namespace fucina::nn {

namespace {
// A block's parameters in their one fixed order (collect() and the checkpoint rebinding share it;
// web/nn.mjs uses the same order). Pointers to const for a const block.
template <class B>
auto blockSlots(B& b) {
  return std::array{&b.ln1.weight, &b.ln1.bias, &b.qkv.weight, &b.qkv.bias, &b.proj.weight, &b.proj.bias,
                    &b.ln2.weight, &b.ln2.bias, &b.fc.weight,  &b.fc.bias,  &b.out.weight,  &b.out.bias};
}
}  // namespace

void Gpt::Block::collect(std::vector<Tensor>& params) const {
  for (const Tensor* t : blockSlots(*this)) params.push_back(*t);
}

Gpt::Gpt(ExecContext& ctx, const GptConfig& c, uint64_t seed)
    : config_(c),
      token_(ctx, "vocab", "e", c.vocab, c.d_model, 0.02, subSeed(seed, 0)),
      position_(ctx, "t", "e", c.context, c.d_model, 0.02, subSeed(seed, 1)),
      final_(ctx, "e", c.d_model) {
  if (c.heads < 1 || c.d_model % c.heads != 0)
    fail(ErrorCode::InvalidArgument, "Gpt: d_model " + std::to_string(c.d_model) + " is not a multiple of heads " +
                                         std::to_string(c.heads));
  for (int64_t i = 0; i < c.layers; ++i) {
    const uint64_t s = subSeed(seed, 16 + static_cast<uint64_t>(i));
    blocks_.push_back(Block{LayerNorm(ctx, "e", c.d_model), LayerNorm(ctx, "e", c.d_model),
                            Linear(ctx, "e", "qkv", c.d_model, 3 * c.d_model, subSeed(s, 0)),
                            Linear(ctx, "ao", "e", c.d_model, c.d_model, subSeed(s, 1)),
                            Linear(ctx, "e", "mlp", c.d_model, c.mlp, subSeed(s, 2)),
                            Linear(ctx, "mlp", "e", c.mlp, c.d_model, subSeed(s, 3))});
  }
}

Tensor Gpt::block(ExecContext& ctx, const Block& b, const Tensor& x, KvCache* cache, size_t layer) const {
  const int64_t head_dim = config_.d_model / config_.heads;
  const Tensor qkv = b.qkv(ctx, b.ln1(ctx, x)).split(ctx, "qkv", {"part", "head", "hd"}, {3, config_.heads, head_dim});
  const Tensor a = causalSelfAttention(ctx, qkv, cache, layer);
  const Tensor h = x.add(ctx, b.proj(ctx, a.merge(ctx, {"head", "hd"}, "ao")));
  const Tensor g = b.fc(ctx, b.ln2(ctx, h)).geluErf(ctx);
  return checkpointTail([&] { return h.add(ctx, b.out(ctx, g)); });  // Note [Checkpoint tail]
}

Tensor Gpt::operator()(ExecContext& ctx, const Tensor& tokens) const { return forward(ctx, tokens, nullptr); }

Tensor Gpt::operator()(ExecContext& ctx, const Tensor& tokens, KvCache& cache) const {
  return forward(ctx, tokens, &cache);
}

Tensor Gpt::forward(ExecContext& ctx, const Tensor& tokens, KvCache* cache) const {
  if (!hasTag(tokens.tags(), "t"))
    fail(ErrorCode::ShapeMismatch, "Gpt: tokens need a time axis 't', got " + describe(tokens.tags(), tokens.shape()));
  const int64_t t = tokens.extent("t"), start = cache ? cache->length() : 0;
  if (t < 1 || start + t > config_.context)
    fail(ErrorCode::InvalidArgument, "Gpt: " + std::to_string(t) + " tokens" +
                                         (start ? " after the " + std::to_string(start) + " of the KV cache" : std::string()) +
                                         ", the context holds 1 to " + std::to_string(config_.context));
  Tensor x = token_(ctx, tokens).add(ctx, position_.table.narrow(ctx, "t", start, t));
  for (size_t i = 0; i < blocks_.size(); ++i) {
    const Block& b = blocks_[i];
    if (cache || !config_.checkpoint_blocks) {
      x = block(ctx, b, x, cache, i);
      continue;
    }
    // The block's trainable parameters are checkpoint inputs, so their gradients flow through the
    // recompute; frozen ones stay in the captured block, constants as through `extra`.
    std::vector<Tensor> inputs{x};
    for (const Tensor* t : blockSlots(b))
      if (t->requiresGrad()) inputs.push_back(*t);
    x = checkpointErased(ctx, [this, b](ExecContext& c, const std::vector<Tensor>& xs) {
      Block local = b;
      size_t next = 1;
      for (Tensor* slot : blockSlots(local))
        if (slot->requiresGrad()) *slot = xs[next++];
      return block(c, local, xs[0]);
    }, inputs);
  }
  return final_(ctx, x).dot(ctx, token_.table, "e");  // the head is tied to the token embedding
}

Tensor Gpt::loss(ExecContext& ctx, const Tensor& tokens) const {
  const int64_t t = tokens.extent("t");
  if (t < 2) fail(ErrorCode::InvalidArgument, "Gpt::loss needs at least 2 tokens per sequence");
  const Tensor logits = (*this)(ctx, tokens.narrow(ctx, "t", 0, t - 1));
  return logits.crossEntropy(ctx, tokens.narrow(ctx, "t", 1, t - 1), "vocab");
}

std::vector<int32_t> Gpt::generate(ExecContext& ctx, std::span<const int32_t> prompt, const GenerateOptions& o,
                                   const std::function<bool(int32_t)>& on_token) const {
  const Generator model{"Gpt::generate", config_.vocab, config_.context,
                        [this](ExecContext& c, const Tensor& tokens, KvCache* cache) { return forward(c, tokens, cache); }};
  return nn::generate(ctx, model, prompt, o, on_token);
}

std::vector<Tensor> Gpt::parameters() const {
  std::vector<Tensor> all, params;
  token_.collect(all);
  position_.collect(all);
  for (const Block& b : blocks_) b.collect(all);
  final_.collect(all);
  for (const Tensor& t : all)
    if (t.requiresGrad()) params.push_back(t);
  return params;
}

void Gpt::freezeProjections(ExecContext& ctx, DType dtype) {
  if (dtype != DType::f32 && dtype != DType::f16 && dtype != DType::bf16 && dtype != DType::q8_0)
    fail(ErrorCode::InvalidArgument, "Gpt::freezeProjections: dtype is f32, f16, bf16 or q8_0, not " +
                                         std::string(name(dtype)));
  for (Block& b : blocks_)
    for (Linear* l : {&b.qkv, &b.proj, &b.fc, &b.out}) {
      const Tensor w = l->weight.detach(ctx);
      l->weight = dtype == DType::q8_0 ? w.quantize(ctx, DType::q8_0, l->in) : w.to(ctx, dtype);
      if (dtype == DType::f32) l->weight = l->weight.contiguous(ctx);  // its own buffer, not the old leaf's
      l->bias = l->bias.detach(ctx);
    }
}

}  // namespace fucina::nn
