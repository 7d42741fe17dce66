// Work items are (batch, head) tiles run on ctx's pool, each calling the SIMD GEMM on the calling
// thread (gemmSerial), since the tiles already spread the work over the threads. The GEMMs read
// each operand's [time, dim] tiles where they lie (Tiles below: e.g. q, k and v as slices of one
// fused projection) and write the output and gradients with dim innermost in the operands' own
// axis order, so no permuted copies are made on either side (they were 8% of a W3 step).
#include "fucina/backend/cpu/attention.h"

#include <algorithm>
#include <cmath>

#include "fucina/backend/cpu/gemm.h"
#include "fucina/backend/cpu/softmax.h"
#include "fucina/backend/cpu/vector_ops.h"
#include "fucina/exec/context.h"

namespace fucina::kernels {

using internal::RawTensor;
using backend::AttentionGeometry;

namespace {

// The causal mask as a GEMM band (gemm.h): row i sees keys up to i + Tk − Tq.
GemmBand band(const AttentionGeometry& g, Band kind) { return g.causal ? GemmBand{kind, g.Tk - g.Tq} : GemmBand{}; }

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
  // An empty operand has no buffer: no offset is added to null (UBSan; its GEMMs read nothing).
  float* at(int64_t n) const { return data ? data + offset[static_cast<size_t>(n)] : nullptr; }
};

Tiles tilesOf(ExecContext& ctx, const RawTensor& t, const AttentionGeometry& g) {
  RawTensor view = t;
  // An axis of extent 1 may take any stride.
  auto unit = [&](Tag tag) { return view.extent(tag) == 1 || view.strides()[view.axis(tag)] == 1; };
  if (!unit(g.dim) && !unit(g.time)) view = t.permuted(g.layout()).contiguous(ctx);
  auto stride = [&](Tag tag) { return view.strides()[view.axis(tag)]; };
  Tags tiles = g.batch;  // tile n: batch axes row-major, then the head
  tiles.push_back(g.heads);
  Tiles x{view, view.f32(), 0, 1, view.offsetsOver(tiles)};
  if (unit(g.dim)) {
    x.ts = view.extent(g.time) == 1 ? 0 : stride(g.time);
  } else {
    x.ts = 1;
    x.ds = stride(g.dim);
  }
  return x;
}

// A new contiguous result with `like`'s axes in its order but `dim` moved last (extent `d`),
// so that its tiles have unit dim stride; with `zero`, filled with zeros (sums accumulate in it).
RawTensor dimLast(ExecContext& ctx, const RawTensor& like, const AttentionGeometry& g, int64_t d, bool zero) {
  Tags tags;
  Extents shape;
  for (size_t i = 0; i < like.rank(); ++i)
    if (like.tags()[i] != g.dim) tags.push_back(like.tags()[i]), shape.push_back(like.shape()[i]);
  tags.push_back(g.dim);
  shape.push_back(d);
  return zero ? RawTensor::zeros(ctx, tags, shape) : RawTensor::empty(ctx, tags, shape);
}

// Tiles per pool task so that each task does roughly a million multiply-adds.
int64_t tileGrain(int64_t flops_per_tile) {
  return std::max<int64_t>(1, (int64_t{1} << 20) / std::max<int64_t>(1, flops_per_tile));
}

}  // namespace

// The probabilities are saved for the VJP (rather than the row log-sum-exp, which would need the
// q·kᵀ GEMM again): B·H·Tq·Tk floats is modest at the sizes this library trains, and the
// backward then costs three GEMMs per tile instead of four.
backend::Kernels::Attention attention(ExecContext& ctx, const AttentionGeometry& g, const RawTensor& q,
                                      const RawTensor& k, const RawTensor& v) {
  const Tiles Q = tilesOf(ctx, q, g), K = tilesOf(ctx, k, g), V = tilesOf(ctx, v, g);
  RawTensor P = RawTensor::empty(ctx, {"n", "i", "j"}, {g.B * g.H, g.Tq, g.Tk});
  RawTensor out = dimLast(ctx, q, g, g.Dv, false);
  const Tiles O = tilesOf(ctx, out, g);
  float* pp = P.f32();
  ctx.parallelFor(g.B * g.H, tileGrain(g.Tq * g.Tk * (g.D + g.Dv)), [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) {
      const int64_t kv = g.kvTile(n);
      float* s = pp + n * g.Tq * g.Tk;
      gemmSerial(Q.trans(), K.transT(), g.Tq, g.Tk, g.D, Q.at(n), Q.ld(), K.at(kv), K.ld(), s, g.Tk, false,
                 band(g, Band::kOutputLower));
      for (int64_t i = 0; i < g.Tq; ++i) {
        float* row = s + i * g.Tk;
        const int64_t seen = g.visible(i);
        for (int64_t j = 0; j < seen; ++j) row[j] *= g.scale;
        softmaxRows(ctx, row, row, 1, seen, false);  // one row: runs inline
        std::fill(row + seen, row + g.Tk, 0.0f);
      }
      gemmSerial(false, V.trans(), g.Tq, g.Dv, g.Tk, s, g.Tk, V.at(kv), V.ld(), O.at(n), O.ts, false,
                 band(g, Band::kALower));
    }
  });
  return {std::move(out), std::move(P)};
}

backend::Kernels::AttentionGrads attentionVjp(ExecContext& c, const AttentionGeometry& g, const RawTensor& q,
                                              const RawTensor& k, const RawTensor& v, const RawTensor& P,
                                              const RawTensor& gy, bool need_q, bool need_k, bool need_v) {
  backend::Kernels::AttentionGrads grads;
  const Tiles dO = tilesOf(c, gy, g);
  const Tiles Q = need_k ? tilesOf(c, q, g) : Tiles(), K = need_q ? tilesOf(c, k, g) : Tiles(),
              V = need_q || need_k ? tilesOf(c, v, g) : Tiles();
  const float* pp = P.f32();
  RawTensor dS;  // scale·dS, tile n as [Tq, Tk]
  if (need_q || need_k) {
    RawTensor dQ = need_q ? dimLast(c, q, g, g.D, false) : RawTensor();
    const Tiles dQt = need_q ? tilesOf(c, dQ, g) : Tiles();
    dS = RawTensor::empty(c, {"n", "i", "j"}, {g.B * g.H, g.Tq, g.Tk});
    float* pds = dS.f32();
    const bool simd = vec::enabled();
    c.parallelFor(g.B * g.H, tileGrain(g.Tq * g.Tk * (g.D + g.Dv)), [&](int64_t begin, int64_t end) {
      for (int64_t n = begin; n < end; ++n) {
        const int64_t kv = g.kvTile(n);
        float* ds = pds + n * g.Tq * g.Tk;
        const float* p = pp + n * g.Tq * g.Tk;
        gemmSerial(dO.trans(), V.transT(), g.Tq, g.Tk, g.Dv, dO.at(n), dO.ld(), V.at(kv), V.ld(), ds, g.Tk, false,
                   band(g, Band::kOutputLower));
        for (int64_t i = 0; i < g.Tq; ++i) {  // dS = P∘(dP − rowsum(dP∘P)), masked entries 0
          float* dr = ds + i * g.Tk;
          const float* pr = p + i * g.Tk;
          const int64_t seen = g.visible(i);  // dP past it was not computed (band above)
          std::fill(dr + seen, dr + g.Tk, 0.0f);
          if (simd) {
            vec::softmaxGradRow(pr, dr, seen, g.scale);
            continue;
          }
          double dot = 0;
          for (int64_t j = 0; j < seen; ++j) dot += static_cast<double>(dr[j]) * pr[j];
          for (int64_t j = 0; j < seen; ++j) dr[j] = g.scale * pr[j] * (dr[j] - static_cast<float>(dot));
        }
        if (need_q)
          gemmSerial(false, K.trans(), g.Tq, g.D, g.Tk, ds, g.Tk, K.at(kv), K.ld(), dQt.at(n), dQt.ts, false,
                     band(g, Band::kALower));
      }
    });
    if (need_q) grads.q = std::move(dQ);
  }
  if (!need_k && !need_v) return grads;
  // dK = Σ_group dSᵀ·Q and dV = Σ_group Pᵀ·dO, one task per kv head so that sums don't race;
  // dS and P tiles ([Tq, Tk]) are read transposed in place.
  RawTensor dK = need_k ? dimLast(c, k, g, g.D, true) : RawTensor();
  RawTensor dV = need_v ? dimLast(c, v, g, g.Dv, true) : RawTensor();
  const Tiles dKt = need_k ? tilesOf(c, dK, g) : Tiles();
  const Tiles dVt = need_v ? tilesOf(c, dV, g) : Tiles();
  c.parallelFor(g.B * g.Hkv, tileGrain(g.group() * g.Tq * g.Tk * (g.D + g.Dv)), [&](int64_t begin, int64_t end) {
    for (int64_t m = begin; m < end; ++m) {
      for (int64_t h = 0; h < g.group(); ++h) {
        const int64_t n = m / g.Hkv * g.H + m % g.Hkv * g.group() + h;
        if (need_k)
          gemmSerial(true, Q.trans(), g.Tk, g.D, g.Tq, dS.f32() + n * g.Tq * g.Tk, g.Tk, Q.at(n), Q.ld(), dKt.at(m),
                     dKt.ts, true, band(g, Band::kAUpper));
        if (need_v)
          gemmSerial(true, dO.trans(), g.Tk, g.Dv, g.Tq, pp + n * g.Tq * g.Tk, g.Tk, dO.at(n), dO.ld(), dVt.at(m),
                     dVt.ts, true, band(g, Band::kAUpper));
      }
    }
  });
  grads.k = std::move(dK);  // dim innermost; the engine restores each operand's axis order
  grads.v = std::move(dV);
  return grads;
}

}  // namespace fucina::kernels
