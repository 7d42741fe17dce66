// Grouped-query attention, softmax(scale·q·kᵀ [+ causal mask])·v, and its VJP. Operands are
// copied once into contiguous {batch..., heads, time, dim} layouts; work items are (batch, head)
// tiles run on ctx's pool, each calling the SIMD GEMM on the calling thread (gemmSerial) on its
// own per-head slices, since the tiles already spread the work over the threads.
#include <algorithm>
#include <cmath>
#include <string>

#include "fucina/kernels/gemm.h"
#include "fucina/kernels/softmax.h"
#include "fucina/kernels/vector_ops.h"
#include "fucina/ops/finish_op.h"

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
  // Keys query row i may see (end-aligned causal mask).
  int64_t visible(int64_t i) const { return causal ? std::min(Tk, i + Tk - Tq + 1) : Tk; }
  // The causal mask as a GEMM band (kernels/gemm.h): row i sees keys up to i + Tk − Tq.
  kernels::GemmBand band(kernels::Band kind) const {
    return causal ? kernels::GemmBand{kind, Tk - Tq} : kernels::GemmBand{};
  }
  Tags layout(const AttentionOptions& o, bool transposed) const {
    Tags t = batch;
    t.push_back(o.heads);
    t.push_back(transposed ? o.dim : o.time);
    t.push_back(transposed ? o.time : o.dim);
    return t;
  }
  Extents extents(int64_t heads, int64_t rows, int64_t cols) const {
    Extents e = batch_extents;
    e.insert(e.end(), {heads, rows, cols});
    return e;
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

// t (contiguous) read as n tiles of [rows, cols], copied to n tiles of [cols, rows].
// Tiles per pool task so that each task does roughly a million multiply-adds.
int64_t tileGrain(int64_t flops_per_tile) {
  return std::max<int64_t>(1, (int64_t{1} << 20) / std::max<int64_t>(1, flops_per_tile));
}

}  // namespace

Tensor Tensor::groupedAttention(ExecContext& ctx, const Tensor& q, const Tensor& k, const Tensor& v,
                                const AttentionOptions& options) {
  const Geometry g = geometry(q, k, v, options);
  const Tags rows_layout = g.layout(options, false);  // {batch..., heads, time, dim}
  const RawTensor Q = q.value().permuted(rows_layout).contiguous(ctx);
  const RawTensor Kt = k.value().permuted(g.layout(options, true)).contiguous(ctx);
  const RawTensor V = v.value().permuted(rows_layout).contiguous(ctx);
  // The probabilities are saved for the VJP (rather than the row log-sum-exp, which would need
  // the q·kᵀ GEMM again): B·H·Tq·Tk floats is modest at the sizes this library trains, and the
  // backward then costs three GEMMs per tile instead of four.
  RawTensor P = RawTensor::empty(ctx, {"n", "i", "j"}, {g.B * g.H, g.Tq, g.Tk});
  RawTensor out = RawTensor::empty(ctx, rows_layout, g.extents(g.H, g.Tq, g.Dv));
  const float *pq = Q.f32(), *pk = Kt.f32(), *pv = V.f32();
  float *pp = P.f32(), *po = out.f32();
  ctx.parallelFor(g.B * g.H, tileGrain(g.Tq * g.Tk * (g.D + g.Dv)), [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) {
      const int64_t kv = n / g.H * g.Hkv + n % g.H / g.group();
      float* s = pp + n * g.Tq * g.Tk;
      kernels::gemmSerial(false, false, g.Tq, g.Tk, g.D, pq + n * g.Tq * g.D, g.D, pk + kv * g.D * g.Tk, g.Tk, s,
                          g.Tk, false, g.band(kernels::Band::kOutputLower));
      for (int64_t i = 0; i < g.Tq; ++i) {
        float* row = s + i * g.Tk;
        const int64_t seen = g.visible(i);
        for (int64_t j = 0; j < seen; ++j) row[j] *= g.scale;
        kernels::softmaxRows(ctx, row, row, 1, seen, false);  // one row: runs inline
        std::fill(row + seen, row + g.Tk, 0.0f);
      }
      kernels::gemmSerial(false, false, g.Tq, g.Dv, g.Tk, s, g.Tk, pv + kv * g.Tk * g.Dv, g.Dv,
                          po + n * g.Tq * g.Dv, g.Dv, false, g.band(kernels::Band::kALower));
    }
  });
  const auto work = static_cast<size_t>(2 * g.B * g.H * g.Tq * g.Tk * (g.D + g.Dv));
  return ops::finishOp(ctx, "groupedAttention", out, {&q, &k, &v}, [&] {
    const bool gq = q.requiresGrad(), gk = k.requiresGrad();
    // Each gradient keeps only what it reads: dQ needs K, dK needs Q, both need V (through dP).
    return [g, options, rows_layout, P, Qs = gk ? Q : RawTensor(), Ks = gq ? k.value() : RawTensor(),
            Vs = gq || gk ? v.value() : RawTensor()](ExecContext& c, const RawTensor& gy,
                                                     NeedsGrad needs, Grads grads) {
      const RawTensor dO = gy.permuted(rows_layout).contiguous(c);
      const float *pdo = dO.f32(), *pp = P.f32();
      RawTensor dS;  // scale·dS, tile n as [Tq, Tk]
      if (needs[0] || needs[1]) {
        const RawTensor Vt = Vs.permuted(g.layout(options, true)).contiguous(c);
        const RawTensor K = needs[0] ? Ks.permuted(rows_layout).contiguous(c) : RawTensor();
        RawTensor dQ = needs[0] ? RawTensor::empty(c, rows_layout, g.extents(g.H, g.Tq, g.D)) : RawTensor();
        dS = RawTensor::empty(c, {"n", "i", "j"}, {g.B * g.H, g.Tq, g.Tk});
        float* pds = dS.f32();
        const bool simd = kernels::vec::enabled();
        c.parallelFor(g.B * g.H, tileGrain(g.Tq * g.Tk * (g.D + g.Dv)), [&](int64_t begin, int64_t end) {
          for (int64_t n = begin; n < end; ++n) {
            const int64_t kv = n / g.H * g.Hkv + n % g.H / g.group();
            float* ds = pds + n * g.Tq * g.Tk;
            const float* p = pp + n * g.Tq * g.Tk;
            kernels::gemmSerial(false, false, g.Tq, g.Tk, g.Dv, pdo + n * g.Tq * g.Dv, g.Dv,
                                Vt.f32() + kv * g.Dv * g.Tk, g.Tk, ds, g.Tk, false,
                                g.band(kernels::Band::kOutputLower));
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
              kernels::gemmSerial(false, false, g.Tq, g.D, g.Tk, ds, g.Tk, K.f32() + kv * g.Tk * g.D, g.D,
                                  dQ.f32() + n * g.Tq * g.D, g.D, false, g.band(kernels::Band::kALower));
          }
        });
        if (needs[0]) grads[0] = std::move(dQ);
      }
      if (!needs[1] && !needs[2]) return;
      // dK = Σ_group dSᵀ·Q and dV = Σ_group Pᵀ·dO, one task per kv head so that sums don't race;
      // dS and P tiles ([Tq, Tk]) are read transposed in place.
      RawTensor dK = needs[1] ? RawTensor::zeros(c, rows_layout, g.extents(g.Hkv, g.Tk, g.D)) : RawTensor();
      RawTensor dV = needs[2] ? RawTensor::zeros(c, rows_layout, g.extents(g.Hkv, g.Tk, g.Dv)) : RawTensor();
      c.parallelFor(g.B * g.Hkv, tileGrain(g.group() * g.Tq * g.Tk * (g.D + g.Dv)), [&](int64_t begin, int64_t end) {
        for (int64_t m = begin; m < end; ++m) {
          for (int64_t h = 0; h < g.group(); ++h) {
            const int64_t n = m / g.Hkv * g.H + m % g.Hkv * g.group() + h;
            if (needs[1])
              kernels::gemmSerial(true, false, g.Tk, g.D, g.Tq, dS.f32() + n * g.Tq * g.Tk, g.Tk,
                                  Qs.f32() + n * g.Tq * g.D, g.D, dK.f32() + m * g.Tk * g.D, g.D, true,
                                  g.band(kernels::Band::kAUpper));
            if (needs[2])
              kernels::gemmSerial(true, false, g.Tk, g.Dv, g.Tq, pp + n * g.Tq * g.Tk, g.Tk,
                                  pdo + n * g.Tq * g.Dv, g.Dv, dV.f32() + m * g.Tk * g.Dv, g.Dv, true,
                                  g.band(kernels::Band::kAUpper));
          }
        }
      });
      if (needs[1]) grads[1] = std::move(dK);  // layout order; the engine restores each operand's
      if (needs[2]) grads[2] = std::move(dV);
    };
  }, work);
}

}  // namespace fucina
