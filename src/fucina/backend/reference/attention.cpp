// Attention per query: scores scale·q·kᵀ over the keys it sees, softmax, the weighted sum of v.
// Operands are first laid out densely as {batch..., heads, time, dim}, so tile n is one block.
#include "fucina/backend/reference/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace fucina::backend::reference {

using internal::RawTensor;

namespace {

RawTensor dense(ExecContext& ctx, const RawTensor& t, const AttentionGeometry& g) {
  return t.permuted(g.layout()).contiguous(ctx);
}

// {batch..., heads, time, dim} with the given extents of the last three.
RawTensor laidOut(ExecContext& ctx, const RawTensor& like, const AttentionGeometry& g, int64_t d,
                  const std::vector<double>& values) {
  Extents shape;
  for (Tag t : g.batch) shape.push_back(like.extent(t));
  shape.insert(shape.end(), {like.extent(g.heads), like.extent(g.time), d});
  RawTensor r = RawTensor::empty(ctx, g.layout(), shape);
  for (size_t i = 0; i < values.size(); ++i) r.f32()[i] = static_cast<float>(values[i]);
  return r;
}

}  // namespace

Kernels::Attention attention(ExecContext& ctx, const AttentionGeometry& g, const RawTensor& q, const RawTensor& k,
                             const RawTensor& v) {
  const RawTensor Q = dense(ctx, q, g), K = dense(ctx, k, g), V = dense(ctx, v, g);
  RawTensor P = RawTensor::zeros(ctx, {"n", "i", "j"}, {g.B * g.H, g.Tq, g.Tk});
  std::vector<double> out(static_cast<size_t>(g.B * g.H * g.Tq * g.Dv), 0.0);
  std::vector<double> s(static_cast<size_t>(g.Tk));
  for (int64_t n = 0; n < g.B * g.H; ++n) {
    const int64_t kv = g.kvTile(n);
    const float* kt = K.f32() + kv * g.Tk * g.D;
    const float* vt = V.f32() + kv * g.Tk * g.Dv;
    for (int64_t i = 0; i < g.Tq; ++i) {
      const float* qi = Q.f32() + (n * g.Tq + i) * g.D;
      float* pi = P.f32() + (n * g.Tq + i) * g.Tk;
      const int64_t seen = g.visible(i);
      double m = -std::numeric_limits<double>::infinity();
      for (int64_t j = 0; j < seen; ++j) {
        double dot = 0;
        for (int64_t d = 0; d < g.D; ++d) dot += static_cast<double>(qi[d]) * kt[j * g.D + d];
        s[static_cast<size_t>(j)] = static_cast<double>(g.scale) * dot;
        m = std::max(m, s[static_cast<size_t>(j)]);
      }
      double sum = 0;
      for (int64_t j = 0; j < seen; ++j) sum += std::exp(s[static_cast<size_t>(j)] - m);
      for (int64_t j = 0; j < seen; ++j) {
        const double p = std::exp(s[static_cast<size_t>(j)] - m) / sum;
        pi[j] = static_cast<float>(p);
        for (int64_t e = 0; e < g.Dv; ++e) out[static_cast<size_t>((n * g.Tq + i) * g.Dv + e)] += p * vt[j * g.Dv + e];
      }
    }
  }
  return {laidOut(ctx, q, g, g.Dv, out), std::move(P)};
}

Kernels::AttentionGrads attentionVjp(ExecContext& ctx, const AttentionGeometry& g, const RawTensor& q,
                                     const RawTensor& k, const RawTensor& v, const RawTensor& probs,
                                     const RawTensor& gy, bool need_q, bool need_k, bool need_v) {
  const RawTensor Q = dense(ctx, q, g), K = dense(ctx, k, g), V = dense(ctx, v, g), G = dense(ctx, gy, g);
  const RawTensor P = probs.contiguous(ctx);
  std::vector<double> gq(static_cast<size_t>(g.B * g.H * g.Tq * g.D), 0.0);
  std::vector<double> gk(static_cast<size_t>(g.B * g.Hkv * g.Tk * g.D), 0.0);
  std::vector<double> gv(static_cast<size_t>(g.B * g.Hkv * g.Tk * g.Dv), 0.0);
  std::vector<double> ds(static_cast<size_t>(g.Tk));
  for (int64_t n = 0; n < g.B * g.H; ++n) {
    const int64_t kv = g.kvTile(n);
    const float* kt = K.f32() + kv * g.Tk * g.D;
    const float* vt = V.f32() + kv * g.Tk * g.Dv;
    for (int64_t i = 0; i < g.Tq; ++i) {
      const float* qi = Q.f32() + (n * g.Tq + i) * g.D;
      const float* gi = G.f32() + (n * g.Tq + i) * g.Dv;
      const float* pi = P.f32() + (n * g.Tq + i) * g.Tk;
      const int64_t seen = g.visible(i);
      double rowsum = 0;  // Σ_j dP_ij·P_ij
      for (int64_t j = 0; j < seen; ++j) {
        double dp = 0;
        for (int64_t e = 0; e < g.Dv; ++e) dp += static_cast<double>(gi[e]) * vt[j * g.Dv + e];
        ds[static_cast<size_t>(j)] = dp;
        rowsum += dp * pi[j];
      }
      for (int64_t j = 0; j < seen; ++j) {
        const double dsj = static_cast<double>(g.scale) * pi[j] * (ds[static_cast<size_t>(j)] - rowsum);
        for (int64_t d = 0; d < g.D; ++d) {
          gq[static_cast<size_t>((n * g.Tq + i) * g.D + d)] += dsj * kt[j * g.D + d];
          gk[static_cast<size_t>((kv * g.Tk + j) * g.D + d)] += dsj * qi[d];
        }
        for (int64_t e = 0; e < g.Dv; ++e) gv[static_cast<size_t>((kv * g.Tk + j) * g.Dv + e)] += pi[j] * gi[e];
      }
    }
  }
  Kernels::AttentionGrads grads;
  if (need_q) grads.q = laidOut(ctx, q, g, g.D, gq);
  if (need_k) grads.k = laidOut(ctx, k, g, g.D, gk);
  if (need_v) grads.v = laidOut(ctx, v, g, g.Dv, gv);
  return grads;
}

}  // namespace fucina::backend::reference
