// Grouped-query attention, softmax(scale·q·kᵀ [+ causal mask])·v, and its VJP. Work items are
// (batch, head) tiles run on ctx's pool, each calling the SIMD GEMM on the calling thread
// (gemmSerial), since the tiles already spread the work over the threads. The GEMMs read each
// operand's [time, dim] tiles where they lie (Tiles below: e.g. q, k and v as slices of one fused
// projection) and write the output and gradients with dim innermost in the operands' own axis
// order, so no permuted copies are made on either side (they were 8% of a W3 step).
#include <algorithm>
#include <cmath>
#include <string>

#include "fucina/backend/cpu/gemm.h"
#include "fucina/backend/cpu/softmax.h"
#include "fucina/backend/cpu/vector_ops.h"
#include "fucina/ops/finish_op.h"
#include "fucina/ops/typed.h"

namespace fucina {

using internal::RawTensor;
using ops::Grads;
using ops::NeedsGrad;

namespace {

struct Geometry {
  Tags batch;  // q's other axes, in q's order
  Extents batch_extents;
  int64_t B = 1, H = 0, Hkv = 0, Tq = 0, Tk = 0, D = 0, Dv = 0;
  float scale = 1;
  bool causal = true;

  int64_t group() const { return H / Hkv; }
  // The kv tile (batch, kv head) that query tile n = (batch, head) reads.
  int64_t kvTile(int64_t n) const { return n / H * Hkv + n % H / group(); }
  // Keys query row i may see (end-aligned causal mask).
  int64_t visible(int64_t i) const { return causal ? std::min(Tk, i + Tk - Tq + 1) : Tk; }
  // The causal mask as a GEMM band (backend/cpu/gemm.h): row i sees keys up to i + Tk − Tq.
  kernels::GemmBand band(kernels::Band kind) const {
    return causal ? kernels::GemmBand{kind, Tk - Tq} : kernels::GemmBand{};
  }
  Tags layout(const AttentionOptions& o) const {  // {batch..., heads, time, dim}
    Tags t = batch;
    t.insert(t.end(), {o.heads, o.time, o.dim});
    return t;
  }
};

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
  Geometry g;
  auto isOwn = [&](Tag t) { return t == o.heads || t == o.time || t == o.dim; };
  for (size_t i = 0; i < a.rank(); ++i)
    if (!isOwn(a.tags()[i])) {
      g.batch.push_back(a.tags()[i]);
      g.batch_extents.push_back(a.shape()[i]);
      g.B *= a.shape()[i];
    }
  for (const auto& [name, t] : operands) {
    size_t count = 0;
    for (size_t i = 0; i < t->rank(); ++i) {
      const Tag tag = t->tags()[i];
      if (isOwn(tag)) continue;
      ++count;
      const auto at = findTag(g.batch, tag);
      if (!at || g.batch_extents[*at] != t->shape()[i])
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

// An operand seen as n = B·heads tiles [time, dim] for the GEMMs: tile n (batch axes row-major in
// q's batch order, then the head) at data + offset[n], element (t, d) at t·ts + d·ds. Either ds
// or ts is 1 (the other may be 0: a broadcast); otherwise the operand is first copied into
// {batch..., heads, time, dim}.
struct Tiles {
  RawTensor storage;  // keeps the data alive (the operand, or its copy)
  float* data = nullptr;
  int64_t ts = 0, ds = 1;
  std::vector<int64_t> offset;
  // As gemm's operand op(X)[time, dim] (A, or B with time as its depth), or op(X)[dim, time].
  bool trans() const { return ds != 1; }
  int64_t ld() const { return ds == 1 ? ts : ds; }
  bool transT() const { return ds == 1; }
  float* at(int64_t n) const { return data + offset[static_cast<size_t>(n)]; }
};

Tiles tilesOf(ExecContext& ctx, const RawTensor& t, const Geometry& g, const AttentionOptions& o) {
  RawTensor view = t;
  // An axis of extent 1 may take any stride.
  auto unit = [&](Tag tag) { return view.extent(tag) == 1 || view.strides()[view.axis(tag)] == 1; };
  if (!unit(o.dim) && !unit(o.time)) view = t.permuted(g.layout(o)).contiguous(ctx);
  auto stride = [&](Tag tag) { return view.strides()[view.axis(tag)]; };
  Tags tiles = g.batch;  // tile n: batch axes row-major, then the head
  tiles.push_back(o.heads);
  Tiles x{view, view.f32(), 0, 1, view.offsetsOver(tiles)};
  if (unit(o.dim)) {
    x.ts = view.extent(o.time) == 1 ? 0 : stride(o.time);
  } else {
    x.ts = 1;
    x.ds = stride(o.dim);
  }
  return x;
}

// A new contiguous result with `like`'s axes in its order but `dim` moved last (extent `d`),
// so that its tiles have unit dim stride; with `zero`, filled with zeros (sums accumulate in it).
RawTensor dimLast(ExecContext& ctx, const RawTensor& like, const AttentionOptions& o, int64_t d, bool zero) {
  Tags tags;
  Extents shape;
  for (size_t i = 0; i < like.rank(); ++i)
    if (like.tags()[i] != o.dim) tags.push_back(like.tags()[i]), shape.push_back(like.shape()[i]);
  tags.push_back(o.dim);
  shape.push_back(d);
  return zero ? RawTensor::zeros(ctx, tags, shape) : RawTensor::empty(ctx, tags, shape);
}

// Tiles per pool task so that each task does roughly a million multiply-adds.
int64_t tileGrain(int64_t flops_per_tile) {
  return std::max<int64_t>(1, (int64_t{1} << 20) / std::max<int64_t>(1, flops_per_tile));
}

// The f32 attention of f32 operands (the caller converts the others).
Tensor attend(ExecContext& ctx, const Tensor& q, const Tensor& k, const Tensor& v,
              const AttentionOptions& options) {
  const Geometry g = geometry(q, k, v, options);
  const Tiles Q = tilesOf(ctx, q.value(), g, options), K = tilesOf(ctx, k.value(), g, options),
              V = tilesOf(ctx, v.value(), g, options);
  // The probabilities are saved for the VJP (rather than the row log-sum-exp, which would need
  // the q·kᵀ GEMM again): B·H·Tq·Tk floats is modest at the sizes this library trains, and the
  // backward then costs three GEMMs per tile instead of four.
  RawTensor P = RawTensor::empty(ctx, {"n", "i", "j"}, {g.B * g.H, g.Tq, g.Tk});
  RawTensor out = dimLast(ctx, q.value(), options, g.Dv, false);
  const Tiles O = tilesOf(ctx, out, g, options);
  float* pp = P.f32();
  ctx.parallelFor(g.B * g.H, tileGrain(g.Tq * g.Tk * (g.D + g.Dv)), [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) {
      const int64_t kv = g.kvTile(n);
      float* s = pp + n * g.Tq * g.Tk;
      kernels::gemmSerial(Q.trans(), K.transT(), g.Tq, g.Tk, g.D, Q.at(n), Q.ld(), K.at(kv), K.ld(), s, g.Tk, false,
                          g.band(kernels::Band::kOutputLower));
      for (int64_t i = 0; i < g.Tq; ++i) {
        float* row = s + i * g.Tk;
        const int64_t seen = g.visible(i);
        for (int64_t j = 0; j < seen; ++j) row[j] *= g.scale;
        kernels::softmaxRows(ctx, row, row, 1, seen, false);  // one row: runs inline
        std::fill(row + seen, row + g.Tk, 0.0f);
      }
      kernels::gemmSerial(false, V.trans(), g.Tq, g.Dv, g.Tk, s, g.Tk, V.at(kv), V.ld(),
                          O.at(n), O.ts, false, g.band(kernels::Band::kALower));
    }
  });
  const auto work = static_cast<size_t>(2 * g.B * g.H * g.Tq * g.Tk * (g.D + g.Dv));
  // The result's axes are {batch..., heads, time, dim} (tensor.h), a view of the buffer written
  // in q's order: a following merge of heads and dim (W3's output projection) needs no copy.
  return ops::finishOp(ctx, "groupedAttention", out.permuted(g.layout(options)), {&q, &k, &v}, [&] {
    const bool gq = q.requiresGrad(), gk = k.requiresGrad();
    // Each gradient keeps only what it reads: dQ needs K, dK needs Q, both need V (through dP).
    // The tiles are views of the operands (or of their copies), so keeping them costs nothing.
    return [g, options, P, Q = gk ? Q : Tiles(), K = gq ? K : Tiles(), V = gq || gk ? V : Tiles(),
            q_like = q.value(), k_like = k.value(), v_like = v.value()](
               ExecContext& c, const RawTensor& gy, NeedsGrad needs, Grads grads) {
      const Tiles dO = tilesOf(c, gy, g, options);
      const float* pp = P.f32();
      RawTensor dS;  // scale·dS, tile n as [Tq, Tk]
      if (needs[0] || needs[1]) {
        RawTensor dQ = needs[0] ? dimLast(c, q_like, options, g.D, false) : RawTensor();
        const Tiles dQt = needs[0] ? tilesOf(c, dQ, g, options) : Tiles();
        dS = RawTensor::empty(c, {"n", "i", "j"}, {g.B * g.H, g.Tq, g.Tk});
        float* pds = dS.f32();
        const bool simd = kernels::vec::enabled();
        c.parallelFor(g.B * g.H, tileGrain(g.Tq * g.Tk * (g.D + g.Dv)), [&](int64_t begin, int64_t end) {
          for (int64_t n = begin; n < end; ++n) {
            const int64_t kv = g.kvTile(n);
            float* ds = pds + n * g.Tq * g.Tk;
            const float* p = pp + n * g.Tq * g.Tk;
            kernels::gemmSerial(dO.trans(), V.transT(), g.Tq, g.Tk, g.Dv, dO.at(n), dO.ld(), V.at(kv), V.ld(), ds,
                                g.Tk, false, g.band(kernels::Band::kOutputLower));
            for (int64_t i = 0; i < g.Tq; ++i) {  // dS = P∘(dP − rowsum(dP∘P)), masked entries 0
              float* dr = ds + i * g.Tk;
              const float* pr = p + i * g.Tk;
              const int64_t seen = g.visible(i);  // dP past it was not computed (band above)
              std::fill(dr + seen, dr + g.Tk, 0.0f);
              if (simd) {
                kernels::vec::softmaxGradRow(pr, dr, seen, g.scale);
                continue;
              }
              double dot = 0;
              for (int64_t j = 0; j < seen; ++j) dot += static_cast<double>(dr[j]) * pr[j];
              for (int64_t j = 0; j < seen; ++j) dr[j] = g.scale * pr[j] * (dr[j] - static_cast<float>(dot));
            }
            if (needs[0])
              kernels::gemmSerial(false, K.trans(), g.Tq, g.D, g.Tk, ds, g.Tk, K.at(kv), K.ld(),
                                  dQt.at(n), dQt.ts, false, g.band(kernels::Band::kALower));
          }
        });
        if (needs[0]) grads[0] = std::move(dQ);
      }
      if (!needs[1] && !needs[2]) return;
      // dK = Σ_group dSᵀ·Q and dV = Σ_group Pᵀ·dO, one task per kv head so that sums don't race;
      // dS and P tiles ([Tq, Tk]) are read transposed in place.
      RawTensor dK = needs[1] ? dimLast(c, k_like, options, g.D, true) : RawTensor();
      RawTensor dV = needs[2] ? dimLast(c, v_like, options, g.Dv, true) : RawTensor();
      const Tiles dKt = needs[1] ? tilesOf(c, dK, g, options) : Tiles();
      const Tiles dVt = needs[2] ? tilesOf(c, dV, g, options) : Tiles();
      c.parallelFor(g.B * g.Hkv, tileGrain(g.group() * g.Tq * g.Tk * (g.D + g.Dv)), [&](int64_t begin, int64_t end) {
        for (int64_t m = begin; m < end; ++m) {
          for (int64_t h = 0; h < g.group(); ++h) {
            const int64_t n = m / g.Hkv * g.H + m % g.Hkv * g.group() + h;
            if (needs[1])
              kernels::gemmSerial(true, Q.trans(), g.Tk, g.D, g.Tq, dS.f32() + n * g.Tq * g.Tk, g.Tk, Q.at(n),
                                  Q.ld(), dKt.at(m), dKt.ts, true,
                                  g.band(kernels::Band::kAUpper));
            if (needs[2])
              kernels::gemmSerial(true, dO.trans(), g.Tk, g.Dv, g.Tq, pp + n * g.Tq * g.Tk, g.Tk, dO.at(n),
                                  dO.ld(), dVt.at(m), dVt.ts, true,
                                  g.band(kernels::Band::kAUpper));
          }
        }
      });
      if (needs[1]) grads[1] = std::move(dK);  // dim innermost; the engine restores each operand's
      if (needs[2]) grads[2] = std::move(dV);  // axis order
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
