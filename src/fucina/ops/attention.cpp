// Grouped-query attention, softmax(scale·q·kᵀ [+ causal mask])·v, and its VJP: the shape rules
// and the dtype rules here, the values through Kernels::attention and attentionVjp.
#include <cmath>
#include <string>

#include "fucina/backend/kernels.h"
#include "fucina/ops/finish_op.h"
#include "fucina/ops/typed.h"

namespace fucina {

using internal::RawTensor;
using ops::Grads;
using ops::NeedsGrad;

namespace {

using Geometry = backend::AttentionGeometry;

Geometry geometry(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionOptions& o) {
  for (const Tensor* t : {&q, &k, &v}) ops::requireF32("groupedAttention", *t);
  if (o.heads == o.time || o.heads == o.dim || o.time == o.dim)
    fail(ErrorCode::InvalidArgument, "groupedAttention: heads, time and dim must be three different axes, got " +
                                         quoted(o.heads) + ", " + quoted(o.time) + ", " + quoted(o.dim));
  const RawTensor& a = q.value();
  const RawTensor& b = k.value();
  const RawTensor& c = v.value();
  const std::pair<const char*, const RawTensor*> operands[] = {{"q", &a}, {"k", &b}, {"v", &c}};
  for (const auto& [name, t] : operands)
    for (Tag tag : {o.heads, o.time, o.dim})
      if (!hasTag(t->tags(), tag))
        fail(ErrorCode::ShapeMismatch, std::string("groupedAttention: ") + name + " has no axis " +
                                           quoted(tag) + " (needs " + quoted(o.heads) + ", " +
                                           quoted(o.time) + " and " + quoted(o.dim) + "), got " +
                                           t->describe());
  Geometry g{.heads = o.heads, .time = o.time, .dim = o.dim, .batch = {}};
  Extents batch_extents;
  auto isOwn = [&](Tag t) { return t == o.heads || t == o.time || t == o.dim; };
  for (size_t i = 0; i < a.rank(); ++i)
    if (!isOwn(a.tags()[i])) {
      g.batch.push_back(a.tags()[i]);
      batch_extents.push_back(a.shape()[i]);
      g.B *= a.shape()[i];
    }
  for (const auto& [name, t] : operands) {
    size_t count = 0;
    for (size_t i = 0; i < t->rank(); ++i) {
      const Tag tag = t->tags()[i];
      if (isOwn(tag)) continue;
      ++count;
      const auto at = findTag(g.batch, tag);
      if (!at || batch_extents[*at] != t->shape()[i])
        fail(ErrorCode::ShapeMismatch, std::string("groupedAttention: batch axis ") + quoted(tag) +
                                           " of " + name + " must be in q with the same extent; q " +
                                           a.describe() + ", " + name + " " + t->describe());
    }
    if (count != g.batch.size())
      fail(ErrorCode::ShapeMismatch, std::string("groupedAttention: ") + name +
                                         " lacks a batch axis of q; q " + a.describe() + ", " +
                                         name + " " + t->describe());
  }
  g.H = a.extent(o.heads);
  g.Tq = a.extent(o.time);
  g.D = a.extent(o.dim);
  g.Hkv = b.extent(o.heads);
  g.Tk = b.extent(o.time);
  g.Dv = c.extent(o.dim);
  if (b.extent(o.dim) != g.D)
    fail(ErrorCode::ShapeMismatch, "groupedAttention: q and k must agree on " + quoted(o.dim) +
                                       "; q " + a.describe() + ", k " + b.describe());
  if (c.extent(o.heads) != g.Hkv || c.extent(o.time) != g.Tk)
    fail(ErrorCode::ShapeMismatch, "groupedAttention: k and v must agree on " + quoted(o.heads) +
                                       " and " + quoted(o.time) + "; k " + b.describe() + ", v " +
                                       c.describe());
  if (g.Hkv == 0 || g.H % g.Hkv != 0)
    fail(ErrorCode::ShapeMismatch, "groupedAttention: q's " + quoted(o.heads) + " extent (" +
                                       std::to_string(g.H) + ") must be a positive multiple of k's (" +
                                       std::to_string(g.Hkv) + ")");
  g.causal = o.causal;
  if (g.Tq > 0 && (o.causal ? g.Tk < g.Tq : g.Tk == 0))
    fail(ErrorCode::InvalidArgument,
         "groupedAttention: a query would see no key: " + quoted(o.time) + " is " +
             std::to_string(g.Tq) + " in q and " + std::to_string(g.Tk) + " in k" +
             (o.causal ? " (the end-aligned causal mask needs k's to be at least q's)" : ""));
  if (!o.scale && g.D == 0)
    fail(ErrorCode::InvalidArgument, "groupedAttention: the default scale 1/sqrt(D) needs " +
                                         quoted(o.dim) + " > 0");
  const double scale = o.scale ? *o.scale : 1.0 / std::sqrt(static_cast<double>(g.D));
  if (!std::isfinite(scale))
    fail(ErrorCode::InvalidArgument, "groupedAttention: scale must be finite");
  g.scale = static_cast<float>(scale);
  return g;
}

// The f32 attention of f32 operands (the caller converts the others).
Tensor attend(ExecContext& ctx, const Tensor& q, const Tensor& k, const Tensor& v,
              const AttentionOptions& options) {
  const Geometry g = geometry(q, k, v, options);
  backend::Kernels::Attention a = backend::kernelsOf(ctx).attention(ctx, g, q.value(), k.value(), v.value());
  const auto work = static_cast<size_t>(2 * g.B * g.H * g.Tq * g.Tk * (g.D + g.Dv));
  // The result's axes are {batch..., heads, time, dim} (tensor.h), a view of the buffer written
  // in q's order: a following merge of heads and dim (W3's output projection) needs no copy.
  return ops::finishOp(ctx, "groupedAttention", a.out.permuted(g.layout()), {&q, &k, &v}, [&] {
    // The operands are kept whole: each is read by another's gradient (dQ reads K, dK reads Q,
    // both read V) and gives its own gradient's axes.
    return [g, P = a.probs, q_like = q.value(), k_like = k.value(), v_like = v.value()](
               ExecContext& c, const RawTensor& gy, NeedsGrad needs, Grads grads) {
      backend::Kernels::AttentionGrads r =
          backend::kernelsOf(c).attentionVjp(c, g, q_like, k_like, v_like, P, gy, needs[0], needs[1], needs[2]);
      if (needs[0]) grads[0] = std::move(r.q);  // the engine restores each operand's axis order
      if (needs[1]) grads[1] = std::move(r.k);
      if (needs[2]) grads[2] = std::move(r.v);
    };
  }, work);
}

// A k or v cache in f16, bf16 or q8_0 (such caches are constants: the gradient goes to q
// only) as f32: a transient f32 copy of the cache, made on every call and dropped after it (its
// backward keeps it while the graph lives). f32 passes as it is.
Tensor cacheAsF32(ExecContext& ctx, const Tensor& t, const char* which) {
  switch (t.dtype()) {
    case DType::f32: return t;
    case DType::f16: case DType::bf16:
      if (t.requiresGrad() && isGradEnabled())
        fail(ErrorCode::UnsupportedGradient,
             std::string("groupedAttention: ") + which + " is a " + std::string(name(t.dtype())) + " tensor " +
                 t.value().describe() + " that requires gradients; a 16-bit (or q8_0) k/v is a constant "
                 "cache whose gradient is not computed: detach() it, or pass it as f32 (to(ctx, DType::f32)) "
                 "for gradients to k and v");
      [[fallthrough]];
    case DType::q8_0:  // q8_0 never requires gradients
      return t.to(ctx, DType::f32);
    default: ops::requireF32("groupedAttention", t);  // DTypeMismatch
  }
  return t;
}

}  // namespace

// q f32, or a 16-bit constant q by the dtype rule (ops/typed.h: computed in f32, the result cast
// back when every floating operand has q's dtype; q8_0 k/v do not count); k and v f32 or
// f16/bf16/q8_0 constants (cacheAsF32).
Tensor Tensor::groupedAttention(ExecContext& ctx, const Tensor& q, const Tensor& k, const Tensor& v,
                                const AttentionOptions& options) {
  const Tensor k32 = cacheAsF32(ctx, k, "k"), v32 = cacheAsF32(ctx, v, "v");
  if (q.dtype() == DType::f32) return attend(ctx, q, k32, v32, options);
  DType out = ops::typedResult("groupedAttention", {&q});  // 16-bit q: its errors and its dtype
  for (const Tensor* t : {&k, &v})
    if (t->dtype() != DType::q8_0 && t->dtype() != out) out = DType::f32;
  const Tensor r = attend(ctx, q.to(ctx, DType::f32), k32, v32, options);
  return out == DType::f32 ? r : r.to(ctx, out);
}

}  // namespace fucina
